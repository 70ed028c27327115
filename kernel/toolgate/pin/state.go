package pin

import (
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// Source says how a tool's definition came to be pinned.
type Source string

const (
	// SourceLock: a lock file named it (State.LockLoaded).
	SourceLock Source = "lock"
	// SourceFirstUse: the server listed it first, with no lock file
	// loaded (trust on first use).
	SourceFirstUse Source = "first_use"
	// SourceRepin: a person re-approved it (State.Repin).
	SourceRepin Source = "re_pin"
)

// The Change of a gatelog.Drift.
const (
	Changed      = "changed"      // listed at another hash than its pin
	New          = "new"          // listed, and not pinned
	Removed      = "removed"      // pinned (or seen), and no longer listed
	Restored     = "restored"     // listed at its pinned hash again
	Instructions = "instructions" // the server's instructions differ from their pin
)

// Pin is what a tool is pinned to: the hash of its definition, how it was
// pinned and, for a re-pin, who approved it.
type Pin struct {
	Hash     string
	Source   Source
	Approver string
}

// Listing is what a server offers, as the host read it: its name (as the
// host calls it: the lock file's key), the hash of its instructions
// (HashInstructions; "" when it gave none) and its tools (ParseTools,
// every page of tools/list).
type Listing struct {
	Server       string
	Instructions string
	Tools        []Tool
}

// Entry is an entry a step asks the host to append to the log, as Kind
// and canonical Payload (trace.Log.Append(ctx, e.Kind, e.Payload)). The
// step's State holds once they are appended: a host that cannot append
// them keeps the State it had.
type Entry struct {
	Kind    string
	Payload []byte
}

// Outcome is what a step produced: the entries to append, in order, and
// Drift, every difference between the server's current definitions and
// their pins after the step (not only the new ones): the tools to hide
// from tools/list and to refuse. Entries record only what the log did not
// say yet, so that listing the same tools again writes nothing.
type Outcome struct {
	Entries []Entry
	Drift   []gatelog.Drift
}

// State is the pins of every server a host gates, and what their last
// listings showed where it differs from the pins. It is a value: each
// step returns a new State and leaves the old one as it was. The zero
// State has no pins, and trusts each server's first listing.
//
// A State changes only by applying pin entries (gatelog.KindPin,
// KindDrift, KindRepin): each step computes its entries and applies them
// as Apply does, so that Replay of a log rebuilds exactly the live State.
type State struct {
	servers map[string]*server
	// locked: a lock file was loaded; no server is then trusted on
	// first use.
	locked bool
}

// server is one server's pins; a step copies the server it changes.
type server struct {
	pins         map[string]Pin
	instructions string // the pinned instructions' hash
	// seen holds, for each tool whose last recorded listing differs from
	// its pin, the hash that listing showed ("" for a pinned tool no
	// longer listed). A tool at its pin is absent.
	seen map[string]string
	// seenInstructions is the instructions last recorded, when they
	// differ from the pinned ones (drifted).
	seenInstructions string
	drifted          bool
}

func (sv *server) clone() *server {
	c := *sv
	c.pins = maps.Clone(sv.pins)
	c.seen = maps.Clone(sv.seen)
	if c.pins == nil {
		c.pins = map[string]Pin{}
	}
	if c.seen == nil {
		c.seen = map[string]string{}
	}
	return &c
}

// current is the hash the log last recorded for tool: its seen hash when
// drifted, else its pin; ok is false for a tool the log knows nothing of
// (or one no longer listed that had no pin).
func (sv *server) current(tool string) (string, bool) {
	if h, ok := sv.seen[tool]; ok {
		return h, h != ""
	}
	p, ok := sv.pins[tool]
	return p.Hash, ok
}

// Locked reports whether a lock file was loaded: no server is then
// trusted on first use.
func (s State) Locked() bool { return s.locked }

// Pins returns server's pins by tool name (a copy), and its pinned
// instructions' hash.
func (s State) Pins(server string) (map[string]Pin, string) {
	sv := s.servers[server]
	if sv == nil {
		return map[string]Pin{}, ""
	}
	return maps.Clone(sv.pins), sv.instructions
}

// RefusedError is Check's refusal of a call: the tool is not pinned, or
// its definition as last listed (Seen, "" when the server no longer lists
// it) is not the pinned one (Pinned, "" when there is none).
type RefusedError struct {
	Server, Tool string
	Pinned, Seen string
	Change       string // Changed, New, Removed, or "" for a tool never listed nor pinned
}

func (e *RefusedError) Error() string {
	switch e.Change {
	case Changed:
		return fmt.Sprintf("pin: tool %q of server %q changed: its definition is %s, pinned %s; a person must re-approve it", e.Tool, e.Server, e.Seen, e.Pinned)
	case New:
		return fmt.Sprintf("pin: tool %q of server %q is not pinned: its definition %s is new (pinned none); a person must approve it", e.Tool, e.Server, e.Seen)
	case Removed:
		return fmt.Sprintf("pin: tool %q of server %q is no longer listed by the server (pinned %s, seen none)", e.Tool, e.Server, cmpNone(e.Pinned))
	}
	return fmt.Sprintf("pin: tool %q of server %q is neither pinned nor listed (pinned none, seen none)", e.Tool, e.Server)
}

func cmpNone(h string) string {
	if h == "" {
		return "none"
	}
	return h
}

// Check is asked before each call of tool on server: it returns the
// pinned hash of the definition the call runs against (to record as
// toolgate.Call.Definition), or a *RefusedError naming the tool and both
// hashes when the definition the server last listed is not pinned. It
// reads the State only.
func (s State) Check(server, tool string) (string, error) {
	sv := s.servers[server]
	if sv == nil {
		return "", &RefusedError{Server: server, Tool: tool}
	}
	p, pinned := sv.pins[tool]
	seen, drifted := sv.seen[tool]
	switch {
	case pinned && !drifted:
		return p.Hash, nil
	case !pinned && seen != "":
		return "", &RefusedError{Server: server, Tool: tool, Seen: seen, Change: New}
	case !pinned:
		return "", &RefusedError{Server: server, Tool: tool}
	case seen == "":
		return "", &RefusedError{Server: server, Tool: tool, Pinned: p.Hash, Change: Removed}
	}
	return "", &RefusedError{Server: server, Tool: tool, Pinned: p.Hash, Seen: seen, Change: Changed}
}

// Listed is the step of a listing (at start, on every tools/list, on
// notifications/tools/list_changed, after a reconnect): a server seen
// for the first time with no lock file loaded is pinned to it
// (SourceFirstUse); otherwise each difference from what the log last
// said is recorded as a drift. Outcome.Drift then lists every tool not at
// its pin.
func (s State) Listed(l Listing) (State, Outcome) {
	var recs []any
	if l.Instructions != "" && !ValidHash(l.Instructions) {
		l.Instructions = digest([]byte(l.Instructions))
	}
	sv := s.servers[l.Server]
	if sv == nil && !s.locked {
		p := gatelog.Pin{Server: l.Server, Source: string(SourceFirstUse), Tools: make(map[string]string, len(l.Tools)), Instructions: l.Instructions}
		for _, t := range l.Tools {
			if ValidHash(t.Hash) && t.Name != "" {
				p.Tools[t.Name] = t.Hash
			}
		}
		recs = append(recs, p)
	} else {
		if sv == nil {
			sv = &server{}
		}
		listed := make(map[string]string, len(l.Tools))
		for _, t := range l.Tools {
			if ValidHash(t.Hash) && t.Name != "" { // a tool without a hash or name is not listed: unpinned
				listed[t.Name] = t.Hash
			}
		}
		for _, name := range slices.Sorted(maps.Keys(listed)) {
			h := listed[name]
			cur, known := sv.current(name)
			if known && cur == h {
				continue
			}
			d := gatelog.Drift{Server: l.Server, Tool: name, Seen: h}
			p, pinned := sv.pins[name]
			switch {
			case !pinned:
				d.Change = New
			case p.Hash == h:
				d.Change, d.Pinned = Restored, p.Hash
			default:
				d.Change, d.Pinned = Changed, p.Hash
			}
			recs = append(recs, d)
		}
		gone := map[string]bool{}
		for name := range sv.pins {
			gone[name] = true
		}
		for name := range sv.seen {
			gone[name] = true
		}
		for _, name := range slices.Sorted(maps.Keys(gone)) {
			if _, ok := listed[name]; ok {
				continue
			}
			if _, known := sv.current(name); !known {
				continue
			}
			recs = append(recs, gatelog.Drift{Server: l.Server, Tool: name, Change: Removed, Pinned: sv.pins[name].Hash})
		}
		curInstr := sv.instructions
		if sv.drifted {
			curInstr = sv.seenInstructions
		}
		if l.Instructions != curInstr {
			recs = append(recs, gatelog.Drift{Server: l.Server, Change: Instructions, Pinned: sv.instructions, Seen: l.Instructions})
		}
	}
	next, out := s.commit(recs)
	out.Drift = next.drift(l.Server)
	return next, out
}

// drift lists every difference of server from its pins, by tool name
// (the instructions first).
func (s State) drift(name string) []gatelog.Drift {
	sv := s.servers[name]
	if sv == nil {
		return nil
	}
	var out []gatelog.Drift
	if sv.drifted && sv.seenInstructions != sv.instructions {
		out = append(out, gatelog.Drift{Server: name, Change: Instructions, Pinned: sv.instructions, Seen: sv.seenInstructions})
	}
	for _, tool := range slices.Sorted(maps.Keys(sv.seen)) {
		seen := sv.seen[tool]
		p, pinned := sv.pins[tool]
		d := gatelog.Drift{Server: name, Tool: tool, Pinned: p.Hash, Seen: seen}
		switch {
		case !pinned:
			d.Change = New
		case seen == "":
			d.Change = Removed
		default:
			d.Change = Changed
		}
		out = append(out, d)
	}
	return out
}

// LockLoaded is the step of a lock file loaded: each server it names is
// pinned to it (SourceLock), replacing its pins and forgetting what its
// listings showed (list it again), and from then on no server is trusted
// on first use — a server the lock does not name has every tool
// unpinned (one pinned before is recorded so). A lock file replaces
// re-pins recorded before it: record an approved change in the lock file
// too, and let a host that restarts with the lock file it loaded last
// (the Lock of its last pin entry, Lock.Digest) not load it again.
func (s State) LockLoaded(l Lock) (State, Outcome) {
	lockDigest := l.Digest()
	var recs []any
	for _, name := range slices.Sorted(maps.Keys(l.Servers)) {
		sl := l.Servers[name]
		p := gatelog.Pin{Server: name, Source: string(SourceLock), Tools: map[string]string{}, Lock: lockDigest}
		for tool, h := range sl.Tools {
			if ValidHash(h) && tool != "" { // what ParseLock refuses is left unpinned
				p.Tools[tool] = h
			}
		}
		if ValidHash(sl.Instructions) {
			p.Instructions = sl.Instructions
		}
		recs = append(recs, p)
	}
	for _, name := range slices.Sorted(maps.Keys(s.servers)) {
		if _, named := l.Servers[name]; !named { // pinned before, by first use or another lock
			recs = append(recs, gatelog.Pin{Server: name, Source: string(SourceLock), Tools: map[string]string{}, Lock: lockDigest})
		}
	}
	return s.commit(recs)
}

// Approval is a person's re-approval of one tool's definition: from Old
// (the pinned hash, "" for a new tool) to New (the hash the server lists
// now, the definition the approver was shown). Approver is who approves
// (a principal's key, as for calls); RequestedBy, the principal whose
// call asked for it, may not approve it.
type Approval struct {
	Server, Tool string
	Old, New     string
	Approver     string
	RequestedBy  string
	Reason       string
}

// The refusals of Repin.
var (
	// ErrSelfApproval: the approver is the principal whose call asked
	// for the re-pin.
	ErrSelfApproval = errors.New("pin: the principal who asked may not approve their own re-pin")
	// ErrStaleApproval: the approval is not of the tool's present state —
	// its pin is no longer Old, or the server no longer lists it at New,
	// or there is nothing to approve (no approver, a tool at its pin).
	ErrStaleApproval = errors.New("pin: the approval does not match the tool's present definitions")
)

// Repin is the step of a person's re-approval: the tool is pinned to New
// (SourceRepin), recorded with the approver and the reason. It is
// refused, changing nothing, when the approver asked for it themself
// (ErrSelfApproval), or when Old and New are not the tool's pinned and
// last listed hashes (ErrStaleApproval): what the approver saw is
// exactly what is pinned.
func (s State) Repin(a Approval) (State, Outcome, error) {
	a.Approver, a.RequestedBy = strings.ToValidUTF8(a.Approver, "\uFFFD"), strings.ToValidUTF8(a.RequestedBy, "\uFFFD")
	sv := s.servers[a.Server]
	switch {
	case a.Approver == "":
		return s, Outcome{}, fmt.Errorf("%w: no approver", ErrStaleApproval)
	case a.Approver == a.RequestedBy:
		return s, Outcome{}, fmt.Errorf("%w: %q", ErrSelfApproval, a.Approver)
	case sv == nil:
		return s, Outcome{}, fmt.Errorf("%w: server %q was never listed", ErrStaleApproval, a.Server)
	}
	seen, drifted := sv.seen[a.Tool]
	if !drifted || seen == "" {
		return s, Outcome{}, fmt.Errorf("%w: tool %q of server %q is at its pin or not listed", ErrStaleApproval, a.Tool, a.Server)
	}
	if sv.pins[a.Tool].Hash != a.Old || seen != a.New {
		return s, Outcome{}, fmt.Errorf("%w: tool %q of server %q is pinned %s and listed %s, the approval is of %s to %s",
			ErrStaleApproval, a.Tool, a.Server, cmpNone(sv.pins[a.Tool].Hash), seen, cmpNone(a.Old), cmpNone(a.New))
	}
	next, out := s.commit([]any{gatelog.Repin{Server: a.Server, Tool: a.Tool, Old: a.Old, New: a.New, Approver: a.Approver,
		RequestedBy: a.RequestedBy, Reason: a.Reason}})
	out.Drift = next.drift(a.Server)
	return next, out, nil
}

// commit applies recs to s and returns the entries that record them.
func (s State) commit(recs []any) (State, Outcome) {
	var out Outcome
	if len(recs) == 0 {
		return s, out
	}
	bt := s.batch()
	for _, r := range recs {
		r = validUTF8(r)
		payload, err := canon.Marshal(r)
		if err != nil { // only valid strings and maps of them: cannot happen
			payload = nil
		}
		var kind string
		switch r.(type) {
		case gatelog.Pin:
			kind = gatelog.KindPin
		case gatelog.Drift:
			kind = gatelog.KindDrift
		case gatelog.Repin:
			kind = gatelog.KindRepin
		}
		bt.apply(r)
		out.Entries = append(out.Entries, Entry{Kind: kind, Payload: payload})
	}
	return bt.State, out
}

// validUTF8 returns r with every string's invalid UTF-8 as U+FFFD, as
// the log would hold it, so that the live State is the replayed one.
func validUTF8(r any) any {
	v := func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
	switch r := r.(type) {
	case gatelog.Pin:
		tools := make(map[string]string, len(r.Tools))
		for k, h := range r.Tools {
			tools[v(k)] = v(h)
		}
		r.Server, r.Tools, r.Instructions, r.Lock = v(r.Server), tools, v(r.Instructions), v(r.Lock)
		return r
	case gatelog.Drift:
		r.Server, r.Tool, r.Pinned, r.Seen = v(r.Server), v(r.Tool), v(r.Pinned), v(r.Seen)
		return r
	case gatelog.Repin:
		r.Server, r.Tool, r.Old, r.New = v(r.Server), v(r.Tool), v(r.Old), v(r.New)
		r.Approver, r.RequestedBy, r.Reason = v(r.Approver), v(r.RequestedBy), v(r.Reason)
		return r
	}
	return r
}

// Apply applies one log entry: a pin entry (decoded strictly by
// gatelog.Decode) changes the State as the step that wrote it did; an
// entry of another kind leaves it as it is. A malformed pin entry is an
// error and changes nothing.
func (s State) Apply(e trace.Entry) (State, error) {
	switch e.Kind {
	case gatelog.KindPin, gatelog.KindDrift, gatelog.KindRepin:
	default:
		return s, nil
	}
	v, err := gatelog.Decode(e)
	if err != nil {
		return s, fmt.Errorf("pin: entry %d: %w", e.Seq, err)
	}
	return s.apply(v), nil
}

// Replay rebuilds the State a host had from its log: Apply over every
// entry, in order. It stops at the first error the entries or their
// reader give.
func Replay(entries iter.Seq2[trace.Entry, error]) (State, error) {
	b := State{}.batch()
	for e, err := range entries {
		if err != nil {
			return State{}, err
		}
		switch e.Kind {
		case gatelog.KindPin, gatelog.KindDrift, gatelog.KindRepin:
		default:
			continue
		}
		v, err := gatelog.Decode(e)
		if err != nil {
			return State{}, fmt.Errorf("pin: entry %d: %w", e.Seq, err)
		}
		b.apply(v)
	}
	return b.State, nil
}

// apply is the one transition of a State: the effect of one pin record,
// on a copy.
func (s State) apply(r any) State {
	b := s.batch()
	b.apply(r)
	return b.State
}

// batch is a State being changed by several records at once: the
// servers it changed already are its own, changed in place, so that a
// step or a replay of n records copies each server once, not n times.
type batch struct {
	State
	own map[*server]bool
}

// batch starts a batch over a copy of s's server index.
func (s State) batch() *batch {
	next := State{servers: maps.Clone(s.servers), locked: s.locked}
	if next.servers == nil {
		next.servers = map[string]*server{}
	}
	return &batch{State: next, own: map[*server]bool{}}
}

// server returns the batch's own copy of the named server.
func (b *batch) server(name string) *server {
	sv := b.servers[name]
	if sv != nil && b.own[sv] {
		return sv
	}
	if sv == nil {
		sv = &server{}
	}
	sv = sv.clone()
	b.own[sv] = true
	b.servers[name] = sv
	return sv
}

// apply is the one transition: the effect of one pin record.
func (b *batch) apply(r any) {
	switch r := r.(type) {
	case gatelog.Pin:
		sv := &server{pins: make(map[string]Pin, len(r.Tools)), seen: map[string]string{}, instructions: r.Instructions}
		for name, h := range r.Tools {
			sv.pins[name] = Pin{Hash: h, Source: Source(r.Source)}
		}
		b.servers[r.Server] = sv
		b.own[sv] = true
		if r.Source == string(SourceLock) {
			b.locked = true
		}
	case gatelog.Drift:
		sv := b.server(r.Server)
		switch {
		case r.Change == Instructions:
			sv.seenInstructions, sv.drifted = r.Seen, r.Seen != sv.instructions
		case r.Change == Restored:
			delete(sv.seen, r.Tool)
		case r.Change == Removed:
			if _, pinned := sv.pins[r.Tool]; pinned {
				sv.seen[r.Tool] = ""
			} else {
				delete(sv.seen, r.Tool)
			}
		default:
			sv.seen[r.Tool] = r.Seen
		}
	case gatelog.Repin:
		sv := b.server(r.Server)
		sv.pins[r.Tool] = Pin{Hash: r.New, Source: SourceRepin, Approver: r.Approver}
		delete(sv.seen, r.Tool)
	}
}
