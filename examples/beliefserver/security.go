package main

import (
	"crypto/tls"
	"flag"
	"net"
	"strings"

	"github.com/verity-go/verity/belief/server"
	"github.com/verity-go/verity/internal/osfile"
)

// Authentication and TLS. With -token-file FILE every request needs
// "Authorization: Bearer TOKEN" where SHA-256(TOKEN) is a line of FILE
// (server.ParseTokenFile), and a session belongs to the principal that
// declared it (any other gets 404). Without it requests are anonymous and
// the server binds only loopback addresses: a -addr on another (or on
// every) interface is a usage error unless -insecure-no-auth says so.
// -tls-cert and -tls-key (both or neither) serve HTTPS.

const securityHelp = `
-token-file FILE: every request needs "Authorization: Bearer TOKEN" with
SHA-256(TOKEN) a line "sha256:HEX SUBJECT [GROUP,...]" of FILE (# comments);
make one with: echo -n "$TOKEN" | sha256sum | awk '{print "sha256:" $1 " alice"}'.
A session belongs to the principal that declared it; any other gets 404.
Sessions declared without a token are served only without -token-file.
Without -token-file the server binds only loopback addresses (127.0.0.1,
::1, localhost); -insecure-no-auth allows another address anyway.
-tls-cert and -tls-key (PEM files, both or neither) serve HTTPS.
A malformed -token-file, -tls-cert or -tls-key is a usage error.
`

// securityFlags are -token-file, -insecure-no-auth, -tls-cert and -tls-key.
type securityFlags struct {
	tokenFile  string
	insecure   bool
	cert, key  string
	auth       server.Authenticator // after setup: nil without -token-file
	tlsConfig  *tls.Config          // after setup: nil without -tls-cert
	authorized string               // after setup: "token-file" or "none", for the log
}

func (s *securityFlags) add(fl *flag.FlagSet) {
	fl.StringVar(&s.tokenFile, "token-file", "", "file of SHA-256 digests of bearer tokens, one \"sha256:HEX SUBJECT [GROUP,...]\" a line (empty: no authentication, loopback only)")
	fl.BoolVar(&s.insecure, "insecure-no-auth", false, "allow a non-loopback -addr without -token-file: anyone who reaches the port can use the server")
	fl.StringVar(&s.cert, "tls-cert", "", "PEM certificate (chain) to serve HTTPS, with -tls-key")
	fl.StringVar(&s.key, "tls-key", "", "PEM private key of -tls-cert")
}

// setup checks the flags against the listen address and loads the token
// file and the key pair. Its errors are usage errors.
func (s *securityFlags) setup(addr string) error {
	if (s.cert == "") != (s.key == "") {
		return usagef("-tls-cert and -tls-key go together")
	}
	if s.cert != "" {
		pair, err := loadKeyPair(s.cert, s.key)
		if err != nil {
			return usagef("-tls-cert/-tls-key: %v", err)
		}
		s.tlsConfig = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	}
	s.authorized = "none"
	if s.tokenFile != "" {
		if s.insecure {
			return usagef("-insecure-no-auth contradicts -token-file")
		}
		tf, err := server.LoadTokenFile(s.tokenFile)
		if err != nil {
			return usagef("-token-file: %v", err)
		}
		s.auth, s.authorized = tf, "token-file"
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("-addr %q: %v", addr, err)
	}
	if !loopback(host) && !s.insecure {
		return usagef("-addr %q is not a loopback address: without -token-file anyone who reaches it could use every session; give -token-file, or -insecure-no-auth to accept that", addr)
	}
	return nil
}

// maxPEMBytes bounds a -tls-cert or -tls-key file: a certificate chain
// is a few kilobytes.
const maxPEMBytes = 1 << 20

// loadKeyPair is tls.LoadX509KeyPair with each file read by
// osfile.ReadFile: only a regular file (a FIFO would block the start for
// ever, deaf to SIGTERM) of at most maxPEMBytes (/dev/zero never ends).
func loadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	cert, err := osfile.ReadFile(certFile, maxPEMBytes)
	if err != nil {
		return tls.Certificate{}, err
	}
	key, err := osfile.ReadFile(keyFile, maxPEMBytes)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(cert, key)
}

// loopback reports whether a listen host binds only loopback interfaces:
// a loopback IP or "localhost". An empty host (every interface) and any
// other name are not.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	return ip != nil && ip.IsLoopback()
}

// options are the server.Handler options of the flags.
func (s *securityFlags) options() []server.Option {
	if s.auth == nil {
		return nil
	}
	return []server.Option{server.WithAuthenticator(s.auth)}
}
