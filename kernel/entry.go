package kernel

//lint:file-ignore SA5008 internal/strictjson reads these structs: its tag option "optional" (a member that may be absent) is one staticcheck does not know, and strictjson refuses an unknown option itself

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"github.com/verity-go/verity/internal/jsonvalue"
	"github.com/verity-go/verity/kernel/value"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/internal/strictjson"
	"github.com/verity-go/verity/internal/violation"
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
	return e.Record.appendExecuteJSON(dst, e.Session)
}

// appendExecuteJSON is ExecuteEntry{Session: session, Record: *r}.appendJSON.
func (r *Record) appendExecuteJSON(dst []byte, session string) []byte {
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
	dst = canon.AppendString(dst, session)
	dst = append(dst, `,"steps":`...)
	dst = appendCount(dst, r.Steps)
	dst = append(dst, `,"warnings":`...)
	dst = appendChecks(dst, r.Warnings)
	return append(dst, '}')
}

func (e RejectEntry) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"action":`...)
	if e.Action.validate() == nil {
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
	if n <= jsonvalue.MaxSafe {
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
// strictly (internal/strictjson: no duplicate member, valid UTF-8, no
// integer a reader would round, no unknown or missing member; then known
// names, counts, costs and fingerprints in the form the Session writes
// them, an input's digest and size that its bytes have), as the Entry type
// its kind names: StartEntry, ExecuteEntry, RejectEntry, RollbackEntry,
// ReserveEntry, SettleEntry or RefundEntry. A record's Time, Seq and Hash
// are the entry's. An error wraps ErrDecode; a problem within the payload
// names the member by its JSON Pointer.
func DecodeEntry(e trace.Entry) (Entry, error) {
	var (
		out Entry
		err error
	)
	switch e.Kind {
	case KindStart:
		var w startMembers
		if err = decodePayload(e.Payload, &w); err == nil {
			out = w.entry()
		}
	case KindExecute, KindReserve:
		var w executeMembers
		if err = decodePayload(e.Payload, &w); err == nil {
			x := w.entry(e)
			if e.Kind == KindExecute {
				out = x
			} else {
				x.Reserved = true
				out = ReserveEntry(x)
			}
		}
	case KindReject:
		var w rejectMembers
		if err = decodePayload(e.Payload, &w); err == nil {
			out = w.entry()
		}
	case KindRollback:
		var w rollbackMembers
		if err = decodePayload(e.Payload, &w); err == nil {
			out = w.entry(e)
		}
	case KindSettle:
		var w settleMembers
		if err = decodePayload(e.Payload, &w); err == nil {
			out = w.entry(e)
		}
	case KindRefund:
		var w refundMembers
		if err = decodePayload(e.Payload, &w); err == nil {
			out = w.entry(e)
		}
	default:
		return nil, fmt.Errorf("%w: %q is not a kind a session records", ErrDecode, e.Kind)
	}
	if err != nil {
		return nil, &decodeError{where: e.Kind + " payload", err: err}
	}
	return out, nil
}

func decodePayload(payload []byte, w any) error { return strictjson.Unmarshal(payload, w) }

// The members of each payload, as appendJSON writes them. The member
// types read themselves in the one form the Session writes (wCount,
// wCost, wFingerprint, wAction, wEffect, wValue, wState).

type startMembers struct {
	Budget        wCost             `json:"budget"`
	Emergency     []string          `json:"emergency"`
	Invariants    []invariantMember `json:"invariants"`
	MaxSteps      wCount            `json:"max_steps"`
	MinCost       wCost             `json:"min_cost"`
	Preconditions []string          `json:"preconditions"`
	Session       string            `json:"session"`
	State         wState            `json:"state"`
}

type invariantMember struct {
	Enforcement wEnforcement `json:"enforcement"`
	Name        string       `json:"name"`
}

// wEnforcement is an invariant's enforcement by name.
type wEnforcement Enforcement

func (e *wEnforcement) UnmarshalStrict(d *strictjson.Decoder) error {
	name, err := d.ReadStringBytes()
	if err != nil {
		return err
	}
	for _, x := range []Enforcement{EnforcementBlocking, EnforcementMonitoring} {
		if x.String() == string(name) {
			*e = wEnforcement(x)
			return nil
		}
	}
	return d.Errorf("value", "unknown enforcement %q", name)
}

func (w *startMembers) entry() Entry {
	invs := make([]Invariant, len(w.Invariants))
	for i, m := range w.Invariants {
		invs[i] = Invariant{Name: m.Name, Enforcement: Enforcement(m.Enforcement)}
	}
	return StartEntry{
		Session:       w.Session,
		Budget:        Cost(w.Budget),
		MinCost:       Cost(w.MinCost),
		MaxSteps:      uint64(w.MaxSteps),
		Emergency:     w.Emergency,
		Invariants:    invs,
		Preconditions: w.Preconditions,
		State:         w.State.s,
	}
}

type executeMembers struct {
	Action         wAction        `json:"action"`
	After          wFingerprint   `json:"after"`
	Before         wFingerprint   `json:"before"`
	Budget         budgetMembers  `json:"budget"`
	Emergency      bool           `json:"emergency"`
	EmergencySteps wCount         `json:"emergency_steps"`
	Exec           string         `json:"exec"`
	Input          *inputMembers  `json:"input,omitempty"`
	Inverse        []wEffect      `json:"inverse"`
	Session        string         `json:"session"`
	Steps          wCount         `json:"steps"`
	Warnings       []checkMembers `json:"warnings"`
}

func (w *executeMembers) entry(e trace.Entry) ExecuteEntry {
	a := w.Action.a
	in := w.Input.recorded()
	a.Input = in.data
	return ExecuteEntry{Session: w.Session, Record: Record{
		ExecID:         w.Exec,
		Action:         a,
		InputDigest:    in.digest,
		InputSize:      in.size,
		Emergency:      w.Emergency,
		Before:         Fingerprint(w.Before),
		After:          Fingerprint(w.After),
		Inverse:        effects(w.Inverse),
		Budget:         w.Budget.snapshot(),
		Steps:          uint64(w.Steps),
		EmergencySteps: uint64(w.EmergencySteps),
		Warnings:       checks(w.Warnings),
		Time:           e.Time,
		Seq:            e.Seq,
		Hash:           e.Hash,
	}}
}

type rejectMembers struct {
	Action    wRejectedAction `json:"action"`
	Budget    budgetMembers   `json:"budget"`
	Checks    []checkMembers  `json:"checks"`
	Emergency bool            `json:"emergency"`
	Input     *inputMembers   `json:"input,omitempty"`
	Session   string          `json:"session"`
	State     wFingerprint    `json:"state"`
	Steps     wCount          `json:"steps"`
}

func (w *rejectMembers) entry() Entry {
	a := w.Action.a
	in := w.Input.recorded()
	a.Input = in.data
	return RejectEntry{
		InputDigest: in.digest,
		InputSize:   in.size,
		Session:     w.Session,
		Action:      a,
		Emergency:   w.Emergency,
		Checks:      checks(w.Checks),
		Budget:      w.Budget.snapshot(),
		State:       Fingerprint(w.State),
		Steps:       uint64(w.Steps),
	}
}

type rollbackMembers struct {
	After   wFingerprint  `json:"after"`
	Before  wFingerprint  `json:"before"`
	Budget  budgetMembers `json:"budget"`
	Effects []wEffect     `json:"effects"`
	Exec    string        `json:"exec"`
	Refund  wCost         `json:"refund"`
	Session string        `json:"session"`
	Steps   wCount        `json:"steps"`
}

func (w *rollbackMembers) entry(e trace.Entry) Entry {
	return RollbackEntry{Session: w.Session, RollbackRecord: RollbackRecord{
		ExecID:  w.Exec,
		Refund:  Cost(w.Refund),
		Before:  Fingerprint(w.Before),
		After:   Fingerprint(w.After),
		Effects: effects(w.Effects),
		Budget:  w.Budget.snapshot(),
		Steps:   uint64(w.Steps),
		Time:    e.Time,
		Seq:     e.Seq,
		Hash:    e.Hash,
	}}
}

type settleMembers struct {
	Actual   wCost         `json:"actual"`
	Budget   budgetMembers `json:"budget"`
	Exec     string        `json:"exec"`
	Overrun  wCost         `json:"overrun"`
	Refund   wCost         `json:"refund"`
	Reserved wCost         `json:"reserved"`
	Session  string        `json:"session"`
	Unpaid   wCost         `json:"unpaid"`
}

func (w *settleMembers) entry(e trace.Entry) Entry {
	return SettleEntry{Session: w.Session, SettleRecord: SettleRecord{
		ExecID:   w.Exec,
		Reserved: Cost(w.Reserved),
		Actual:   Cost(w.Actual),
		Refund:   Cost(w.Refund),
		Overrun:  Cost(w.Overrun),
		Unpaid:   Cost(w.Unpaid),
		Budget:   w.Budget.snapshot(),
		Time:     e.Time,
		Seq:      e.Seq,
		Hash:     e.Hash,
	}}
}

type refundMembers struct {
	Amount  wCost         `json:"amount"`
	Budget  budgetMembers `json:"budget"`
	Exec    string        `json:"exec"`
	Reason  string        `json:"reason"`
	Session string        `json:"session"`
}

func (w *refundMembers) entry(e trace.Entry) Entry {
	return RefundEntry{Session: w.Session, RefundRecord: RefundRecord{
		ExecID: w.Exec,
		Amount: Cost(w.Amount),
		Reason: w.Reason,
		Budget: w.Budget.snapshot(),
		Time:   e.Time,
		Seq:    e.Seq,
		Hash:   e.Hash,
	}}
}

type budgetMembers struct {
	Gross    wCost `json:"gross"`
	Limit    wCost `json:"limit"`
	Refunded wCost `json:"refunded"`
}

func (b budgetMembers) snapshot() BudgetSnapshot {
	return BudgetSnapshot{Limit: Cost(b.Limit), Gross: Cost(b.Gross), Refunded: Cost(b.Refunded)}
}

type checkMembers struct {
	Check  string  `json:"check"`
	Name   string  `json:"name"`
	Reason string  `json:"reason"`
	Status wStatus `json:"status"`
}

// checks returns the recorded checks (nil for none, as a Session holds
// them).
func checks(ms []checkMembers) []CheckResult {
	if len(ms) == 0 {
		return nil
	}
	out := make([]CheckResult, len(ms))
	for i, m := range ms {
		out[i] = CheckResult{Check: CheckName(m.Check), Name: m.Name, Reason: m.Reason, Status: Status(m.Status)}
	}
	return out
}

func effects(ws []wEffect) []Effect {
	out := make([]Effect, len(ws))
	for i, w := range ws {
		out[i] = w.e
	}
	return out
}

// inputMembers is a call's input as appendInput writes it: a digest, a
// size and at most one of base64 and text.
type inputMembers struct {
	Base64 wOptString   `json:"base64,omitempty"`
	Digest wFingerprint `json:"digest"`
	Size   wCount       `json:"size"`
	Text   wOptString   `json:"text,omitempty"`
}

// recordedInput is a call's input as an entry records it.
type recordedInput struct {
	data   []byte
	digest trace.Hash
	size   int
}

func (m *inputMembers) recorded() recordedInput {
	if m == nil {
		return recordedInput{}
	}
	return recordedInput{data: m.data(), digest: trace.Hash(m.Digest), size: int(m.Size)}
}

func (m *inputMembers) data() []byte {
	switch {
	case m.Text.set:
		return []byte(m.Text.s)
	case m.Base64.set:
		b, _ := base64.StdEncoding.Strict().DecodeString(m.Base64.s)
		return b
	}
	return nil
}

// UnmarshalStrict reads an input member: the digest and size must be
// those of the bytes when they are there, and the bytes in the one form
// appendInput chooses for them.
func (m *inputMembers) UnmarshalStrict(d *strictjson.Decoder) error {
	type plain inputMembers
	if err := d.Decode((*plain)(m)); err != nil {
		return err
	}
	if m.Text.set && m.Base64.set {
		return d.Errorf("value", "an input has a digest, a size and at most one of base64 and text")
	}
	// The bytes beyond the input limit are not in the entry, so the size
	// is bounded only by what a count written as a JSON number (and an
	// int) can hold.
	if m.Size == 0 || uint64(m.Size) > min(jsonvalue.MaxSafe, math.MaxInt) {
		return d.Errorf("value", "size %d out of range", m.Size)
	}
	if m.Base64.set {
		data, err := base64.StdEncoding.Strict().DecodeString(m.Base64.s)
		switch {
		case err != nil || base64.StdEncoding.EncodeToString(data) != m.Base64.s:
			return d.Errorf("value", "base64 not canonical")
		case utf8.Valid(data):
			return d.Errorf("value", "valid UTF-8 is recorded as text")
		}
	}
	if data := m.data(); data != nil && (len(data) != int(m.Size) || sha256.Sum256(data) != m.Digest) {
		return d.Errorf("value", "the recorded bytes do not have the recorded digest and size")
	}
	return nil
}

// wOptString is an optional string member: absent, or a string (not
// null).
type wOptString struct {
	s   string
	set bool
}

func (o *wOptString) UnmarshalStrict(d *strictjson.Decoder) error {
	s, err := d.ReadString()
	o.s, o.set = s, err == nil
	return err
}

// wCount is a count as appendCount writes it: a number up to 2^53−1, a
// decimal string beyond.
type wCount uint64

func (c *wCount) UnmarshalStrict(d *strictjson.Decoder) error {
	var text []byte
	number := false
	switch d.Peek() {
	case strictjson.Number:
		lit, _, err := d.ReadNumber()
		if err != nil {
			return err
		}
		text, number = lit, true
	case strictjson.String:
		s, err := d.ReadStringBytes()
		if err != nil {
			return err
		}
		text = s
	default:
		return d.Errorf(violation.RuleType, "want a count, got %s", d.Peek())
	}
	n, ok := jsonvalue.ParseCount(text)
	if !ok || number != (n <= jsonvalue.MaxSafe) {
		return d.Errorf("value", "not a count as the session writes it: %s", text)
	}
	*c = wCount(n)
	return nil
}

// wCost is a cost as appendCost writes it: its exact decimal string.
type wCost Cost

func (c *wCost) UnmarshalStrict(d *strictjson.Decoder) error {
	s, err := d.ReadString()
	if err != nil {
		return err
	}
	v, err := ParseCost(s)
	if err != nil {
		return d.Fail("value", err)
	}
	if v.String() != s {
		return d.Errorf("value", "cost %q is not written %q", s, v.String())
	}
	*c = wCost(v)
	return nil
}

// wFingerprint is a fingerprint or digest in lower-case hex.
type wFingerprint Fingerprint

func (f *wFingerprint) UnmarshalStrict(d *strictjson.Decoder) error {
	s, err := d.ReadStringBytes()
	if err != nil {
		return err
	}
	if len(s) != 2*len(f) {
		return d.Errorf("value", "not a fingerprint in lower-case hex")
	}
	for i := range f {
		hi, lo := lowerHex(s[2*i]), lowerHex(s[2*i+1])
		if hi < 0 || lo < 0 {
			return d.Errorf("value", "not a fingerprint in lower-case hex")
		}
		f[i] = byte(hi<<4 | lo)
	}
	return nil
}

func lowerHex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	}
	return -1
}

// wStatus is a check's status by name.
type wStatus Status

func (s *wStatus) UnmarshalStrict(d *strictjson.Decoder) error {
	name, err := d.ReadStringBytes()
	if err != nil {
		return err
	}
	for st := StatusPassed; st <= StatusSkipped; st++ {
		if statusNames[st] == string(name) {
			*s = wStatus(st)
			return nil
		}
	}
	return d.Errorf("value", "unknown status %q", name)
}

// actionMembers are the members of an action (see DecodeAction), every
// one optional.
type actionMembers struct {
	Category      string    `json:"category,optional"`
	Cost          wLaxCost  `json:"cost,optional"`
	Description   string    `json:"description,optional"`
	Effects       []wEffect `json:"effects,optional"`
	ID            string    `json:"id,optional"`
	Name          string    `json:"name,optional"`
	Postcondition string    `json:"postcondition,optional"`
	Precondition  string    `json:"precondition,optional"`
	Reversible    bool      `json:"reversible,optional"`
	Tags          []string  `json:"tags,optional"`
}

func (m *actionMembers) action() (Action, error) {
	a := Action{
		ID: m.ID, Name: m.Name, Description: m.Description, Category: m.Category,
		Precondition: m.Precondition, Postcondition: m.Postcondition,
		Reversible: m.Reversible, Cost: Cost(m.Cost),
	}
	if len(m.Tags) > 0 {
		a.Tags = m.Tags
	}
	if len(m.Effects) > 0 {
		a.Effects = effects(m.Effects)
	}
	return a, a.validate()
}

// wLaxCost is an action's cost: a decimal number or string, exact.
type wLaxCost Cost

func (c *wLaxCost) UnmarshalStrict(d *strictjson.Decoder) error {
	var text string
	switch d.Peek() {
	case strictjson.Number:
		lit, _, err := d.ReadNumber()
		if err != nil {
			return err
		}
		text = string(lit)
	case strictjson.String:
		s, err := d.ReadString()
		if err != nil {
			return err
		}
		text = s
	default:
		return d.Errorf(violation.RuleType, "want a number or a decimal string, got %s", d.Peek())
	}
	v, err := ParseCost(text)
	if err != nil {
		return d.Fail("value", err)
	}
	*c = wLaxCost(v)
	return nil
}

// wAction is a valid action.
type wAction struct{ a Action }

func (w *wAction) UnmarshalStrict(d *strictjson.Decoder) error {
	var m actionMembers
	if err := d.Decode(&m); err != nil {
		return err
	}
	a, err := m.action()
	if err != nil {
		return d.Fail("value", err)
	}
	w.a = a
	return nil
}

// wRejectedAction is a valid action, or the {"id": …} a rejection records
// for an action that was not well formed.
type wRejectedAction struct{ a Action }

func (w *wRejectedAction) UnmarshalStrict(d *strictjson.Decoder) error {
	start := d.Offset()
	n := 0
	if err := d.Object(func(string) error { n++; return d.Skip() }); err != nil {
		return err
	}
	d.Rewind(start)
	if n != 1 {
		var a wAction
		err := a.UnmarshalStrict(d)
		w.a = a.a
		return err
	}
	var id struct {
		ID string `json:"id"`
	}
	err := d.Decode(&id)
	w.a = Action{ID: id.ID}
	return err
}

// effectMembers are the members of an effect: op and key, a value unless
// the op is delete, an initial value for count only.
type effectMembers struct {
	Initial wValue `json:"initial,optional"`
	Key     string `json:"key"`
	Op      string `json:"op"`
	Value   wValue `json:"value,optional"`
}

// wEffect is a valid effect.
type wEffect struct{ e Effect }

func (w *wEffect) UnmarshalStrict(d *strictjson.Decoder) error {
	var m effectMembers
	if err := d.Decode(&m); err != nil {
		return err
	}
	op, err := parseOp(m.Op)
	if err != nil {
		return d.Fail("value", err)
	}
	switch {
	case op != OpDelete && !m.Value.set:
		return d.Fail("value", fmt.Errorf("%w: %s needs a value", ErrDecode, op))
	case m.Initial.set && op != OpCount:
		return d.Fail("value", fmt.Errorf("%w: only count takes an initial value", ErrDecode))
	case !m.Initial.set && op == OpCount:
		return d.Fail("value", fmt.Errorf("%w: count needs an initial value", ErrDecode))
	}
	e := Effect{Op: op, Key: m.Key, Value: m.Value.v, Initial: m.Initial.v}
	if err := e.validate(); err != nil {
		return d.Fail("value", err)
	}
	w.e = e
	return nil
}

// wValue is a typed-JSON value (see value.Value.MarshalJSON), and whether the
// member was there.
type wValue struct {
	v   value.Value
	set bool
}

func (w *wValue) UnmarshalStrict(d *strictjson.Decoder) error {
	v, err := jsonvalue.Read(d)
	w.v, w.set = value.Value(v), err == nil
	return err
}

// wState is a state: an object of variable → typed value.
type wState struct{ s State }

func (w *wState) UnmarshalStrict(d *strictjson.Decoder) error {
	keys, vals, err := jsonvalue.ReadMembers(d)
	if err != nil {
		return err
	}
	b := newBuilder(State{})
	for i, k := range keys {
		b.set(k, value.Value(vals[i]))
	}
	w.s = b.state()
	return nil
}
