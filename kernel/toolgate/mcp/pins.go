package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/google/uuid"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/kernel/toolgate/pin"
	"github.com/verity-go/verity/trace"
)

// ReasonDrift is the reason (gatelog.Refuse.Reason) of a call refused
// because its tool's listed definition is not the one pinned; its
// condition is ConditionDefinition.
const (
	ReasonDrift         = "definition_drift"
	ConditionDefinition = "definition"
)

// PinOptions configures Pins.
type PinOptions struct {
	// Server names the upstream among the pins (the lock file's key, and
	// Server of every pin entry on the log).
	Server string
	// Lock, when set, is the lock file's pins (verity-mcp -pins): the
	// trusted definitions, and no server is trusted on first use. Without
	// it, the server's first complete listing is trusted (trust on first
	// use) and recorded as its pin.
	Lock *pin.Lock
	// Logger receives a line for each drift, refusal and re-pin; none
	// when nil.
	Logger *slog.Logger
	// Shared, when set (and no Lock is given), shares the pins with the
	// other replicas of a deployment (pins_shared.go).
	Shared SharedPins
}

// Pins holds the tool definitions a Proxy trusts, as the pure
// pin.State, and enforces them: a tool whose listed definition is not
// its pinned one (changed, or new) is hidden from tools/list and its
// calls are refused, until a person re-pins it (Repin). Every pin, drift
// and re-pin is an entry on the log (gatelog.KindPin, KindDrift,
// KindRepin), appended before the state that records it is used, and
// NewPins rebuilds the state from them. Pins is safe for concurrent use.
type Pins struct {
	log    *trace.Log
	server string
	logger *slog.Logger

	mu sync.Mutex
	st pin.State
	// tools is the last complete listing (every page), which a page a
	// client asks for is merged into.
	tools []pin.Tool
	instr string // the last listed instructions' hash
	// defs holds definitions by hash, for the review diff: the lock
	// file's, and each one listed while it is pinned or drifted.
	defs map[string]json.RawMessage
	// broken is why the last listing could not be checked or recorded:
	// every tool is then hidden and refused, until one can.
	broken error
	// drift is every difference from the pins after the last step.
	drift []gatelog.Drift
	// asked holds, per tool, the principals whose calls were refused on
	// its present drift, first first: none of them may re-pin it.
	asked map[string][]string
	// hints caches HintedTier by hash.
	hints map[string]claims.RiskTier
	// shared, when set, is the store of pins shared with other replicas;
	// version the version of its pins this replica adopted last, and
	// pinned whether the log pins the server already (pins_shared.go).
	shared  SharedPins
	version int64
	pinned  bool
}

// NewPins returns the Pins of opts.Server over log: the state the log's
// pin entries leave (pin.Replay) and, with a lock file, that lock's pins
// (pin.State.LockLoaded), recorded as a "lock" pin entry — unless the
// log's last pin of the server is this very lock (same digest), whose
// later drifts and re-pins then stand.
func NewPins(ctx context.Context, log *trace.Log, opts PinOptions) (*Pins, error) {
	if log == nil {
		return nil, errors.New("toolgate/mcp: pins need a log")
	}
	if opts.Server == "" {
		return nil, errors.New("toolgate/mcp: pins need a server name")
	}
	ps := &Pins{log: log, server: opts.Server, logger: opts.Logger, defs: map[string]json.RawMessage{}, asked: map[string][]string{}, shared: opts.Shared}
	if ps.logger == nil {
		ps.logger = slog.New(slog.DiscardHandler)
	}
	var lastLock string // the lock digest of the server's last pin entry
	st, err := pin.Replay(func(yield func(trace.Entry, error) bool) {
		for e, err := range log.Entries(ctx, 0) {
			if err == nil && e.Kind == gatelog.KindPin {
				if v, derr := gatelog.Decode(e); derr == nil {
					if p := v.(gatelog.Pin); p.Server == opts.Server {
						lastLock, ps.pinned = p.Lock, true
					}
				}
			}
			if !yield(e, err) {
				return
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("toolgate/mcp: reading the pins on the log: %w", err)
	}
	ps.st = st
	if l := opts.Lock; l != nil {
		if _, ok := l.Servers[opts.Server]; !ok {
			return nil, fmt.Errorf("toolgate/mcp: the lock file has no server %q (it has %v)", opts.Server, slices.Sorted(maps.Keys(l.Servers)))
		}
		for _, sl := range l.Servers {
			for _, def := range sl.Definitions {
				if _, h, err := pin.HashDefinition(def); err == nil {
					ps.defs[h] = def
				}
			}
		}
		if lastLock != l.Digest() || !st.Locked() {
			next, out := st.LockLoaded(*l)
			if err := ps.append(ctx, out); err != nil {
				return nil, err
			}
			ps.st = next
		}
	}
	return ps, nil
}

// Tools returns the names of the tools the server last listed, in its
// order.
func (ps *Pins) Tools() []string {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	names := make([]string, len(ps.tools))
	for i, t := range ps.tools {
		names[i] = t.Name
	}
	return names
}

// Server returns the server's name among the pins.
func (ps *Pins) Server() string { return ps.server }

// append writes a step's entries to the log, in order.
func (ps *Pins) append(ctx context.Context, out pin.Outcome) error {
	for _, e := range out.Entries {
		if _, err := ps.log.Append(context.WithoutCancel(ctx), e.Kind, e.Payload); err != nil {
			return fmt.Errorf("toolgate/mcp: recording %s: %w", e.Kind, err)
		}
	}
	return nil
}

// Observe checks a listing of the server's tools — pages of tools/list
// results as the server wrote them, and its instructions — against the
// pins (pin.State.Listed) and records what differs. complete says the
// pages are the whole listing; a part (one page a client asked for) is
// checked as the last complete listing with these pages' tools in place.
// A listing that cannot be read (a malformed definition, a tool listed
// twice) or a drift that cannot be recorded hides and refuses every tool
// until a listing is checked and recorded; the error is returned too.
func (ps *Pins) Observe(ctx context.Context, pages []json.RawMessage, instructions string, given bool, complete bool) error {
	var tools []pin.Tool
	var err error
	for _, raw := range pages {
		var page []pin.Tool
		if page, err = pin.ParseTools(raw); err != nil {
			break
		}
		tools = append(tools, page...)
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if err == nil && complete {
		seen := map[string]bool{}
		for _, t := range tools {
			if seen[t.Name] {
				err = fmt.Errorf("%w: tool %q listed on two pages", pin.ErrDefinition, t.Name)
				break
			}
			seen[t.Name] = true
		}
	}
	if err != nil {
		ps.broken = fmt.Errorf("the server's tools/list cannot be checked: %w", err)
		ps.logger.Error("pins: every tool hidden and refused", "server", ps.server, "err", err)
		return err
	}
	if !complete {
		tools = mergeTools(ps.tools, tools)
	}
	instr := pin.HashInstructions(instructions, given)
	if ps.shares() {
		if err := ps.claimLocked(ctx, tools, instr); err != nil {
			ps.broken = err
			ps.logger.Error("pins: every tool hidden and refused", "server", ps.server, "err", err)
			return err
		}
	}
	next, out := ps.st.Listed(pin.Listing{Server: ps.server, Instructions: instr, Tools: tools})
	if err := ps.append(ctx, out); err != nil {
		// Fail closed: the drift is not on the log, so nothing is trusted.
		ps.broken = err
		ps.logger.Error("pins: every tool hidden and refused", "server", ps.server, "err", err)
		return err
	}
	// A principal refused on a tool asked about the definition it was
	// refused on: a tool listed otherwise now is a new question.
	was := map[string]string{}
	for _, t := range ps.tools {
		was[t.Name] = t.Hash
	}
	now := map[string]string{}
	for _, t := range tools {
		now[t.Name] = t.Hash
	}
	for tool := range ps.asked {
		if was[tool] != now[tool] {
			delete(ps.asked, tool)
		}
	}
	ps.st, ps.tools, ps.instr, ps.broken, ps.drift = next, tools, instr, nil, out.Drift
	ps.pinned = ps.pinned || len(out.Entries) > 0
	for _, t := range tools {
		ps.defs[t.Hash] = t.Definition
	}
	ps.prune()
	for _, e := range out.Entries {
		if e.Kind == gatelog.KindPin {
			ps.logger.Info("pins: trusted on first use", "server", ps.server, "tools", len(tools))
		}
	}
	for _, d := range out.Drift {
		if len(out.Entries) == 0 {
			break // nothing new: told already
		}
		ps.logger.Warn("pins: drift", "server", ps.server, "tool", d.Tool, "change", d.Change, "pinned", d.Pinned, "seen", d.Seen)
	}
	return nil
}

// mergeTools returns last with each of page's tools in place of the one
// of its name, or added.
func mergeTools(last, page []pin.Tool) []pin.Tool {
	out := slices.Clone(last)
	for _, t := range page {
		if i := slices.IndexFunc(out, func(o pin.Tool) bool { return o.Name == t.Name }); i >= 0 {
			out[i] = t
		} else {
			out = append(out, t)
		}
	}
	return out
}

// prune forgets the definitions no pin nor listed tool has, and the
// askers of tools no longer drifted.
func (ps *Pins) prune() {
	keep := map[string]bool{}
	pins, _ := ps.st.Pins(ps.server)
	for _, p := range pins {
		keep[p.Hash] = true
	}
	for _, t := range ps.tools {
		keep[t.Hash] = true
	}
	maps.DeleteFunc(ps.defs, func(h string, _ json.RawMessage) bool { return !keep[h] })
	for tool := range ps.asked {
		if _, err := ps.st.Check(ps.server, tool); err == nil {
			delete(ps.asked, tool)
		}
	}
}

// Visible reports whether tools/list shows tool: its listed definition
// is the pinned one.
func (ps *Pins) Visible(tool string) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.broken != nil {
		return false
	}
	_, err := ps.st.Check(ps.server, tool)
	return err == nil
}

// Definition is asked before each call the Guard gates: it returns the
// pinned hash of the definition call runs against (toolgate.Call.
// Definition). A call of a tool whose listed definition is not pinned is
// refused: it is recorded on the log as a gatelog.KindRefuse entry
// (reason ReasonDrift; nothing is charged; its definition the pin it was
// refused against, none for a new tool — the explanation names both
// hashes, as the drift entry before it does), its principal is noted as one who may not re-pin the tool,
// and the error, one line naming the tool and both hashes, is what the
// model reads.
func (ps *Pins) Definition(ctx context.Context, call toolgate.Call) (string, error) {
	tool := pinnedName(call)
	var version int64
	var verr error
	if ps.shared != nil {
		version, verr = ps.sharedVersion(ctx)
	}
	ps.mu.Lock()
	broken := ps.broken
	if broken == nil && ps.shares() {
		// The tool's next call runs against what any replica pinned.
		if broken = verr; broken == nil {
			broken = ps.syncToLocked(ctx, version)
		}
	}
	var h string
	var err error
	if broken == nil {
		h, err = ps.st.Check(ps.server, tool)
	}
	var refused *pin.RefusedError
	if errors.As(err, &refused) {
		key := call.Principal.Key()
		if !slices.Contains(ps.asked[tool], key) {
			ps.asked[tool] = append(ps.asked[tool], key)
		}
	}
	ps.mu.Unlock()
	if broken == nil && err == nil {
		return h, nil
	}
	explanation, pinned := "", ""
	switch {
	case broken != nil:
		explanation = fmt.Sprintf("tool %q refused: %v", call.Tool, broken)
	case refused != nil:
		pinned = refused.Pinned
		explanation = fmt.Sprintf("tool %q refused: its definition is not the one pinned (pinned %s, listed %s): a person must re-approve it",
			call.Tool, noneIfEmpty(refused.Pinned), noneIfEmpty(refused.Seen))
	default:
		explanation = fmt.Sprintf("tool %q refused: %v", call.Tool, err)
	}
	explanation = toolgate.OneLine(explanation)
	if call.ID == "" {
		call.ID = uuid.Must(uuid.NewV7()).String()
	}
	e := gatelog.Refuse{Session: toolgate.SessionPrefix + call.Caller, Caller: call.Caller, CallID: call.ID, Tool: call.Tool,
		Reason: ReasonDrift, Explanation: explanation, ArgumentsSHA256: call.ArgumentsDigest(), ArgumentsSize: len(call.Arguments),
		Condition: ConditionDefinition, Definition: pinned}
	entry, lerr := ps.log.Append(context.WithoutCancel(ctx), gatelog.KindRefuse, e.AppendJSON(nil))
	if lerr != nil {
		ps.logger.Error("pins: recording a refusal", "tool", call.Tool, "err", lerr)
	}
	ps.logger.Info("pins: refused", "tool", call.Tool, "caller", call.Caller, "seq", entry.Seq, "why", explanation)
	return "", errors.New(explanation)
}

// HintedTier is the tier the annotations of the definition pinned at
// hash imply (toolgate.Call.HintedTier): READ_ONLY for readOnlyHint
// true, MODIFY for destructiveHint false, DELETE otherwise (MCP's
// defaults: a tool may destroy unless it says it does not). It is read
// from the definition whose canonical hash is hash — the one a person
// pinned — and is "" when Pins does not hold it, which a rule with
// tier_from_hints takes as DELETE.
func (ps *Pins) HintedTier(hash string) claims.RiskTier {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if t, ok := ps.hints[hash]; ok {
		return t
	}
	def, ok := ps.defs[hash]
	if !ok {
		return ""
	}
	t := tierOfAnnotations(def)
	if ps.hints == nil {
		ps.hints = map[string]claims.RiskTier{}
	}
	if len(ps.hints) >= maxHints {
		clear(ps.hints)
	}
	ps.hints[hash] = t
	return t
}

// maxHints bounds HintedTier's cache; it is emptied when full.
const maxHints = 4096

// tierOfAnnotations reads a tool definition's readOnlyHint and
// destructiveHint; a definition it cannot read gives DELETE.
func tierOfAnnotations(def json.RawMessage) claims.RiskTier {
	var d struct {
		Annotations struct {
			ReadOnlyHint    *bool `json:"readOnlyHint"`
			DestructiveHint *bool `json:"destructiveHint"`
		} `json:"annotations"`
	}
	if err := json.Unmarshal(def, &d); err != nil {
		return claims.TierDelete
	}
	switch a := d.Annotations; {
	case a.ReadOnlyHint != nil && *a.ReadOnlyHint:
		return claims.TierReadOnly
	case a.DestructiveHint != nil && !*a.DestructiveHint:
		return claims.TierModify
	}
	return claims.TierDelete
}

func noneIfEmpty(h string) string {
	if h == "" {
		return "none"
	}
	return h
}

// PinReview is a tool whose listed definition is not its pinned one, as
// an approver reviews it.
type PinReview struct {
	Server string
	Tool   string
	// Change is pin.Changed, pin.New or pin.Removed.
	Change string
	// Pinned and Seen are the pinned hash ("" for a new tool) and the
	// listed one ("" for a tool no longer listed).
	Pinned, Seen string
	// Old and New are the two definitions as JSON, when at hand (a
	// pinned definition is at hand when the lock file holds it or it was
	// listed since the proxy started).
	Old, New json.RawMessage
	// Asked are the principals whose calls were refused on it: none of
	// them may re-pin it.
	Asked []string
}

// Reviews returns every tool of the server whose listed definition is
// not its pinned one, by name.
func (ps *Pins) Reviews() []PinReview {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var out []PinReview
	for _, d := range ps.drift {
		if d.Tool == "" {
			continue // the instructions: not shown to the client, nothing to approve
		}
		r := PinReview{Server: ps.server, Tool: d.Tool, Change: d.Change, Pinned: d.Pinned, Seen: d.Seen,
			Old: ps.defs[d.Pinned], New: ps.defs[d.Seen], Asked: slices.Clone(ps.asked[d.Tool])}
		if d.Pinned == "" {
			r.Old = nil
		}
		if d.Seen == "" {
			r.New = nil
		}
		out = append(out, r)
	}
	return out
}

// Repin records a person's re-approval of tool's definition, from the
// pinned hash old ("" for a new tool) to the listed hash new — exactly
// the definitions the approver was shown (pin.State.Repin refuses a stale
// one: pin.ErrStaleApproval) — as a gatelog.KindRepin entry naming the
// approver and the reason. A principal whose call was refused on the
// tool may not approve it (pin.ErrSelfApproval). The tool's calls run
// again, against the new definition.
func (ps *Pins) Repin(ctx context.Context, tool, old, new, approver, reason string) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	asked := ps.asked[tool]
	if slices.Contains(asked, approver) {
		return fmt.Errorf("%w: %q", pin.ErrSelfApproval, approver)
	}
	requested := ""
	if len(asked) > 0 {
		requested = asked[0]
	}
	next, out, err := ps.st.Repin(pin.Approval{Server: ps.server, Tool: tool, Old: old, New: new, Approver: approver,
		RequestedBy: requested, Reason: reason})
	if err != nil {
		return err
	}
	version := ps.version
	if ps.shares() {
		// The store decides first: a re-pin another replica recorded since
		// is a conflict, and this one is refused.
		if version, err = ps.shared.RecordRepin(ctx, gatelog.Repin{Server: ps.server, Tool: tool, Old: old, New: new,
			Approver: approver, RequestedBy: requested, Reason: reason}); err != nil {
			return fmt.Errorf("toolgate/mcp: recording the re-pin of %q for every replica: %w", tool, err)
		}
	}
	if err := ps.append(ctx, out); err != nil {
		return err
	}
	if version == ps.version+1 { // no other change in between: adopted
		ps.version = version
	}
	ps.st, ps.drift = next, out.Drift
	ps.prune()
	ps.logger.Info("pins: re-pinned", "server", ps.server, "tool", tool, "old", old, "new", new, "approver", approver, "reason", reason)
	return nil
}
