package kernel

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/trace"
)

// Trace entry kinds written by a Session, one per Entry type.
const (
	KindStart    = "kernel.start"    // StartEntry: the configuration and the initial state
	KindExecute  = "kernel.execute"  // ExecuteEntry: a committed execution
	KindReject   = "kernel.reject"   // RejectEntry: a rejection, with every check
	KindRollback = "kernel.rollback" // RollbackEntry: a rollback
)

// Entry is the payload of one trace entry a Session records: a StartEntry,
// ExecuteEntry, RejectEntry or RollbackEntry. DecodeEntry reads one back;
// Replay re-executes them.
type Entry interface {
	kind() string
	appendJSON(dst []byte) []byte
}

// StartEntry is the payload of a KindStart entry: what the kernel was
// configured with, and the session's full initial state.
type StartEntry struct {
	Session       string
	Budget        Cost   // B0
	MinCost       Cost   // ε
	MaxSteps      uint64 // floor(B0/ε)
	Emergency     []string
	Invariants    []Invariant // name and enforcement (no predicate)
	Preconditions []string    // names
	State         State
}

// ExecuteEntry is the payload of a KindExecute entry: the Record of a
// committed execution (its Time is the entry's).
type ExecuteEntry struct {
	Session string
	Record
}

// RejectEntry is the payload of a KindReject entry: the rejected action
// (only its ID when it was not well formed), every check of the Verdict
// (an Err is recorded as its Reason only) and the state, budget and steps it was made
// in.
type RejectEntry struct {
	Session   string
	Action    Action
	Emergency bool
	Checks    []CheckResult
	Budget    BudgetSnapshot
	State     Fingerprint
	Steps     uint64
}

// RollbackEntry is the payload of a KindRollback entry: the
// RollbackRecord (its Time is the entry's).
type RollbackEntry struct {
	Session string
	RollbackRecord
}

func (StartEntry) kind() string    { return KindStart }
func (ExecuteEntry) kind() string  { return KindExecute }
func (RejectEntry) kind() string   { return KindReject }
func (RollbackEntry) kind() string { return KindRollback }

// payload returns the canonical JSON of e, in a buffer that usually needs
// no growing (a payload of an action with a few effects is under 1 KiB).
func payload(e Entry) []byte { return e.appendJSON(make([]byte, 0, 1024)) }

// The payloads are canonical JSON (RFC 8785) written member by member in
// sorted order, with canon's string and number writers; trace.Log.Append
// checks them in one pass. A count is a JSON number up to 2^53−1 and a
// decimal string beyond; a cost is a decimal string.

func (e StartEntry) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"budget":`...)
	dst = appendCost(dst, e.Budget)
	dst = append(dst, `,"emergency":`...)
	dst = appendStrings(dst, e.Emergency)
	dst = append(dst, `,"invariants":`...)
	dst = appendInvariants(dst, e.Invariants)
	dst = append(dst, `,"max_steps":`...)
	dst = appendCount(dst, e.MaxSteps)
	dst = append(dst, `,"min_cost":`...)
	dst = appendCost(dst, e.MinCost)
	dst = append(dst, `,"preconditions":`...)
	dst = appendStrings(dst, e.Preconditions)
	dst = append(dst, `,"session":`...)
	dst = canon.AppendString(dst, e.Session)
	dst = append(dst, `,"state":`...)
	dst = e.State.appendJSON(dst)
	return append(dst, '}')
}

func (e ExecuteEntry) appendJSON(dst []byte) []byte {
	r := &e.Record
	dst = append(dst, `{"action":`...)
	dst = r.Action.appendJSON(dst)
	dst = append(dst, `,"after":`...)
	dst = appendFP(dst, r.After)
	dst = append(dst, `,"before":`...)
	dst = appendFP(dst, r.Before)
	dst = append(dst, `,"budget":`...)
	dst = appendBudget(dst, r.Budget)
	dst = append(dst, `,"emergency":`...)
	dst = strconv.AppendBool(dst, r.Emergency)
	dst = append(dst, `,"emergency_steps":`...)
	dst = appendCount(dst, r.EmergencySteps)
	dst = append(dst, `,"exec":`...)
	dst = canon.AppendString(dst, r.ExecID)
	dst = append(dst, `,"inverse":`...)
	dst = appendEffects(dst, r.Inverse)
	dst = append(dst, `,"session":`...)
	dst = canon.AppendString(dst, e.Session)
	dst = append(dst, `,"steps":`...)
	dst = appendCount(dst, r.Steps)
	dst = append(dst, `,"warnings":`...)
	dst = appendChecks(dst, r.Warnings)
	return append(dst, '}')
}

func (e RejectEntry) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"action":`...)
	if e.Action.Validate() == nil {
		dst = e.Action.appendJSON(dst)
	} else {
		// A malformed action cannot be written faithfully; record its id.
		dst = append(dst, `{"id":`...)
		dst = canon.AppendString(dst, validUTF8(e.Action.ID))
		dst = append(dst, '}')
	}
	dst = append(dst, `,"budget":`...)
	dst = appendBudget(dst, e.Budget)
	dst = append(dst, `,"checks":`...)
	dst = appendChecks(dst, e.Checks)
	dst = append(dst, `,"emergency":`...)
	dst = strconv.AppendBool(dst, e.Emergency)
	dst = append(dst, `,"session":`...)
	dst = canon.AppendString(dst, e.Session)
	dst = append(dst, `,"state":`...)
	dst = appendFP(dst, e.State)
	dst = append(dst, `,"steps":`...)
	dst = appendCount(dst, e.Steps)
	return append(dst, '}')
}

func (e RollbackEntry) appendJSON(dst []byte) []byte {
	r := &e.RollbackRecord
	dst = append(dst, `{"after":`...)
	dst = appendFP(dst, r.After)
	dst = append(dst, `,"before":`...)
	dst = appendFP(dst, r.Before)
	dst = append(dst, `,"budget":`...)
	dst = appendBudget(dst, r.Budget)
	dst = append(dst, `,"effects":`...)
	dst = appendEffects(dst, r.Effects)
	dst = append(dst, `,"exec":`...)
	dst = canon.AppendString(dst, r.ExecID)
	dst = append(dst, `,"refund":`...)
	dst = appendCost(dst, r.Refund)
	dst = append(dst, `,"session":`...)
	dst = canon.AppendString(dst, e.Session)
	dst = append(dst, `,"steps":`...)
	dst = appendCount(dst, r.Steps)
	return append(dst, '}')
}

func appendCount(dst []byte, n uint64) []byte {
	if n <= maxSafe {
		return strconv.AppendUint(dst, n, 10)
	}
	dst = append(dst, '"')
	dst = strconv.AppendUint(dst, n, 10)
	return append(dst, '"')
}

func appendCost(dst []byte, c Cost) []byte {
	dst = append(dst, '"')
	dst = c.appendDecimal(dst)
	return append(dst, '"')
}

func appendFP(dst []byte, f Fingerprint) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for _, b := range f {
		dst = append(dst, hex[b>>4], hex[b&15])
	}
	return append(dst, '"')
}

func appendStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = canon.AppendString(dst, validUTF8(s))
	}
	return append(dst, ']')
}

func appendInvariants(dst []byte, invs []Invariant) []byte {
	dst = append(dst, '[')
	for i, inv := range invs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"enforcement":"`...)
		dst = append(dst, inv.Enforcement.String()...)
		dst = append(dst, `","name":`...)
		dst = canon.AppendString(dst, validUTF8(inv.Name))
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

func appendBudget(dst []byte, b BudgetSnapshot) []byte {
	dst = append(dst, `{"gross":`...)
	dst = appendCost(dst, b.Gross)
	dst = append(dst, `,"limit":`...)
	dst = appendCost(dst, b.Limit)
	dst = append(dst, `,"refunded":`...)
	dst = appendCost(dst, b.Refunded)
	return append(dst, '}')
}

func appendChecks(dst []byte, checks []CheckResult) []byte {
	dst = append(dst, '[')
	for i, c := range checks {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"check":`...)
		dst = canon.AppendString(dst, validUTF8(string(c.Check)))
		dst = append(dst, `,"name":`...)
		dst = canon.AppendString(dst, validUTF8(c.Name))
		dst = append(dst, `,"reason":`...)
		dst = canon.AppendString(dst, validUTF8(c.Reason))
		dst = append(dst, `,"status":"`...)
		dst = append(dst, c.Status.String()...)
		dst = append(dst, `"}`...)
	}
	return append(dst, ']')
}

// DecodeEntry reads the payload of a trace entry a Session recorded,
// strictly (canon.DecodeInto: no duplicate member, valid UTF-8, no
// integer a reader would round; then no unknown or missing member, known
// names, counts, costs and fingerprints in the form the Session writes
// them), as the Entry type
// its kind names: StartEntry, ExecuteEntry, RejectEntry or RollbackEntry.
// An ExecuteEntry's and a RollbackEntry's Time is the entry's. An entry of
// another kind is an error wrapping ErrDecode.
func DecodeEntry(e trace.Entry) (Entry, error) {
	var (
		out Entry
		err error
	)
	switch e.Kind {
	case KindStart:
		out, err = decodeMembers(e.Payload, &startWire{}, (*startWire).entry)
	case KindExecute:
		out, err = decodeMembers(e.Payload, &executeWire{}, func(w *executeWire, r *reader) Entry { return w.entry(r, e.Time) })
	case KindReject:
		out, err = decodeMembers(e.Payload, &rejectWire{}, (*rejectWire).entry)
	case KindRollback:
		out, err = decodeMembers(e.Payload, &rollbackWire{}, func(w *rollbackWire, r *reader) Entry { return w.entry(r, e.Time) })
	default:
		return nil, fmt.Errorf("%w: %q is not a kind a session records", ErrDecode, e.Kind)
	}
	if err != nil {
		return nil, within(err, "%s payload", e.Kind)
	}
	return out, nil
}

// decodeMembers decodes payload into the wire struct w (every member of
// the payload must have a field) and converts it with entry.
func decodeMembers[W any](payload []byte, w *W, entry func(*W, *reader) Entry) (Entry, error) {
	if err := canon.DecodeInto(payload, w, true); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDecode, err)
	}
	var r reader
	out := entry(w, &r)
	if r.err != nil {
		return nil, r.err
	}
	return out, nil
}

// The wire structs hold each member as canon decoded it (strings, bools,
// json.Number, []any, map[string]any); a reader converts them.

type startWire struct {
	Budget        any `json:"budget"`
	Emergency     any `json:"emergency"`
	Invariants    any `json:"invariants"`
	MaxSteps      any `json:"max_steps"`
	MinCost       any `json:"min_cost"`
	Preconditions any `json:"preconditions"`
	Session       any `json:"session"`
	State         any `json:"state"`
}

func (w *startWire) entry(r *reader) Entry {
	return StartEntry{
		Session:       r.str("session", w.Session),
		Budget:        r.cost("budget", w.Budget),
		MinCost:       r.cost("min_cost", w.MinCost),
		MaxSteps:      r.count("max_steps", w.MaxSteps),
		Emergency:     r.strs("emergency", w.Emergency),
		Invariants:    r.invariants("invariants", w.Invariants),
		Preconditions: r.strs("preconditions", w.Preconditions),
		State:         r.state("state", w.State),
	}
}

type executeWire struct {
	Action         any `json:"action"`
	After          any `json:"after"`
	Before         any `json:"before"`
	Budget         any `json:"budget"`
	Emergency      any `json:"emergency"`
	EmergencySteps any `json:"emergency_steps"`
	Exec           any `json:"exec"`
	Inverse        any `json:"inverse"`
	Session        any `json:"session"`
	Steps          any `json:"steps"`
	Warnings       any `json:"warnings"`
}

func (w *executeWire) entry(r *reader, t time.Time) Entry {
	return ExecuteEntry{Session: r.str("session", w.Session), Record: Record{
		ExecID:         r.str("exec", w.Exec),
		Action:         r.action("action", w.Action, false),
		Emergency:      r.boolean("emergency", w.Emergency),
		Before:         r.fingerprint("before", w.Before),
		After:          r.fingerprint("after", w.After),
		Inverse:        r.effects("inverse", w.Inverse),
		Budget:         r.budget("budget", w.Budget),
		Steps:          r.count("steps", w.Steps),
		EmergencySteps: r.count("emergency_steps", w.EmergencySteps),
		Warnings:       r.checks("warnings", w.Warnings),
		Time:           t,
	}}
}

type rejectWire struct {
	Action    any `json:"action"`
	Budget    any `json:"budget"`
	Checks    any `json:"checks"`
	Emergency any `json:"emergency"`
	Session   any `json:"session"`
	State     any `json:"state"`
	Steps     any `json:"steps"`
}

func (w *rejectWire) entry(r *reader) Entry {
	return RejectEntry{
		Session:   r.str("session", w.Session),
		Action:    r.action("action", w.Action, true),
		Emergency: r.boolean("emergency", w.Emergency),
		Checks:    r.checks("checks", w.Checks),
		Budget:    r.budget("budget", w.Budget),
		State:     r.fingerprint("state", w.State),
		Steps:     r.count("steps", w.Steps),
	}
}

type rollbackWire struct {
	After   any `json:"after"`
	Before  any `json:"before"`
	Budget  any `json:"budget"`
	Effects any `json:"effects"`
	Exec    any `json:"exec"`
	Refund  any `json:"refund"`
	Session any `json:"session"`
	Steps   any `json:"steps"`
}

func (w *rollbackWire) entry(r *reader, t time.Time) Entry {
	return RollbackEntry{Session: r.str("session", w.Session), RollbackRecord: RollbackRecord{
		ExecID:  r.str("exec", w.Exec),
		Refund:  r.cost("refund", w.Refund),
		Before:  r.fingerprint("before", w.Before),
		After:   r.fingerprint("after", w.After),
		Effects: r.effects("effects", w.Effects),
		Budget:  r.budget("budget", w.Budget),
		Steps:   r.count("steps", w.Steps),
		Time:    t,
	}}
}

// reader converts decoded members, keeping the first problem.
type reader struct{ err error }

func (r *reader) fail(member, format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s: %s", ErrDecode, member, fmt.Sprintf(format, args...))
	}
}

func (r *reader) failWith(member string, err error) {
	if r.err == nil {
		r.err = within(err, "%s", member)
	}
}

// as returns x as a T, or fails: a member that is absent or null is
// missing.
func as[T any](r *reader, member string, x any) (T, bool) {
	v, ok := x.(T)
	if !ok {
		if x == nil {
			r.fail(member, "missing")
		} else {
			r.fail(member, "unexpected %T", x)
		}
	}
	return v, ok
}

func (r *reader) str(member string, x any) string {
	s, _ := as[string](r, member, x)
	return s
}

func (r *reader) boolean(member string, x any) bool {
	b, _ := as[bool](r, member, x)
	return b
}

// count reads a count as appendCount writes it: a number up to 2^53−1,
// a decimal string beyond.
func (r *reader) count(member string, x any) uint64 {
	var text string
	number := false
	switch v := x.(type) {
	case json.Number:
		text, number = string(v), true
	case string:
		text = v
	}
	n, err := strconv.ParseUint(text, 10, 64)
	if err != nil || strconv.FormatUint(n, 10) != text || number != (n <= maxSafe) {
		r.fail(member, "not a count as the session writes it: %v", x)
	}
	return n
}

// cost reads a cost as appendCost writes it: its exact decimal string.
func (r *reader) cost(member string, x any) Cost {
	s, ok := as[string](r, member, x)
	if !ok {
		return 0
	}
	c, err := ParseCost(s)
	if err != nil {
		r.failWith(member, err)
	} else if c.String() != s {
		r.fail(member, "cost %q is not written %q", s, c.String())
	}
	return c
}

func (r *reader) fingerprint(member string, x any) Fingerprint {
	var f Fingerprint
	if s, ok := as[string](r, member, x); ok {
		if err := f.UnmarshalText([]byte(s)); err != nil || f.String() != s {
			r.fail(member, "not a fingerprint in lower-case hex")
		}
	}
	return f
}

func (r *reader) strs(member string, x any) []string {
	list, _ := as[[]any](r, member, x)
	out := make([]string, 0, len(list))
	for i, it := range list {
		out = append(out, r.str(member+"/"+strconv.Itoa(i), it))
	}
	return out
}

func (r *reader) budget(member string, x any) BudgetSnapshot {
	m, _ := as[map[string]any](r, member, x)
	if r.err == nil && len(m) != 3 {
		r.fail(member, "a budget has exactly gross, limit and refunded")
	}
	return BudgetSnapshot{Limit: r.cost(member+"/limit", m["limit"]), Gross: r.cost(member+"/gross", m["gross"]), Refunded: r.cost(member+"/refunded", m["refunded"])}
}

// action reads an action; idOnly allows the {"id": …} a rejection records
// for an action that was not well formed.
func (r *reader) action(member string, x any, idOnly bool) Action {
	if m, ok := x.(map[string]any); ok && idOnly && len(m) == 1 {
		return Action{ID: r.str(member+"/id", m["id"])}
	}
	if x == nil {
		r.fail(member, "missing")
		return Action{}
	}
	a, err := actionFromJSON(x)
	if err != nil {
		r.failWith(member, err)
	}
	return a
}

func (r *reader) effects(member string, x any) []Effect {
	list, _ := as[[]any](r, member, x)
	out := make([]Effect, 0, len(list))
	for i, it := range list {
		e, err := effectFromJSON(it)
		if err != nil {
			r.failWith(member+"/"+strconv.Itoa(i), err)
		}
		out = append(out, e)
	}
	return out
}

func (r *reader) checks(member string, x any) []CheckResult {
	list, _ := as[[]any](r, member, x)
	var out []CheckResult
	for i, it := range list {
		at := member + "/" + strconv.Itoa(i)
		m, _ := as[map[string]any](r, at, it)
		if r.err == nil && len(m) != 4 {
			r.fail(at, "a check has exactly check, name, reason and status")
		}
		c := CheckResult{Check: CheckName(r.str(at+"/check", m["check"])), Name: r.str(at+"/name", m["name"]), Reason: r.str(at+"/reason", m["reason"])}
		c.Status = parseStatus(r.str(at+"/status", m["status"]))
		if c.Status == 0 && r.err == nil {
			r.fail(at+"/status", "unknown status %v", m["status"])
		}
		out = append(out, c)
	}
	return out
}

func (r *reader) invariants(member string, x any) []Invariant {
	list, _ := as[[]any](r, member, x)
	out := make([]Invariant, 0, len(list))
	for i, it := range list {
		at := member + "/" + strconv.Itoa(i)
		m, _ := as[map[string]any](r, at, it)
		if r.err == nil && len(m) != 2 {
			r.fail(at, "an invariant has exactly enforcement and name")
		}
		inv := Invariant{Name: r.str(at+"/name", m["name"])}
		switch e := r.str(at+"/enforcement", m["enforcement"]); e {
		case EnforcementBlocking.String():
			inv.Enforcement = EnforcementBlocking
		case EnforcementMonitoring.String():
			inv.Enforcement = EnforcementMonitoring
		default:
			r.fail(at+"/enforcement", "unknown enforcement %q", e)
		}
		out = append(out, inv)
	}
	return out
}

func (r *reader) state(member string, x any) State {
	m, ok := as[map[string]any](r, member, x)
	if !ok {
		return State{}
	}
	b := newBuilder(State{})
	for _, key := range slices.Sorted(maps.Keys(m)) {
		v, err := fromJSON(m[key], 1)
		if err != nil {
			r.failWith(member+"/"+key, err)
			return State{}
		}
		b.set(key, v)
	}
	return b.state()
}

func parseStatus(s string) Status {
	for st := StatusPassed; st <= StatusSkipped; st++ {
		if statusNames[st] == s {
			return st
		}
	}
	return 0
}
