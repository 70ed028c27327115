package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// Several logs, one report. Replicas of verity-mcp behind one address
// each write their own log (a log has one writer), sharing budgets,
// approvals and labels through a database. `verity verify` and `verity
// inspect` given several logs verify each on its own, then say how they
// relate: per log its entries, head and time span; across them the time
// they overlap, the budgets charged in more than one (a caller's budget,
// the kernel session of its gate, shared through the database), the
// callers (principals) in more than one, and, as an error, a call or an
// execution decided in two logs — which replicas sharing one database
// never do, so that it means a log was copied, replayed into another, or
// two replicas decided one call.

// logFacts is what one verified log says for the report.
type logFacts struct {
	Source      string    `json:"source"`
	Entries     uint64    `json:"entries"`
	Head        string    `json:"head,omitempty"`
	First, Last time.Time `json:"-"`
	From        string    `json:"from,omitempty"`
	To          string    `json:"to,omitempty"`
	Err         error     `json:"-"`
	Error       string    `json:"error,omitempty"`

	calls      map[string]uint64 // caller + "\x00" + call id → the seq that decided it
	execs      map[string]uint64 // execution id → its seq
	budgets    map[string]int    // kernel session → executions charged to it
	principals map[string]int    // caller → entries naming it
}

func newLogFacts(src string) *logFacts {
	return &logFacts{Source: src, calls: map[string]uint64{}, execs: map[string]uint64{}, budgets: map[string]int{}, principals: map[string]int{}}
}

// add reads one verified entry.
func (f *logFacts) add(e trace.Entry) {
	if f.Entries == 0 {
		f.First = e.Time
	}
	f.Entries, f.Last = e.Seq+1, e.Time
	f.Head = FormatHead(trace.Head{Size: e.Seq + 1, Hash: e.Hash})
	if e.Time.Before(f.First) {
		f.First = e.Time
	}
	_, decoded := describe(e)
	decided := func(session string, a kernel.Action) {
		caller, ok := strings.CutPrefix(session, toolgate.SessionPrefix)
		if !ok {
			return
		}
		f.principals[caller]++
		for _, t := range a.Tags {
			if id, ok := strings.CutPrefix(t, "call:"); ok {
				f.call(caller, id, e.Seq)
			}
		}
	}
	switch x := decoded.(type) {
	case kernel.ExecuteEntry:
		f.exec(x.ExecID, e.Seq)
		if x.Action.Cost > 0 {
			f.budgets[x.Session]++
		}
		decided(x.Session, x.Action)
	case kernel.ReserveEntry:
		f.exec(x.ExecID, e.Seq)
		if x.Action.Cost > 0 {
			f.budgets[x.Session]++
		}
		decided(x.Session, x.Action)
	case kernel.RejectEntry:
		decided(x.Session, x.Action)
	case gatelog.Refuse:
		f.principals[x.Caller]++
		f.call(x.Caller, x.CallID, e.Seq)
	case gatelog.Ask:
		f.principals[x.Caller]++
		if x.Principal != "" && x.Principal != x.Caller {
			f.principals[x.Principal]++
		}
	case gatelog.Result:
		f.principals[x.Caller]++
	}
}

// call records a decision on a call; one call decided twice in one log
// (asked, then approved; refused, then retried) is that log's own story.
func (f *logFacts) call(caller, id string, seq uint64) {
	if id == "" {
		return
	}
	if _, ok := f.calls[caller+"\x00"+id]; !ok {
		f.calls[caller+"\x00"+id] = seq
	}
}

func (f *logFacts) exec(id string, seq uint64) {
	if _, ok := f.execs[id]; !ok && id != "" {
		f.execs[id] = seq
	}
}

// relation is how several logs relate.
type relation struct {
	Logs []*logFacts `json:"logs"`
	// Overlaps are the pairs of logs whose time spans overlap, with the
	// overlap; All is the span every verified log covers, if any.
	Overlaps []overlap `json:"overlaps"`
	All      *overlap  `json:"all,omitempty"`
	// Budgets and Principals map each budget (kernel session) charged,
	// and each caller named, in more than one log to those logs.
	Budgets    map[string][]string `json:"budgets_in_several_logs"`
	Principals map[string][]string `json:"principals_in_several_logs"`
	// Conflicts are the calls and executions decided in two logs.
	Conflicts []string `json:"conflicts"`
}

type overlap struct {
	Logs []string `json:"logs"`
	From string   `json:"from"`
	To   string   `json:"to"`
}

// relate reads each source, verifying it on its own, and relates those
// that verified.
// each, when not nil, sees every verified entry of each log in turn
// (inspect prints them); its error stops that log's reading.
func relate(ctx context.Context, e *env, sources []Source, each func(Source, trace.Entry) error) *relation {
	r := &relation{Budgets: map[string][]string{}, Principals: map[string][]string{}, Overlaps: []overlap{}, Conflicts: []string{}}
	for _, src := range sources {
		f := newLogFacts(src.String())
		err := walk(ctx, e, src, func(entry trace.Entry) error {
			f.add(entry)
			if each != nil {
				return each(src, entry)
			}
			return nil
		})
		if err != nil {
			f.Err, f.Error = err, err.Error()
		}
		if f.Entries > 0 {
			f.From, f.To = trace.FormatTime(f.First), trace.FormatTime(f.Last)
		}
		r.Logs = append(r.Logs, f)
	}
	var ok []*logFacts
	for _, f := range r.Logs {
		if f.Err == nil && f.Entries > 0 {
			ok = append(ok, f)
		}
	}
	for i, a := range ok {
		for _, b := range ok[i+1:] {
			if from, to, yes := spanOverlap(a.First, a.Last, b.First, b.Last); yes {
				r.Overlaps = append(r.Overlaps, overlap{Logs: []string{a.Source, b.Source}, From: trace.FormatTime(from), To: trace.FormatTime(to)})
			}
		}
	}
	if len(ok) > 1 {
		from, to := ok[0].First, ok[0].Last
		all := true
		for _, f := range ok[1:] {
			from, to, all = spanOverlap(from, to, f.First, f.Last)
			if !all {
				break
			}
		}
		if all {
			names := make([]string, len(ok))
			for i, f := range ok {
				names[i] = f.Source
			}
			r.All = &overlap{Logs: names, From: trace.FormatTime(from), To: trace.FormatTime(to)}
		}
	}
	several := func(get func(*logFacts) []string, out map[string][]string) {
		for _, f := range ok {
			for _, k := range get(f) {
				out[k] = append(out[k], f.Source)
			}
		}
		for k, logs := range out {
			if len(logs) < 2 {
				delete(out, k)
			}
		}
	}
	several(func(f *logFacts) []string { return sortedKeys(f.budgets) }, r.Budgets)
	several(func(f *logFacts) []string { return sortedKeys(f.principals) }, r.Principals)
	for i, a := range ok {
		for _, b := range ok[i+1:] {
			for _, k := range sortedKeys(a.calls) {
				if seq, dup := b.calls[k]; dup {
					caller, id, _ := strings.Cut(k, "\x00")
					r.Conflicts = append(r.Conflicts, fmt.Sprintf("call %s of caller %q is decided in %s (entry %d) and in %s (entry %d)", id, caller, a.Source, a.calls[k], b.Source, seq))
				}
			}
			for _, id := range sortedKeys(a.execs) {
				if seq, dup := b.execs[id]; dup {
					r.Conflicts = append(r.Conflicts, fmt.Sprintf("execution %s is recorded in %s (entry %d) and in %s (entry %d)", id, a.Source, a.execs[id], b.Source, seq))
				}
			}
		}
	}
	return r
}

// spanOverlap returns the overlap of [a0, a1] and [b0, b1].
func spanOverlap(a0, a1, b0, b1 time.Time) (from, to time.Time, ok bool) {
	from, to = a0, a1
	if b0.After(from) {
		from = b0
	}
	if b1.Before(to) {
		to = b1
	}
	return from, to, !to.Before(from)
}

// errConflict is returned when a call or an execution is decided in two
// logs.
var errConflict = errors.New("logs disagree: a call or an execution is decided in two logs")

// print writes the report.
func (r *relation) print(w io.Writer) {
	fmt.Fprintf(w, "logs     %d\n", len(r.Logs))
	for _, f := range r.Logs {
		switch {
		case f.Err != nil:
			fmt.Fprintf(w, "  %s: not related: %s\n", f.Source, problem(f.Err))
		case f.Entries == 0:
			fmt.Fprintf(w, "  %s: empty\n", f.Source)
		default:
			fmt.Fprintf(w, "  %s: %d entries, head %s, %s … %s\n", f.Source, f.Entries, f.Head, f.From, f.To)
		}
	}
	switch {
	case r.All != nil:
		fmt.Fprintf(w, "overlap  every log: %s … %s\n", r.All.From, r.All.To)
	case len(r.Overlaps) == 0:
		fmt.Fprintln(w, "overlap  none: the logs cover disjoint times")
	}
	for _, o := range r.Overlaps {
		fmt.Fprintf(w, "overlap  %s: %s … %s\n", strings.Join(o.Logs, " and "), o.From, o.To)
	}
	list := func(title string, m map[string][]string) {
		if len(m) == 0 {
			fmt.Fprintf(w, "%s none in several logs\n", title)
			return
		}
		for _, k := range sortedKeys(m) {
			fmt.Fprintf(w, "%s %q in %s\n", title, k, strings.Join(m[k], ", "))
		}
	}
	list("budget  ", r.Budgets)
	list("caller  ", r.Principals)
	for _, c := range r.Conflicts {
		fmt.Fprintf(w, "conflict %s\n", c)
	}
}

// err is the report's verdict: the first log that did not verify, then
// a conflict.
func (r *relation) err() error {
	for _, f := range r.Logs {
		if f.Err != nil {
			return f.Err
		}
	}
	if len(r.Conflicts) > 0 {
		return fmt.Errorf("%w: %s", errConflict, r.Conflicts[0])
	}
	return nil
}

// verifyMany is "verity verify SRC SRC…": each log verified on its own,
// then the report of how they relate.
func verifyMany(ctx context.Context, e *env, sources []Source) error {
	r := relate(ctx, e, sources, nil)
	for _, f := range r.Logs {
		fmt.Fprintf(e.stdout, "source   %s\n", f.Source)
		fmt.Fprintf(e.stdout, "entries  %d verified\n", f.Entries)
		if f.Entries > 0 && f.Err != nil {
			fmt.Fprintf(e.stdout, "head     %s  (the last entry that verified)\n", f.Head)
		} else if f.Entries > 0 {
			fmt.Fprintf(e.stdout, "head     %s\n", f.Head)
		}
		if f.Err != nil {
			fmt.Fprintf(e.stdout, "result   %s: %v\n\n", problem(f.Err), f.Err)
		} else {
			fmt.Fprint(e.stdout, "result   ok\n\n")
		}
	}
	r.print(e.stdout)
	err := r.err()
	if errors.Is(err, errConflict) {
		fmt.Fprintf(e.stdout, "result   conflict: %v\n", err)
		return err
	} else if err != nil {
		fmt.Fprintf(e.stdout, "result   %s: %v\n", problem(err), err)
		return err
	}
	fmt.Fprintln(e.stdout, "result   ok")
	return nil
}

// parseSources parses the SRC arguments of a command that takes several.
func parseSources(name string, pos []string) ([]Source, error) {
	if len(pos) == 0 {
		return nil, usagef("%s takes at least one SRC", name)
	}
	out := make([]Source, len(pos))
	for i, p := range pos {
		src, err := ParseSource(p)
		if err != nil {
			return nil, &usageError{err.Error()}
		}
		if !src.IsFile() && !src.HasLog {
			return nil, usagef("%s of several logs needs each as %s#LOG", name, src)
		}
		for _, o := range out[:i] {
			if o.String() == src.String() {
				return nil, usagef("%s names %s twice: give each log once", name, src)
			}
		}
		out[i] = src
	}
	return out, nil
}
