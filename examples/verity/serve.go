package main

import (
	"flag"
	"net"
	"net/http"

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
