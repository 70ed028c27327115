package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

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

// noteKernel records what e tells about its kernel session. The
// entries that carry warnings are executions and reservations.
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
		sessions[v.Session].note(v.Record)
	case kernel.ReserveEntry:
		sessions[v.Session].note(v.Record)
	}
	return nil
}

// note records the warnings of rec (s nil: a session without a
// kernel.start, which kernel.Replay reports).
func (s *kernelRecorded) note(rec kernel.Record) {
	if s == nil || len(rec.Warnings) == 0 {
		return
	}
	if s.warned[rec.After] == nil {
		s.warned[rec.After] = map[string]string{}
	}
	for _, w := range rec.Warnings {
		s.warned[rec.After][w.Name] = w.Reason
	}
}

// replayKernel replays session s of the log with kernel.Replay. The
// predicates of invariants and preconditions are the recording program's
// code, which the log does not hold: the kernel used here is configured
// from the kernel.start entry (budget, minimum cost, emergency ids,
// invariant and precondition names) and its predicates answer as the log
// says they did (every executed action passed its blocking checks; a
// monitoring invariant fails exactly in the states the log records a
// warning for, with the recorded reason). Replay then re-executes every
// effect and checks every fingerprint, budget total, step counter,
// warning, inverse and refund.
func replayKernel(ctx context.Context, store trace.Store, s *kernelRecorded) (*kernel.Session, error) {
	release := make(chan struct{}) // ends the predicates that wait out a recorded time limit
	defer close(release)
	k, err := kernel.New(kernelConfig(s, release))
	if err != nil {
		return nil, fmt.Errorf("kernel session %s: %w", s.start.Session, err)
	}
	log, err := trace.NewLog(store)
	if err != nil {
		return nil, err
	}
	return kernel.Replay(ctx, log, k, s.start.Session)
}

func kernelConfig(s *kernelRecorded, release <-chan struct{}) kernel.Config {
	st := s.start
	cfg := kernel.Config{Budget: st.Budget, MinActionCost: st.MinCost, EmergencyActions: st.Emergency}
	for _, inv := range st.Invariants {
		if inv.Enforcement == kernel.EnforcementMonitoring {
			cfg.Invariants = append(cfg.Invariants, monitoringAsRecorded(s, inv.Name, release))
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
// states the log records a warning for, and the way the log says it did,
// so that the kernel writes the recorded reason again: with the recorded
// explanation, by panicking with the recorded panic's text, or by running
// past the recorded time limit (its predicate then waits for release).
func monitoringAsRecorded(s *kernelRecorded, name string, release <-chan struct{}) kernel.Invariant {
	prefix := "kernel: invariant " + strconv.Quote(name) + " violated"
	rests := map[kernel.Fingerprint]string{}
	for fp, byName := range s.warned {
		if r, ok := byName[name]; ok {
			rests[fp] = strings.TrimPrefix(r, prefix)
		}
	}
	inv := kernel.Invariant{Name: name, Enforcement: kernel.EnforcementMonitoring,
		Suggestion: recordedSuggestion(slices.Sorted(maps.Values(rests)))}
	warnings := make(map[kernel.Fingerprint]warning, len(rests))
	for fp, r := range rests {
		w, _ := parseWarning(r, inv.Suggestion) // a reason that does not parse is reported by Replay
		warnings[fp] = w
		if w.timeout > 0 {
			inv.Timeout = w.timeout
		}
	}
	inv.Check = func(st kernel.State) bool {
		w, warned := warnings[st.Fingerprint()]
		switch {
		case !warned:
			return true
		case w.panicked:
			panic(w.panicText)
		case w.timeout > 0:
			<-release
		}
		return false
	}
	inv.Explain = func(st kernel.State) string { return warnings[st.Fingerprint()].detail }
	return inv
}

// What kernel.InvariantViolation writes between an invariant's name and
// its suggestion.
const (
	reasonPanicked   = " (predicate panicked: "
	reasonTimedOut   = " (predicate ran past its time limit "
	reasonSuggestion = "; suggestion: "
)

// warning is a recorded warning's reason taken apart.
type warning struct {
	panicked  bool
	panicText string        // the panic's value, as text
	timeout   time.Duration // the time limit the predicate ran past
	detail    string        // the explanation of the state
}

// parseWarning takes apart rest, what a warning's reason says after
// `kernel: invariant "name" violated`, for an invariant with suggestion.
func parseWarning(rest, suggestion string) (warning, bool) {
	if suggestion != "" {
		var ok bool
		if rest, ok = strings.CutSuffix(rest, reasonSuggestion+suggestion); !ok {
			return warning{}, false
		}
	}
	switch {
	case rest == "":
		return warning{}, true
	case strings.HasPrefix(rest, ": ") && len(rest) > len(": "):
		return warning{detail: rest[len(": "):]}, true
	case strings.HasPrefix(rest, reasonPanicked) && strings.HasSuffix(rest, ")"):
		return warning{panicked: true, panicText: rest[len(reasonPanicked) : len(rest)-1]}, true
	case strings.HasPrefix(rest, reasonTimedOut) && strings.HasSuffix(rest, ")"):
		d, err := time.ParseDuration(rest[len(reasonTimedOut) : len(rest)-1])
		return warning{timeout: d}, err == nil && d > 0
	}
	return warning{}, false
}

// recordedSuggestion is the suggestion all of an invariant's recorded
// reasons (after its name) end with, "" for none: the first text after a
// "; suggestion: " with which every one of them takes apart.
func recordedSuggestion(rests []string) string {
	for _, r := range rests {
		for i := strings.Index(r, reasonSuggestion); i >= 0; {
			if cand := r[i+len(reasonSuggestion):]; cand != "" && allParse(rests, cand) {
				return cand
			}
			j := strings.Index(r[i+1:], reasonSuggestion)
			if j < 0 {
				break
			}
			i += 1 + j
		}
	}
	return ""
}

func allParse(rests []string, suggestion string) bool {
	for _, r := range rests {
		if _, ok := parseWarning(r, suggestion); !ok {
			return false
		}
	}
	return true
}
