package kernel

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/trace"
)

// Trace entry kinds written by a Session, one per Entry type.
const (
	KindStart    = "kernel.start"    // StartEntry: the configuration and the initial state
	KindExecute  = "kernel.execute"  // ExecuteEntry: a committed execution
	KindReject   = "kernel.reject"   // RejectEntry: a rejection, with every check
	KindRollback = "kernel.rollback" // RollbackEntry: a rollback
	KindReserve  = "kernel.reserve"  // ReserveEntry: a committed reservation
	KindSettle   = "kernel.settle"   // SettleEntry: a reservation's actual cost
	KindRefund   = "kernel.refund"   // RefundEntry: a refund, budget only
)

// Entry is the payload of one trace entry a Session records: a StartEntry,
// ExecuteEntry, RejectEntry, RollbackEntry, ReserveEntry, SettleEntry or
// RefundEntry. DecodeEntry reads one back; Replay re-executes them.
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
// committed execution (its Time, Seq and Hash are the entry's). An action
// with an Input has an "input" member: its digest, its size and, within
// the session's input limit, its bytes — as a string ("text") when they
// are valid UTF-8, else in base64 ("base64"). Without the bytes, the
// decoded Action.Input is nil.
type ExecuteEntry struct {
	Session string
	Record
}

// ReserveEntry is the payload of a KindReserve entry: the Record of a
// committed reservation (Record.Reserved), written as an ExecuteEntry.
type ReserveEntry struct {
	Session string
	Record
}

// SettleEntry is the payload of a KindSettle entry: a SettleRecord (its
// Time, Seq and Hash are the entry's).
type SettleEntry struct {
	Session string
	SettleRecord
}

// RefundEntry is the payload of a KindRefund entry: a RefundRecord (its
// Time, Seq and Hash are the entry's).
type RefundEntry struct {
	Session string
	RefundRecord
}

// RejectEntry is the payload of a KindReject entry: the rejected action
// (only its ID when it was not well formed), every check of the Verdict
// (an Err is recorded as its Reason only), the state, budget and steps it
// was made in, and the action's Input as an ExecuteEntry records it.
type RejectEntry struct {
	Session     string
	Action      Action
	Emergency   bool
	Checks      []CheckResult
	Budget      BudgetSnapshot
	State       Fingerprint
	Steps       uint64
	InputDigest trace.Hash
	InputSize   int
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
func (ReserveEntry) kind() string  { return KindReserve }
func (SettleEntry) kind() string   { return KindSettle }
func (RefundEntry) kind() string   { return KindRefund }

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
	dst = appendInput(dst, r.Action.Input, r.InputDigest, r.InputSize)
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
	dst = appendInput(dst, e.Action.Input, e.InputDigest, e.InputSize)
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

func (e ReserveEntry) appendJSON(dst []byte) []byte {
	return ExecuteEntry(e).appendJSON(dst)
}

func (e SettleEntry) appendJSON(dst []byte) []byte {
	r := &e.SettleRecord
	dst = append(dst, `{"actual":`...)
	dst = appendCost(dst, r.Actual)
	dst = append(dst, `,"budget":`...)
	dst = appendBudget(dst, r.Budget)
	dst = append(dst, `,"exec":`...)
	dst = canon.AppendString(dst, r.ExecID)
	dst = append(dst, `,"overrun":`...)
	dst = appendCost(dst, r.Overrun)
	dst = append(dst, `,"refund":`...)
	dst = appendCost(dst, r.Refund)
	dst = append(dst, `,"reserved":`...)
	dst = appendCost(dst, r.Reserved)
	dst = append(dst, `,"session":`...)
	dst = canon.AppendString(dst, e.Session)
	dst = append(dst, `,"unpaid":`...)
	dst = appendCost(dst, r.Unpaid)
	return append(dst, '}')
}

func (e RefundEntry) appendJSON(dst []byte) []byte {
	r := &e.RefundRecord
	dst = append(dst, `{"amount":`...)
	dst = appendCost(dst, r.Amount)
	dst = append(dst, `,"budget":`...)
	dst = appendBudget(dst, r.Budget)
	dst = append(dst, `,"exec":`...)
	dst = canon.AppendString(dst, r.ExecID)
	dst = append(dst, `,"reason":`...)
	dst = canon.AppendString(dst, validUTF8(r.Reason))
	dst = append(dst, `,"session":`...)
	dst = canon.AppendString(dst, e.Session)
	return append(dst, '}')
}

// appendInput writes the member ,"input":{…} of a call's input (nothing
// when size is 0): its base64 or text when data holds it, its digest and
// size.
func appendInput(dst, data []byte, digest trace.Hash, size int) []byte {
	if size == 0 {
		return dst
	}
	dst = append(dst, `,"input":{`...)
	text := utf8.Valid(data)
	if data != nil && !text {
		dst = append(dst, `"base64":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, data)
		dst = append(dst, `",`...)
	}
	dst = append(dst, `"digest":`...)
	dst = appendFP(dst, Fingerprint(digest))
	dst = append(dst, `,"size":`...)
	dst = appendCount(dst, uint64(size))
	if data != nil && text {
		dst = append(dst, `,"text":`...)
		dst = canon.AppendString(dst, data)
	}
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
// them, an input's digest and size that its bytes have), as the Entry type
// its kind names: StartEntry, ExecuteEntry, RejectEntry, RollbackEntry,
// ReserveEntry, SettleEntry or RefundEntry. A record's Time, Seq and Hash
// are the entry's. An entry of another kind is an error wrapping
// ErrDecode.
func DecodeEntry(e trace.Entry) (Entry, error) {
	var (
		out Entry
		err error
	)
	switch e.Kind {
	case KindStart:
		out, err = decodeMembers(e.Payload, &startWire{}, (*startWire).entry)
	case KindExecute:
		out, err = decodeMembers(e.Payload, &executeWire{}, func(w *executeWire, r *reader) Entry { return w.entry(r, e) })
	case KindReject:
		out, err = decodeMembers(e.Payload, &rejectWire{}, (*rejectWire).entry)
	case KindRollback:
		out, err = decodeMembers(e.Payload, &rollbackWire{}, func(w *rollbackWire, r *reader) Entry { return w.entry(r, e) })
	case KindReserve:
		out, err = decodeMembers(e.Payload, &executeWire{}, func(w *executeWire, r *reader) Entry {
			x := w.entry(r, e).(ExecuteEntry)
			x.Reserved = true
			return ReserveEntry(x)
		})
	case KindSettle:
		out, err = decodeMembers(e.Payload, &settleWire{}, func(w *settleWire, r *reader) Entry { return w.entry(r, e) })
	case KindRefund:
		out, err = decodeMembers(e.Payload, &refundWire{}, func(w *refundWire, r *reader) Entry { return w.entry(r, e) })
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
	Input          any `json:"input"`
	Inverse        any `json:"inverse"`
	Session        any `json:"session"`
	Steps          any `json:"steps"`
	Warnings       any `json:"warnings"`
}

func (w *executeWire) entry(r *reader, e trace.Entry) Entry {
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

type rejectWire struct {
	Action    any `json:"action"`
	Budget    any `json:"budget"`
	Checks    any `json:"checks"`
	Emergency any `json:"emergency"`
	Input     any `json:"input"`
	Session   any `json:"session"`
	State     any `json:"state"`
	Steps     any `json:"steps"`
}

func (w *rejectWire) entry(r *reader) Entry {
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

func (w *rollbackWire) entry(r *reader, e trace.Entry) Entry {
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

type settleWire struct {
	Actual   any `json:"actual"`
	Budget   any `json:"budget"`
	Exec     any `json:"exec"`
	Overrun  any `json:"overrun"`
	Refund   any `json:"refund"`
	Reserved any `json:"reserved"`
	Session  any `json:"session"`
	Unpaid   any `json:"unpaid"`
}

func (w *settleWire) entry(r *reader, e trace.Entry) Entry {
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

type refundWire struct {
	Amount  any `json:"amount"`
	Budget  any `json:"budget"`
	Exec    any `json:"exec"`
	Reason  any `json:"reason"`
	Session any `json:"session"`
}

func (w *refundWire) entry(r *reader, e trace.Entry) Entry {
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

// recordedInput is a call's input as an entry records it.
type recordedInput struct {
	data   []byte
	digest trace.Hash
	size   int
}

// input reads an input member as appendInput writes it (absent: no
// input): the digest and size must be those of the bytes when they are
// there, and the bytes in the one form appendInput chooses for them.
func (r *reader) input(member string, x any) recordedInput {
	var in recordedInput
	if x == nil {
		return in
	}
	m, ok := as[map[string]any](r, member, x)
	if !ok {
		return in
	}
	text, hasText := m["text"]
	b64, hasB64 := m["base64"]
	if len(m) != 2+btoi(hasText)+btoi(hasB64) || (hasText && hasB64) {
		r.fail(member, "an input has a digest, a size and at most one of base64 and text")
		return in
	}
	in.digest = trace.Hash(r.fingerprint(member+"/digest", m["digest"]))
	size := r.count(member+"/size", m["size"])
	// The bytes beyond the input limit are not in the entry, so the size
	// is bounded only by what a count written as a JSON number (and an int)
	// can hold.
	if r.err == nil && (size == 0 || size > min(maxSafe, math.MaxInt)) {
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

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
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
