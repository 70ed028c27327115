package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/trace"
)

// kernelRecorded is what replay needs to know about one kernel session
// before kernel.Replay re-executes it: its kernel.start entry and, per
// state it reached, the monitoring invariants the recording kernel warned
// about there.
type kernelRecorded struct {
	start  kernel.StartEntry
	warned map[kernel.Fingerprint]map[string]string // after-state → invariant name → recorded reason
}

// noteKernel records what e tells about its kernel session.
func noteKernel(sessions map[string]*kernelRecorded, order *[]string, e trace.Entry) error {
	x, err := kernel.DecodeEntry(e)
	if err != nil {
		return fmt.Errorf("entry %d (%s): %w", e.Seq, e.Kind, err)
	}
	switch v := x.(type) {
	case kernel.StartEntry:
		if sessions[v.Session] == nil {
			sessions[v.Session] = &kernelRecorded{start: v, warned: map[kernel.Fingerprint]map[string]string{}}
			*order = append(*order, v.Session)
		}
	case kernel.ExecuteEntry:
		s := sessions[v.Session]
		if s == nil || len(v.Warnings) == 0 {
			return nil
		}
		if s.warned[v.After] == nil {
			s.warned[v.After] = map[string]string{}
		}
		for _, w := range v.Warnings {
			s.warned[v.After][w.Name] = w.Reason
		}
	}
	return nil
}

// replayKernel replays session s of the log with kernel.Replay. The
// predicates of invariants and preconditions are the recording program's
// code, which the log does not hold: the kernel used here is configured
// from the kernel.start entry (budget, minimum cost, emergency ids,
// invariant and precondition names) and its predicates answer as the log
// says they did (every executed action passed its blocking checks; a
// monitoring invariant fails exactly in the states the log records a
// warning for). Replay then re-executes every effect and checks every
// fingerprint, budget total, step counter, inverse and refund.
func replayKernel(ctx context.Context, store trace.Store, s *kernelRecorded) (*kernel.Session, error) {
	k, err := kernel.New(kernelConfig(s))
	if err != nil {
		return nil, fmt.Errorf("kernel session %s: %w", s.start.Session, err)
	}
	log, err := trace.NewLog(store)
	if err != nil {
		return nil, err
	}
	return kernel.Replay(ctx, log, k, s.start.Session)
}

func kernelConfig(s *kernelRecorded) kernel.Config {
	st := s.start
	cfg := kernel.Config{Budget: st.Budget, MinActionCost: st.MinCost, EmergencyActions: st.Emergency}
	for _, inv := range st.Invariants {
		if inv.Enforcement == kernel.EnforcementMonitoring {
			cfg.Invariants = append(cfg.Invariants, monitoringAsRecorded(s, inv.Name))
			continue
		}
		inv.Check = func(kernel.State) bool { return true }
		cfg.Invariants = append(cfg.Invariants, inv)
	}
	for _, name := range st.Preconditions {
		cfg.Preconditions = append(cfg.Preconditions, kernel.Precondition{Name: name,
			Check: func(kernel.State, kernel.Action) bool { return true }})
	}
	return cfg
}

// monitoringAsRecorded is a monitoring invariant that fails in exactly the
// states the log records a warning for, with the recorded suggestion (the
// kernel writes it into the warning's reason).
func monitoringAsRecorded(s *kernelRecorded, name string) kernel.Invariant {
	inv := kernel.Invariant{Name: name, Enforcement: kernel.EnforcementMonitoring, Check: func(st kernel.State) bool {
		_, warned := s.warned[st.Fingerprint()][name]
		return !warned
	}}
	prefix := "kernel: invariant " + strconv.Quote(name) + " violated; suggestion: "
	for _, byName := range s.warned {
		if r, ok := byName[name]; ok && strings.HasPrefix(r, prefix) {
			inv.Suggestion = strings.TrimPrefix(r, prefix)
			break
		}
	}
	return inv
}
