package gatelog

import (
	"fmt"
	"strings"
)

// A gateway (verity-mcp -config) records which upstream answered which
// call: every start of a stdio server (KindSpawn), every connection to a
// remote one (KindConnect), and every reload of its gateway file and
// policy (KindReload). A call's entries name its tool as server__tool,
// so the server of a call is the last spawn or connect entry of that
// server before it.
const (
	KindSpawn   = "toolgate.spawn"
	KindConnect = "toolgate.connect"
	KindReload  = "toolgate.reload"
)

// Spawn is the payload of a KindSpawn entry: Server (its name in the
// gateway file) was started as Command (the program, as the file names
// it) with arguments whose SHA-256 is ArgumentsSHA256 (of the JSON array
// of the arguments after the program: arguments may hold what the log
// should not), as process PID, and negotiated MCP protocol Protocol.
type Spawn struct {
	Server          string `json:"server"`
	Command         string `json:"command"`
	ArgumentsSHA256 string `json:"arguments_sha256"`
	PID             int    `json:"pid"`
	Protocol        string `json:"protocol"`
}

// Connect is the payload of a KindConnect entry: Server was reached at
// URL and negotiated MCP protocol Protocol; over TLS, the peer's leaf
// certificate had subject TLSSubject and SHA-256 TLSSHA256 (lower-case
// hex, of its DER), both empty over plain http (to a loopback address).
type Connect struct {
	Server     string `json:"server"`
	URL        string `json:"url"`
	Protocol   string `json:"protocol"`
	TLSSubject string `json:"tls_subject,omitempty"`
	TLSSHA256  string `json:"tls_sha256,omitempty"`
}

// Reload is the payload of a KindReload entry: the gateway file of
// SHA-256 GatewaySHA256 and its policy of SHA-256 PolicySHA256 (lower-case
// hex of the files' bytes) took effect for the calls after it; Added,
// Removed and Restarted name the servers it started, stopped and
// started again (their entry changed).
type Reload struct {
	GatewaySHA256 string   `json:"gateway_sha256"`
	PolicySHA256  string   `json:"policy_sha256"`
	Added         []string `json:"added,omitempty"`
	Removed       []string `json:"removed,omitempty"`
	Restarted     []string `json:"restarted,omitempty"`
}

// decodeGateway reads a KindSpawn, KindConnect or KindReload entry:
// strictly, with a server named, hashes of 64 lower-case hex digits and
// a positive pid.
func decodeGateway(kind string, payload []byte) (any, error) {
	switch kind {
	case KindSpawn:
		var s Spawn
		if err := decodeStrict(payload, &s); err != nil {
			return nil, err
		}
		switch {
		case s.Server == "" || s.Command == "":
			return nil, fmt.Errorf("%w: a spawn names its server and command", ErrDecode)
		case !hexDigest(s.ArgumentsSHA256):
			return nil, fmt.Errorf("%w: /arguments_sha256: %.80q is not 64 lower-case hex digits", ErrDecode, s.ArgumentsSHA256)
		case s.PID <= 0:
			return nil, fmt.Errorf("%w: /pid: %d is not a process id", ErrDecode, s.PID)
		}
		return s, nil
	case KindConnect:
		var c Connect
		if err := decodeStrict(payload, &c); err != nil {
			return nil, err
		}
		switch {
		case c.Server == "" || c.URL == "":
			return nil, fmt.Errorf("%w: a connect names its server and URL", ErrDecode)
		case c.TLSSHA256 != "" && !hexDigest(c.TLSSHA256):
			return nil, fmt.Errorf("%w: /tls_sha256: %.80q is not 64 lower-case hex digits", ErrDecode, c.TLSSHA256)
		}
		return c, nil
	case KindReload:
		var r Reload
		if err := decodeStrict(payload, &r); err != nil {
			return nil, err
		}
		if !hexDigest(r.GatewaySHA256) || !hexDigest(r.PolicySHA256) {
			return nil, fmt.Errorf("%w: a reload's gateway_sha256 and policy_sha256 are 64 lower-case hex digits", ErrDecode)
		}
		return r, nil
	}
	return nil, fmt.Errorf("%w: kind %q is not a gateway entry", ErrDecode, kind)
}

// hexDigest reports whether h is 64 lower-case hex digits.
func hexDigest(h string) bool {
	return len(h) == 64 && strings.Trim(h, "0123456789abcdef") == ""
}
