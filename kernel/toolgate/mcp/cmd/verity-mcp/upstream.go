package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
)

// The restart backoff: the first restart waits minBackoff, each failed
// or short-lived one twice as long as the last, at most maxBackoff; an
// upstream that ran stableRun or longer starts the count again.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 10 * time.Second
	stableRun  = time.Minute
)

// ErrUpstreamExited: the upstream exited and -upstream-exit was given.
var ErrUpstreamExited = errors.New("the upstream exited")

// parseListing reads -list.
func parseListing(s string) (gatemcp.Listing, error) {
	switch s {
	case "auto", "":
		return gatemcp.ListingAuto, nil
	case "all":
		return gatemcp.ListingAll, nil
	case "callable":
		return gatemcp.ListingCallable, nil
	}
	return 0, fmt.Errorf("-list %q: want auto, all or callable", s)
}

// supervisor watches the upstream session and, when it ends, restarts
// the upstream with backoff, or with -upstream-exit stops the proxy.
type supervisor struct {
	start    func(context.Context) (*sdk.ClientSession, error)
	exit     bool
	log      *slog.Logger
	stopProx func()

	mu      sync.Mutex
	up      *sdk.ClientSession
	stopped bool
	err     error // ErrUpstreamExited once it exited under -upstream-exit
	done    chan struct{}
	renewOf *sdk.ClientSession // closed by renew (relay.go) to be started again, not an exit
}

func newSupervisor(up *sdk.ClientSession, start func(context.Context) (*sdk.ClientSession, error), exit bool, log *slog.Logger, stopProxy func()) *supervisor {
	return &supervisor{start: start, exit: exit, log: log, stopProx: stopProxy, up: up, done: make(chan struct{})}
}

// run watches until ctx ends or stop is called.
func (s *supervisor) run(ctx context.Context) {
	defer close(s.done)
	backoff := minBackoff
	for {
		s.mu.Lock()
		up := s.up
		s.mu.Unlock()
		began := time.Now()
		werr := up.Wait()
		if s.isStopped() || ctx.Err() != nil {
			return
		}
		if s.renewed(up) && s.startAgain(ctx) { // relay.go
			continue
		}
		if s.exit {
			s.log.Error("upstream exited; stopping (-upstream-exit)", "err", werr)
			s.mu.Lock()
			s.err = ErrUpstreamExited
			s.mu.Unlock()
			s.stopProx()
			return
		}
		if time.Since(began) >= stableRun {
			backoff = minBackoff
		}
		for {
			s.log.Error("upstream exited; restarting it", "err", werr, "in", backoff)
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			backoff = min(2*backoff, maxBackoff)
			next, err := s.start(ctx)
			if err != nil {
				werr = err
				continue
			}
			s.mu.Lock()
			if s.stopped {
				s.mu.Unlock()
				_ = next.Close()
				return
			}
			s.up = next
			s.mu.Unlock()
			s.log.Info("upstream restarted")
			break
		}
	}
}

func (s *supervisor) isStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// stop ends the watch, closes the upstream, and returns
// ErrUpstreamExited when it exited under -upstream-exit.
func (s *supervisor) stop() error {
	s.mu.Lock()
	s.stopped = true
	up := s.up
	s.mu.Unlock()
	if cerr := up.Close(); cerr != nil {
		s.log.Warn("upstream exit", "err", cerr)
	}
	s.stopProx()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
