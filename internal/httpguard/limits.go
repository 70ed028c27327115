package httpguard

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"time"
)

// The defaults Defaults returns; the package documentation says why.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	DefaultMaxHeaderBytes    = 64 << 10
	DefaultMaxConns          = 256
	DefaultMaxConnsPerClient = 64
	DefaultConnWait          = time.Second
)

// Limits are the bounds of one server. Every field must be positive.
type Limits struct {
	ReadHeaderTimeout time.Duration // request line and headers
	ReadTimeout       time.Duration // the whole request, body included
	WriteTimeout      time.Duration // the response (each write, under Stream)
	IdleTimeout       time.Duration // a keep-alive connection between requests
	MaxHeaderBytes    int           // request line and headers, in bytes
	MaxConns          int           // connections open at once
	MaxConnsPerClient int           // connections open at once from one client address
	ConnWait          time.Duration // a new connection's wait for room when full
}

// Defaults returns the default Limits.
func Defaults() Limits {
	return Limits{
		ReadHeaderTimeout: DefaultReadHeaderTimeout,
		ReadTimeout:       DefaultReadTimeout,
		WriteTimeout:      DefaultWriteTimeout,
		IdleTimeout:       DefaultIdleTimeout,
		MaxHeaderBytes:    DefaultMaxHeaderBytes,
		MaxConns:          DefaultMaxConns,
		MaxConnsPerClient: DefaultMaxConnsPerClient,
		ConnWait:          DefaultConnWait,
	}
}

// AddFlags registers one flag per field on fs, defaulting to l's values:
// -read-header-timeout, -read-timeout, -write-timeout, -idle-timeout,
// -max-header-bytes, -max-conns, -max-conns-per-client and -conn-wait.
func (l *Limits) AddFlags(fs *flag.FlagSet) {
	fs.DurationVar(&l.ReadHeaderTimeout, "read-header-timeout", l.ReadHeaderTimeout, "HTTP: time to read a request's headers")
	fs.DurationVar(&l.ReadTimeout, "read-timeout", l.ReadTimeout, "HTTP: time to read a whole request, body included")
	fs.DurationVar(&l.WriteTimeout, "write-timeout", l.WriteTimeout, "HTTP: time to write a response (each write, on a stream)")
	fs.DurationVar(&l.IdleTimeout, "idle-timeout", l.IdleTimeout, "HTTP: time a keep-alive connection may wait for its next request")
	fs.IntVar(&l.MaxHeaderBytes, "max-header-bytes", l.MaxHeaderBytes, "HTTP: largest request line and headers, in bytes")
	fs.IntVar(&l.MaxConns, "max-conns", l.MaxConns, "HTTP: connections open at once (idle ones are closed to make room)")
	fs.IntVar(&l.MaxConnsPerClient, "max-conns-per-client", l.MaxConnsPerClient, "HTTP: connections open at once from one client address (more are closed at once, unanswered)")
	fs.DurationVar(&l.ConnWait, "conn-wait", l.ConnWait, "HTTP: time a new connection waits for room before it is closed")
}

// Validate returns an error naming every field that is not positive:
// no limit may be switched off.
func (l Limits) Validate() error {
	var errs []error
	check := func(name string, ok bool, v any) {
		if !ok {
			errs = append(errs, fmt.Errorf("-%s must be positive, not %v", name, v))
		}
	}
	check("read-header-timeout", l.ReadHeaderTimeout > 0, l.ReadHeaderTimeout)
	check("read-timeout", l.ReadTimeout > 0, l.ReadTimeout)
	check("write-timeout", l.WriteTimeout > 0, l.WriteTimeout)
	check("idle-timeout", l.IdleTimeout > 0, l.IdleTimeout)
	check("max-header-bytes", l.MaxHeaderBytes > 0, l.MaxHeaderBytes)
	check("max-conns", l.MaxConns > 0, l.MaxConns)
	check("max-conns-per-client", l.MaxConnsPerClient > 0, l.MaxConnsPerClient)
	check("conn-wait", l.ConnWait > 0, l.ConnWait)
	return errors.Join(errs...)
}

// New returns a server for h with l's timeouts and header limit, and ln
// wrapped in a Listener capped at l.MaxConns, and at l.MaxConnsPerClient
// for one client address, whose connection states the server reports
// (its ConnState hook). Serve the one on the other:
// hs.Serve(gl). A field of l that is not positive takes its default.
func New(ln net.Listener, h http.Handler, l Limits) (*http.Server, *Listener) {
	l = l.withDefaults()
	gl := NewListener(ln, l.MaxConns, l.ConnWait).PerClient(l.MaxConnsPerClient)
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
		ConnState:         gl.ConnState,
	}
	return hs, gl
}

// withDefaults replaces every field that is not positive by its default.
func (l Limits) withDefaults() Limits {
	d := Defaults()
	pick := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	pick(&l.ReadHeaderTimeout, d.ReadHeaderTimeout)
	pick(&l.ReadTimeout, d.ReadTimeout)
	pick(&l.WriteTimeout, d.WriteTimeout)
	pick(&l.IdleTimeout, d.IdleTimeout)
	pick(&l.ConnWait, d.ConnWait)
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = d.MaxHeaderBytes
	}
	if l.MaxConns <= 0 {
		l.MaxConns = d.MaxConns
	}
	if l.MaxConnsPerClient <= 0 {
		l.MaxConnsPerClient = d.MaxConnsPerClient
	}
	return l
}
