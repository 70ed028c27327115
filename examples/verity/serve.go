package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/verity-go/verity/internal/httpguard"
)

// addLimitFlags registers the page server's limits on fs (their
// defaults: httpguard.Defaults). The page takes no request bodies; a
// client sending one anyway is bounded by --read-timeout.
func addLimitFlags(fs *flag.FlagSet) *httpguard.Limits {
	l := httpguard.Defaults()
	l.AddFlags(fs)
	return &l
}

// startServer listens on addr and serves the handler made for the
// address it listens on, bounded by l (internal/httpguard): timeouts, a
// header limit and a cap on open connections, so that no idle or slow
// client keeps the page from another. l has been validated (Limits.Validate).
// Close the server to stop.
func startServer(addr string, l httpguard.Limits, handler func(addr string) http.Handler) (*http.Server, net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	hs, gl := httpguard.New(ln, handler(ln.Addr().String()), l)
	go func() { _ = hs.Serve(gl) }()
	return hs, ln.Addr(), nil
}

// checkViewAddr refuses an --addr that is not a loopback address unless
// --public says so: the page has no authentication and shows the whole
// log (arguments, callers, approvers) to anyone who reaches it. With
// --public it says on stderr what it is about to do.
func checkViewAddr(e *env, addr string, public bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("view: --addr %q: %v", addr, err)
	}
	if loopbackHost(host) {
		return nil
	}
	where := "address " + host
	if host == "" || net.ParseIP(strings.Trim(host, "[]")).IsUnspecified() {
		where = "every interface"
	}
	if !public {
		return usagef("view: --addr %s is not a loopback address: the page has no authentication and would show the whole log to anyone who reaches %s; serve it on 127.0.0.1 (the default) and reach it through a tunnel, or give --public to serve it there anyway", addr, where)
	}
	fmt.Fprintf(e.stderr, "verity view: --public: serving the whole log, without authentication, to anyone who reaches %s\n", where)
	return nil
}

// loopbackHost reports whether a listen host binds only loopback
// interfaces: "localhost" or a loopback IP. An empty host (every
// interface) and any other name are not.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
