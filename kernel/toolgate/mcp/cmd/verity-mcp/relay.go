package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
	"github.com/verity-go/verity/trace"
)

// The upstream's own requests (gatemcp's relay.go):
//
//	-roots relay|off          offer the upstream roots only while a client
//	                          offering them is connected (relay, the
//	                          default: the upstream is started again when
//	                          the first such client arrives), or never
//	-roots-wait D             how long an upstream's roots/list waits for
//	                          a client offering roots (default 10s)
//	-sampling-tools refuse|drop
//	                          a sampling request offering tools the caller
//	                          may not call is refused (the default) or
//	                          relayed without them
//	-elicit-url-origin O      an https origin a URL-mode elicitation may
//	                          open (repeatable); none: every URL-mode
//	                          elicitation is refused
//
// URL-mode elicitations and sampling requests with tools are recorded on
// the log (gatelog.KindRelay).

// relayConfig is -roots, -roots-wait, -sampling-tools and
// -elicit-url-origin.
type relayConfig struct {
	noRoots   bool
	rootsWait time.Duration
	sampling  gatemcp.SamplingTools
	origins   []string
}

func addRelayFlags(fs *flag.FlagSet, rc *relayConfig) {
	fs.Func("roots", "offer the upstream the client's roots: relay (when a client offering them is connected; the default) or off", func(s string) error {
		switch s {
		case "relay":
			rc.noRoots = false
		case "off":
			rc.noRoots = true
		default:
			return fmt.Errorf("%q: want relay or off", s)
		}
		return nil
	})
	fs.DurationVar(&rc.rootsWait, "roots-wait", gatemcp.DefaultRootsWait, "how long an upstream's roots/list waits for a client that offers roots before it fails")
	fs.Func("sampling-tools", "a sampling request from the upstream that offers tools the caller may not call: refuse (the default) or drop (relay it without them)", func(s string) error {
		switch s {
		case "refuse":
			rc.sampling = gatemcp.SamplingRefuse
		case "drop":
			rc.sampling = gatemcp.SamplingDrop
		default:
			return fmt.Errorf("%q: want refuse or drop", s)
		}
		return nil
	})
	fs.Func("elicit-url-origin", "an https origin (https://host[:port]) a URL-mode elicitation from the upstream may send the client's human to; repeatable; none: every URL-mode elicitation is refused", func(s string) error {
		if _, err := gatemcp.ParseOrigin(s); err != nil {
			return err
		}
		rc.origins = append(rc.origins, s)
		return nil
	})
}

// apply sets how proxy relays its upstream's requests: their tools
// checked by guard, entries on log, roots followed on srv's clients, and
// the upstream started again by sup when a client offering roots
// arrives.
func (rc relayConfig) apply(proxy *gatemcp.Proxy, guard *gatemcp.Guard, srv *sdk.Server, log *trace.Log, sup *supervisor) error {
	if rc.rootsWait <= 0 {
		return fmt.Errorf("-roots-wait %s: want a positive duration", rc.rootsWait)
	}
	err := proxy.SetRelay(gatemcp.RelayOptions{
		MayCall:       guard.MayCall,
		Caller:        guard.Caller,
		SamplingTools: rc.sampling,
		URLOrigins:    rc.origins,
		NoRoots:       rc.noRoots,
		RootsWait:     rc.rootsWait,
		Renew:         sup.renew,
		Log:           log,
	})
	if err != nil {
		return err
	}
	srv.AddReceivingMiddleware(proxy.DownstreamMiddleware())
	return nil
}

// renew has the upstream started again at once — its client made anew,
// so that it offers what the connected clients offer now — and returns
// once the new one runs (run starts it: the one closed here is
// s.renewOf, which run does not count as an exit).
func (s *supervisor) renew(ctx context.Context) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil
	}
	old := s.up
	s.renewOf = old
	s.mu.Unlock()
	_ = old.Close()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		s.mu.Lock()
		started, stopped := s.up != old, s.stopped
		s.mu.Unlock()
		if started || stopped {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the upstream did not start again: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// startAgain starts the upstream renew closed, at once; false when it
// does not start (run then treats it as an exit).
func (s *supervisor) startAgain(ctx context.Context) bool {
	next, err := s.start(ctx)
	if err != nil {
		s.log.Error("starting the upstream again to offer it roots", "err", err)
		return false
	}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		_ = next.Close()
		return true // run returns: stopped
	}
	s.up = next
	s.mu.Unlock()
	s.log.Info("upstream started again, offering roots")
	return true
}

// renewed reports whether up ended because renew closed it.
func (s *supervisor) renewed(up *sdk.ClientSession) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.renewOf != nil && s.renewOf == up {
		s.renewOf = nil
		return true
	}
	return false
}
