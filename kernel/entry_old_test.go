package kernel

// The entry decoder DecodeEntry replaced: canon.DecodeInto into wire
// structs of any, then a converter per member. FuzzDecodeEntryAgrees
// checks that DecodeEntry accepts exactly what it accepted.

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/verity-go/verity/internal/jsonvalue"
	"maps"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/trace"
)

// oldDecodeEntry reads the payload of a trace entry a Session recorded,
// strictly (canon.DecodeInto: no duplicate member, valid UTF-8, no
// integer a reader would round; then no unknown or missing member, known
// names, counts, costs and fingerprints in the form the Session writes
// them, an input's digest and size that its bytes have), as the Entry type
// its kind names: StartEntry, ExecuteEntry, RejectEntry, RollbackEntry,
// ReserveEntry, SettleEntry or RefundEntry. A record's Time, Seq and Hash
// are the entry's. An entry of another kind is an error wrapping
// ErrDecode.
func oldDecodeEntry(e trace.Entry) (Entry, error) {
	var (
		out Entry
		err error
	)
	switch e.Kind {
	case KindStart:
		out, err = oldDecodeMembers(e.Payload, &oldStartWire{}, (*oldStartWire).entry)
	case KindExecute:
		out, err = oldDecodeMembers(e.Payload, &oldExecuteWire{}, func(w *oldExecuteWire, r *oldReader) Entry { return w.entry(r, e) })
	case KindReject:
		out, err = oldDecodeMembers(e.Payload, &oldRejectWire{}, (*oldRejectWire).entry)
	case KindRollback:
		out, err = oldDecodeMembers(e.Payload, &oldRollbackWire{}, func(w *oldRollbackWire, r *oldReader) Entry { return w.entry(r, e) })
	case KindReserve:
		out, err = oldDecodeMembers(e.Payload, &oldExecuteWire{}, func(w *oldExecuteWire, r *oldReader) Entry {
			x := w.entry(r, e).(ExecuteEntry)
			x.Reserved = true
			return ReserveEntry(x)
		})
	case KindSettle:
		out, err = oldDecodeMembers(e.Payload, &oldSettleWire{}, func(w *oldSettleWire, r *oldReader) Entry { return w.entry(r, e) })
	case KindRefund:
		out, err = oldDecodeMembers(e.Payload, &oldRefundWire{}, func(w *oldRefundWire, r *oldReader) Entry { return w.entry(r, e) })
	default:
		return nil, fmt.Errorf("%w: %q is not a kind a session records", ErrDecode, e.Kind)
	}
	if err != nil {
		return nil, within(err, "%s payload", e.Kind)
	}
	return out, nil
}

// oldDecodeMembers decodes payload into the wire struct w (every member of
// the payload must have a field) and converts it with entry.
func oldDecodeMembers[W any](payload []byte, w *W, entry func(*W, *oldReader) Entry) (Entry, error) {
	if err := canon.DecodeInto(payload, w, true); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDecode, err)
	}
	var r oldReader
	out := entry(w, &r)
	if r.err != nil {
		return nil, r.err
	}
	return out, nil
}

// The wire structs hold each member as canon decoded it (strings, bools,
// json.Number, []any, map[string]any); a reader converts them.

type oldStartWire struct {
	Budget        any `json:"budget"`
	Emergency     any `json:"emergency"`
	Invariants    any `json:"invariants"`
	MaxSteps      any `json:"max_steps"`
	MinCost       any `json:"min_cost"`
	Preconditions any `json:"preconditions"`
	Session       any `json:"session"`
	State         any `json:"state"`
}

func (w *oldStartWire) entry(r *oldReader) Entry {
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

type oldExecuteWire struct {
	Action         any `json:"action"`
	After          any `json:"after"`
	Before         any `json:"before"`
	Budget         any `json:"budget"`
	Emergency      any `json:"emergency"`
	EmergencySteps any `json:"emergency_steps"`
	Exec           any `json:"exec"`
	Input          any `json:"input"`
	Inverse        any `json:"inverse"`
	Session        any `json:"session"`
	Steps          any `json:"steps"`
	Warnings       any `json:"warnings"`
}

func (w *oldExecuteWire) entry(r *oldReader, e trace.Entry) Entry {
	in := r.input("input", w.Input)
	a := r.action("action", w.Action, false)
	a.Input = in.data
	return ExecuteEntry{Session: r.str("session", w.Session), Record: Record{
		ExecID:         r.str("exec", w.Exec),
		Action:         a,
		InputDigest:    in.digest,
		InputSize:      in.size,
		Emergency:      r.boolean("emergency", w.Emergency),
		Before:         r.fingerprint("before", w.Before),
		After:          r.fingerprint("after", w.After),
		Inverse:        r.effects("inverse", w.Inverse),
		Budget:         r.budget("budget", w.Budget),
		Steps:          r.count("steps", w.Steps),
		EmergencySteps: r.count("emergency_steps", w.EmergencySteps),
		Warnings:       r.checks("warnings", w.Warnings),
		Time:           e.Time,
		Seq:            e.Seq,
		Hash:           e.Hash,
	}}
}

type oldRejectWire struct {
	Action    any `json:"action"`
	Budget    any `json:"budget"`
	Checks    any `json:"checks"`
	Emergency any `json:"emergency"`
	Input     any `json:"input"`
	Session   any `json:"session"`
	State     any `json:"state"`
	Steps     any `json:"steps"`
}

func (w *oldRejectWire) entry(r *oldReader) Entry {
	in := r.input("input", w.Input)
	a := r.action("action", w.Action, true)
	a.Input = in.data
	return RejectEntry{
		InputDigest: in.digest,
		InputSize:   in.size,
		Session:     r.str("session", w.Session),
		Action:      a,
		Emergency:   r.boolean("emergency", w.Emergency),
		Checks:      r.checks("checks", w.Checks),
		Budget:      r.budget("budget", w.Budget),
		State:       r.fingerprint("state", w.State),
		Steps:       r.count("steps", w.Steps),
	}
}

type oldRollbackWire struct {
	After   any `json:"after"`
	Before  any `json:"before"`
	Budget  any `json:"budget"`
	Effects any `json:"effects"`
	Exec    any `json:"exec"`
	Refund  any `json:"refund"`
	Session any `json:"session"`
	Steps   any `json:"steps"`
}

func (w *oldRollbackWire) entry(r *oldReader, e trace.Entry) Entry {
	return RollbackEntry{Session: r.str("session", w.Session), RollbackRecord: RollbackRecord{
		ExecID:  r.str("exec", w.Exec),
		Refund:  r.cost("refund", w.Refund),
		Before:  r.fingerprint("before", w.Before),
		After:   r.fingerprint("after", w.After),
		Effects: r.effects("effects", w.Effects),
		Budget:  r.budget("budget", w.Budget),
		Steps:   r.count("steps", w.Steps),
		Time:    e.Time,
		Seq:     e.Seq,
		Hash:    e.Hash,
	}}
}

type oldSettleWire struct {
	Actual   any `json:"actual"`
	Budget   any `json:"budget"`
	Exec     any `json:"exec"`
	Overrun  any `json:"overrun"`
	Refund   any `json:"refund"`
	Reserved any `json:"reserved"`
	Session  any `json:"session"`
	Unpaid   any `json:"unpaid"`
}

func (w *oldSettleWire) entry(r *oldReader, e trace.Entry) Entry {
	return SettleEntry{Session: r.str("session", w.Session), SettleRecord: SettleRecord{
		ExecID:   r.str("exec", w.Exec),
		Reserved: r.cost("reserved", w.Reserved),
		Actual:   r.cost("actual", w.Actual),
		Refund:   r.cost("refund", w.Refund),
		Overrun:  r.cost("overrun", w.Overrun),
		Unpaid:   r.cost("unpaid", w.Unpaid),
		Budget:   r.budget("budget", w.Budget),
		Time:     e.Time,
		Seq:      e.Seq,
		Hash:     e.Hash,
	}}
}

type oldRefundWire struct {
	Amount  any `json:"amount"`
	Budget  any `json:"budget"`
	Exec    any `json:"exec"`
	Reason  any `json:"reason"`
	Session any `json:"session"`
}

func (w *oldRefundWire) entry(r *oldReader, e trace.Entry) Entry {
	return RefundEntry{Session: r.str("session", w.Session), RefundRecord: RefundRecord{
		ExecID: r.str("exec", w.Exec),
		Amount: r.cost("amount", w.Amount),
		Reason: r.str("reason", w.Reason),
		Budget: r.budget("budget", w.Budget),
		Time:   e.Time,
		Seq:    e.Seq,
		Hash:   e.Hash,
	}}
}

// reader converts decoded members, keeping the first problem.
type oldReader struct{ err error }

func (r *oldReader) fail(member, format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s: %s", ErrDecode, member, fmt.Sprintf(format, args...))
	}
}

func (r *oldReader) failWith(member string, err error) {
	if r.err == nil {
		r.err = within(err, "%s", member)
	}
}

// as returns x as a T, or fails: a member that is absent or null is
// missing.
func oldAs[T any](r *oldReader, member string, x any) (T, bool) {
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

func (r *oldReader) str(member string, x any) string {
	s, _ := oldAs[string](r, member, x)
	return s
}

// oldRecordedInput is a call's input as an entry records it.
type oldRecordedInput struct {
	data   []byte
	digest trace.Hash
	size   int
}

// input reads an input member as appendInput writes it (absent: no
// input): the digest and size must be those of the bytes when they are
// there, and the bytes in the one form appendInput chooses for them.
func (r *oldReader) input(member string, x any) oldRecordedInput {
	var in oldRecordedInput
	if x == nil {
		return in
	}
	m, ok := oldAs[map[string]any](r, member, x)
	if !ok {
		return in
	}
	text, hasText := m["text"]
	b64, hasB64 := m["base64"]
	if len(m) != 2+oldBtoi(hasText)+oldBtoi(hasB64) || (hasText && hasB64) {
		r.fail(member, "an input has a digest, a size and at most one of base64 and text")
		return in
	}
	in.digest = trace.Hash(r.fingerprint(member+"/digest", m["digest"]))
	size := r.count(member+"/size", m["size"])
	// The bytes beyond the input limit are not in the entry, so the size
	// is bounded only by what a count written as a JSON number (and an int)
	// can hold.
	if r.err == nil && (size == 0 || size > min(jsonvalue.MaxSafe, math.MaxInt)) {
		r.fail(member+"/size", "size %d out of range", size)
	}
	in.size = int(size)
	switch {
	case hasText:
		s := r.str(member+"/text", text)
		in.data = []byte(s)
	case hasB64:
		s := r.str(member+"/base64", b64)
		data, err := base64.StdEncoding.Strict().DecodeString(s)
		switch {
		case err != nil || base64.StdEncoding.EncodeToString(data) != s:
			r.fail(member+"/base64", "not canonical base64")
		case utf8.Valid(data):
			r.fail(member+"/base64", "valid UTF-8 is recorded as text")
		}
		in.data = data
	}
	if r.err == nil && in.data != nil && (len(in.data) != in.size || sha256.Sum256(in.data) != in.digest) {
		r.fail(member, "the recorded bytes do not have the recorded digest and size")
	}
	return in
}

func oldBtoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (r *oldReader) boolean(member string, x any) bool {
	b, _ := oldAs[bool](r, member, x)
	return b
}

// count reads a count as appendCount writes it: a number up to 2^53−1,
// a decimal string beyond.
func (r *oldReader) count(member string, x any) uint64 {
	var text string
	number := false
	switch v := x.(type) {
	case json.Number:
		text, number = string(v), true
	case string:
		text = v
	}
	n, err := strconv.ParseUint(text, 10, 64)
	if err != nil || strconv.FormatUint(n, 10) != text || number != (n <= jsonvalue.MaxSafe) {
		r.fail(member, "not a count as the session writes it: %v", x)
	}
	return n
}

// cost reads a cost as appendCost writes it: its exact decimal string.
func (r *oldReader) cost(member string, x any) Cost {
	s, ok := oldAs[string](r, member, x)
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

func (r *oldReader) fingerprint(member string, x any) Fingerprint {
	var f Fingerprint
	if s, ok := oldAs[string](r, member, x); ok {
		if err := f.UnmarshalText([]byte(s)); err != nil || f.String() != s {
			r.fail(member, "not a fingerprint in lower-case hex")
		}
	}
	return f
}

func (r *oldReader) strs(member string, x any) []string {
	list, _ := oldAs[[]any](r, member, x)
	out := make([]string, 0, len(list))
	for i, it := range list {
		out = append(out, r.str(member+"/"+strconv.Itoa(i), it))
	}
	return out
}

func (r *oldReader) budget(member string, x any) BudgetSnapshot {
	m, _ := oldAs[map[string]any](r, member, x)
	if r.err == nil && len(m) != 3 {
		r.fail(member, "a budget has exactly gross, limit and refunded")
	}
	return BudgetSnapshot{Limit: r.cost(member+"/limit", m["limit"]), Gross: r.cost(member+"/gross", m["gross"]), Refunded: r.cost(member+"/refunded", m["refunded"])}
}

// action reads an action; idOnly allows the {"id": …} a rejection records
// for an action that was not well formed.
func (r *oldReader) action(member string, x any, idOnly bool) Action {
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

func (r *oldReader) effects(member string, x any) []Effect {
	list, _ := oldAs[[]any](r, member, x)
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

func (r *oldReader) checks(member string, x any) []CheckResult {
	list, _ := oldAs[[]any](r, member, x)
	var out []CheckResult
	for i, it := range list {
		at := member + "/" + strconv.Itoa(i)
		m, _ := oldAs[map[string]any](r, at, it)
		if r.err == nil && len(m) != 4 {
			r.fail(at, "a check has exactly check, name, reason and status")
		}
		c := CheckResult{Check: CheckName(r.str(at+"/check", m["check"])), Name: r.str(at+"/name", m["name"]), Reason: r.str(at+"/reason", m["reason"])}
		c.Status = oldParseStatus(r.str(at+"/status", m["status"]))
		if c.Status == 0 && r.err == nil {
			r.fail(at+"/status", "unknown status %v", m["status"])
		}
		out = append(out, c)
	}
	return out
}

func (r *oldReader) invariants(member string, x any) []Invariant {
	list, _ := oldAs[[]any](r, member, x)
	out := make([]Invariant, 0, len(list))
	for i, it := range list {
		at := member + "/" + strconv.Itoa(i)
		m, _ := oldAs[map[string]any](r, at, it)
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

func (r *oldReader) state(member string, x any) State {
	m, ok := oldAs[map[string]any](r, member, x)
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

func oldParseStatus(s string) Status {
	for st := StatusPassed; st <= StatusSkipped; st++ {
		if statusNames[st] == s {
			return st
		}
	}
	return 0
}
