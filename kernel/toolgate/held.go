package toolgate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/trace"
)

// The trace entry kinds of approvals answered out of band (an approval
// inbox): a request as it was asked, and a request or approval that
// expired.
const (
	// KindAsk records an approval request as the human is shown it
	// (AskEntry), with WithDurableApprovals: what a restarted gate shows
	// again.
	KindAsk = "toolgate.ask"
	// KindExpire records a request, approval or denial that was not
	// used within Policy.ApprovalTTL (ExpireEntry).
	KindExpire = "toolgate.expire"
)

// MaxApprovalTimeout is the longest Policy.ApprovalTimeout: a call is
// held for a human at most a day.
const MaxApprovalTimeout = 24 * time.Hour

// AskEntry is the payload of a KindAsk entry.
type AskEntry struct {
	Approval        string          `json:"approval"`
	Session         string          `json:"session"`
	Caller          string          `json:"caller"`
	Principal       string          `json:"principal,omitempty"` // see ApprovalRequest.Principal
	CallID          string          `json:"call_id"`
	Tool            string          `json:"tool"`
	ArgumentsSHA256 string          `json:"arguments_sha256"`
	Tier            claims.RiskTier `json:"tier"`
	Arguments       string          `json:"arguments"` // as shown: see ApprovalRequest.Arguments
	Question        string          `json:"question"`
	Asked           time.Time       `json:"asked"`
	Expires         *time.Time      `json:"expires,omitempty"`
}

// ExpireEntry is the payload of a KindExpire entry: State is what
// expired — "waiting" (a request nobody answered), "approved" (an
// approval no call used) or "denied" (a denial no call was refused with).
type ExpireEntry struct {
	Approval        string          `json:"approval"`
	Session         string          `json:"session"`
	Caller          string          `json:"caller"`
	Tool            string          `json:"tool"`
	ArgumentsSHA256 string          `json:"arguments_sha256"`
	Tier            claims.RiskTier `json:"tier"`
	State           string          `json:"state"`
	Asked           time.Time       `json:"asked"`
	Expires         time.Time       `json:"expires"`
}

// WithDurableApprovals makes waiting requests, and approvals and denials
// not yet used, survive a restart over the same (durable) log: each
// request is recorded as it was asked (a KindAsk entry), and New restores
// from the log every request it names that was neither used nor expired
// — waiting ones in Pending again, answerable with Approve or ApproveAs,
// and approvals used by the next Before of exactly their call. Without
// it, a restarted gate asks again (fail closed).
func WithDurableApprovals() Option { return func(o *options) { o.durable = true } }

// ApprovalTimeout is Policy.ApprovalTimeout: how long a host that waits
// for an answer from elsewhere (an approval inbox) holds a call before
// it refuses it with Unanswered; 0 when calls are not held.
func (g *Gate) ApprovalTimeout() time.Duration { return g.comp.cfg.ApprovalTimeout }

// Await returns when the request id is no longer waiting — approved by
// all its approvers, denied, expired, or unknown to the gate — and
// reports true; or when ctx ends, and reports false.
func (g *Gate) Await(ctx context.Context, id string) bool {
	g.mu.Lock()
	ap, ok := g.approvals[id]
	var done chan struct{}
	if ok {
		if ap.done == nil {
			ap.done = make(chan struct{})
		}
		done = ap.done
	}
	g.mu.Unlock()
	if !ok {
		return true
	}
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// settledLocked wakes whoever Awaits ap. g.mu is held, ap just left
// g.approvals.
func settledLocked(ap *approval) {
	if ap.done != nil {
		close(ap.done)
		ap.done = nil
	}
}

// Unanswered records that the call d asked about (an AskApproval
// decision) was held for its human for waited and nobody answered: a
// KindRefuse entry, reason "approval_timeout", naming the request. The
// request itself stays waiting (until Policy.ApprovalTTL), so that an
// approval given later is used by the next Before of the same call.
func (g *Gate) Unanswered(ctx context.Context, d Decision, waited time.Duration) (Decision, error) {
	if d.Verdict != AskApproval || d.Approval == nil {
		return Decision{}, fmt.Errorf("toolgate: Unanswered needs an AskApproval decision, got %s", d.Verdict)
	}
	ap := d.Approval
	why := fmt.Sprintf("tool %q (%s, approval): %s: no answer within %s", ap.Tool, d.Rule, ap.Tier, waited.Round(time.Millisecond))
	if !ap.Expires.IsZero() {
		why += fmt.Sprintf("; the request waits until %s: call again once it is approved", ap.Expires.UTC().Format(time.RFC3339))
	}
	d.Condition = "approval"
	start := time.Now()
	d, err := g.refuse(ctx, d, "approval_timeout", why, ap.ID, trace.Normalize(g.clock()))
	g.observeDecision(ctx, d.Call, d, err, start)
	return d, err
}

// asked completes a new request (its time, shown arguments and expiry)
// and, with WithDurableApprovals, records it. cl.mu is held.
func (g *Gate) asked(ctx context.Context, ap *approval, c Call, shown string, at time.Time) error {
	ap.req.Asked, ap.req.Arguments = at, shown
	if g.comp.cfg.ApprovalTTL > 0 {
		ap.req.Expires = at.Add(g.comp.cfg.ApprovalTTL)
		// Kept until it expires, or a sweep finds it used.
		g.mu.Lock()
		g.expiry[ap.req.ID] = ap.req.Expires
		g.mu.Unlock()
	}
	if !g.durable {
		return nil
	}
	e := AskEntry{Approval: ap.req.ID, Session: g.SessionID(c.Caller), Caller: c.Caller, Principal: ap.req.Principal, CallID: c.ID, Tool: c.Tool,
		ArgumentsSHA256: ap.key.digest, Tier: ap.key.tier, Arguments: shown, Question: ap.req.Question, Asked: at}
	if !ap.req.Expires.IsZero() {
		e.Expires = &ap.req.Expires
	}
	b, err := json.Marshal(e)
	if err == nil {
		_, err = g.log.Append(ctx, KindAsk, b, trace.At(at))
	}
	if err != nil {
		return fmt.Errorf("toolgate: recording the approval request: %w", err)
	}
	return nil
}

// ExpireApprovals lets go of every request, approval and denial older
// than Policy.ApprovalTTL at now, each recorded as a KindExpire entry,
// and returns how many. A host calls it from time to time (before listing
// Pending, say); Before expires what it meets on its own.
func (g *Gate) ExpireApprovals(ctx context.Context) (int, error) {
	if g.comp.cfg.ApprovalTTL <= 0 {
		return 0, nil
	}
	now := trace.Normalize(g.clock())
	g.mu.Lock()
	var due []string
	for id, exp := range g.expiry {
		if !exp.IsZero() && !now.Before(exp) {
			due = append(due, id)
		}
	}
	live := map[string]*caller{}
	for _, cl := range g.callers {
		live[cl.key] = cl
	}
	g.mu.Unlock()
	if len(due) == 0 {
		return 0, nil
	}
	n := 0
	for _, cl := range live {
		g.mu.Lock()
		cl = g.acquireLocked(cl.key)
		g.mu.Unlock()
		if cl == nil {
			continue
		}
		cl.mu.Lock()
		k, err := g.expireLocked(ctx, cl, nil, now)
		cl.mu.Unlock()
		g.release(cl)
		n += k
		if err != nil {
			return n, err
		}
	}
	// What no live caller holds any more was used or let go.
	g.mu.Lock()
	for _, id := range due {
		if _, ok := g.approvals[id]; !ok && !g.heldByLocked(id) {
			delete(g.expiry, id)
		}
	}
	g.mu.Unlock()
	return n, nil
}

// heldByLocked reports whether a live caller still holds id as an
// approval or denial. g.mu is held.
func (g *Gate) heldByLocked(id string) bool {
	for _, cl := range g.callers {
		if !cl.mu.TryLock() {
			return true // in use: keep it for the next sweep
		}
		held := false
		for _, ids := range cl.granted {
			held = held || slices.Contains(ids, id)
		}
		for _, ds := range cl.denied {
			held = held || slices.ContainsFunc(ds, func(d denial) bool { return d.id == id })
		}
		cl.mu.Unlock()
		if held {
			return true
		}
	}
	return false
}

// expireLocked lets go of what cl holds past its expiry at now — for the
// call key only when key is not nil — recording each. cl.mu is held.
func (g *Gate) expireLocked(ctx context.Context, cl *caller, key *callKey, now time.Time) (int, error) {
	if g.comp.cfg.ApprovalTTL <= 0 {
		return 0, nil
	}
	g.mu.Lock()
	expired := func(id string) (time.Time, bool) {
		exp, ok := g.expiry[id]
		return exp, ok && !exp.IsZero() && !now.Before(exp)
	}
	type gone struct {
		id, state string
		key       callKey
		exp       time.Time
	}
	var out []gone
	for k, ap := range cl.waiting {
		if key != nil && k != *key {
			continue
		}
		if exp, ok := expired(ap.req.ID); ok {
			out = append(out, gone{ap.req.ID, "waiting", k, exp})
			delete(cl.waiting, k)
			delete(g.approvals, ap.req.ID)
			settledLocked(ap)
		}
	}
	for k, ids := range cl.granted {
		if key != nil && k != *key {
			continue
		}
		keep := ids[:0:0]
		for _, id := range ids {
			if exp, ok := expired(id); ok {
				out = append(out, gone{id, "approved", k, exp})
			} else {
				keep = append(keep, id)
			}
		}
		if len(keep) == 0 {
			delete(cl.granted, k)
		} else {
			cl.granted[k] = keep
		}
	}
	for k, ds := range cl.denied {
		if key != nil && k != *key {
			continue
		}
		keep := ds[:0:0]
		for _, d := range ds {
			if exp, ok := expired(d.id); ok {
				out = append(out, gone{d.id, "denied", k, exp})
			} else {
				keep = append(keep, d)
			}
		}
		if len(keep) == 0 {
			delete(cl.denied, k)
		} else {
			cl.denied[k] = keep
		}
	}
	for _, o := range out {
		delete(g.expiry, o.id)
	}
	g.mu.Unlock()
	// In a stable order: ids are UUIDv7s, by time.
	slices.SortFunc(out, func(a, b gone) int { return strings.Compare(a.id, b.id) })
	for _, o := range out {
		if o.state == "waiting" {
			_ = g.pending.Remove(context.WithoutCancel(ctx), o.id)
		}
		e := ExpireEntry{Approval: o.id, Session: g.SessionID(cl.key), Caller: cl.key, Tool: o.key.tool,
			ArgumentsSHA256: o.key.digest, Tier: o.key.tier, State: o.state, Asked: o.exp.Add(-g.comp.cfg.ApprovalTTL), Expires: o.exp}
		b, err := json.Marshal(e)
		if err == nil {
			_, err = g.log.Append(context.WithoutCancel(ctx), KindExpire, b, trace.At(now))
		}
		if err != nil {
			return len(out), fmt.Errorf("toolgate: recording an expired approval: %w", err)
		}
	}
	return len(out), nil
}

// restored is what a gate restarted over its log holds again of one
// request (WithDurableApprovals).
type restored struct {
	ask     AskEntry
	last    *claims.Record // the bundle's last claims record
	seq     uint64
	used    bool // a call ran with its approval, or was refused with its denial
	expired bool
}

// restoreApprovals reads the log for the requests it names that are
// still waiting, approved or denied and neither used nor expired, and
// hands them to their callers again. New calls it with
// WithDurableApprovals.
func (g *Gate) restoreApprovals(ctx context.Context) error {
	if err := claims.RebuildPending(ctx, g.log, g.pending); err != nil {
		return fmt.Errorf("toolgate: restoring approvals: %w", err)
	}
	byID := map[string]*restored{}
	var order []string
	for e, err := range g.log.Entries(ctx, 0) {
		if err != nil {
			return fmt.Errorf("toolgate: restoring approvals: %w", err)
		}
		switch e.Kind {
		case KindAsk:
			var a AskEntry
			if err := strictJSON(e.Payload, &a); err != nil {
				return fmt.Errorf("toolgate: restoring approvals: entry %d: %w", e.Seq, err)
			}
			r, ok := byID[a.Approval]
			if !ok {
				r = &restored{}
				byID[a.Approval] = r
			}
			if r.ask.Approval == "" {
				order = append(order, a.Approval)
			}
			r.ask = a
		case claims.KindEvaluate, claims.KindApprove:
			rec, err := claims.DecodeRecord(e.Payload)
			if err != nil {
				return fmt.Errorf("toolgate: restoring approvals: entry %d: %w", e.Seq, err)
			}
			if r, ok := byID[rec.Bundle.ID]; ok {
				r.last, r.seq = &rec, e.Seq
			} else if e.Kind == claims.KindEvaluate {
				// The evaluation is recorded before its request: keep it
				// until the request names it.
				byID[rec.Bundle.ID] = &restored{last: &rec, seq: e.Seq}
			}
		case KindExpire:
			var x ExpireEntry
			if err := strictJSON(e.Payload, &x); err != nil {
				return fmt.Errorf("toolgate: restoring approvals: entry %d: %w", e.Seq, err)
			}
			if r, ok := byID[x.Approval]; ok {
				r.expired = true
			}
		case KindRefuse:
			d, err := DecodeEntry(e)
			if err != nil {
				return fmt.Errorf("toolgate: restoring approvals: entry %d: %w", e.Seq, err)
			}
			if re, ok := d.(RefuseEntry); ok && re.Reason == "denied" && re.Approval != "" {
				if r, ok := byID[re.Approval]; ok {
					r.used = true
				}
			}
		case kernel.KindExecute, kernel.KindReserve:
			d, err := kernel.DecodeEntry(e)
			if err != nil {
				return fmt.Errorf("toolgate: restoring approvals: entry %d: %w", e.Seq, err)
			}
			var tags []string
			switch x := d.(type) {
			case kernel.ExecuteEntry:
				tags = x.Record.Action.Tags
			case kernel.ReserveEntry:
				tags = x.Record.Action.Tags
			}
			for _, t := range tags {
				if id, ok := strings.CutPrefix(t, "approval:"); ok {
					if r, ok := byID[id]; ok {
						r.used = true
					}
				}
			}
		}
	}
	byCaller := map[string][]*restored{}
	var callers []string
	for _, id := range order {
		r := byID[id]
		if r.ask.Approval == "" || r.last == nil || r.used || r.expired {
			continue
		}
		if _, ok := byCaller[r.ask.Caller]; !ok {
			callers = append(callers, r.ask.Caller)
		}
		byCaller[r.ask.Caller] = append(byCaller[r.ask.Caller], r)
	}
	for _, key := range callers {
		cl, err := g.caller(ctx, key)
		if err != nil {
			return fmt.Errorf("toolgate: restoring approvals: %w", err)
		}
		cl.mu.Lock()
		g.mu.Lock()
		for _, r := range byCaller[key] {
			g.restoreLocked(cl, r)
		}
		g.mu.Unlock()
		cl.mu.Unlock()
		g.release(cl)
	}
	return nil
}

// restoreLocked hands r to its caller. cl.mu and g.mu are held.
func (g *Gate) restoreLocked(cl *caller, r *restored) {
	a, b := r.ask, r.last.Bundle
	key := callKey{tool: a.Tool, digest: a.ArgumentsSHA256, tier: a.Tier}
	var expires time.Time
	if a.Expires != nil {
		expires = *a.Expires
	}
	// The policy's ttl now, not the one it was asked under, decides.
	if g.comp.cfg.ApprovalTTL > 0 {
		expires = a.Asked.Add(g.comp.cfg.ApprovalTTL)
		g.expiry[a.Approval] = expires
	} else {
		expires = time.Time{}
	}
	switch b.Decision {
	case claims.DecisionDefer, claims.DecisionEscalate:
		p := claims.Pending{Bundle: b}
		ap := &approval{key: key, bundle: b, seq: r.seq, req: ApprovalRequest{ID: a.Approval, Caller: a.Caller, Principal: a.Principal, Tool: a.Tool,
			ArgumentsDigest: a.ArgumentsSHA256, Tier: a.Tier, Awaiting: p.Awaiting(), Question: a.Question,
			Arguments: a.Arguments, Asked: a.Asked, Expires: expires}}
		for _, h := range b.AuditTrail.HumanApprovals {
			if ap.by == nil {
				ap.by = map[string]bool{}
			}
			ap.by[answeredBy(h)] = true
		}
		if _, dup := cl.waiting[key]; !dup {
			cl.waiting[key] = ap
			g.approvals[a.Approval] = ap
		}
	case claims.DecisionPublish:
		cl.granted[key] = append(cl.granted[key], a.Approval)
	default:
		var dn denial
		dn.id = a.Approval
		if hs := b.AuditTrail.HumanApprovals; len(hs) > 0 {
			last := hs[len(hs)-1]
			dn.approver, dn.reason = last.Approver, last.Reason
		}
		cl.denied[key] = append(cl.denied[key], dn)
	}
}

// answeredBy is the key of the principal who gave an approval: the one
// its reason starts with ("by KEY" or "by KEY: reason", as ApproveAs
// records for a group), else its approver's name.
func answeredBy(a claims.Approval) string {
	if rest, ok := strings.CutPrefix(a.Reason, "by "); ok {
		key, _, _ := strings.Cut(rest, ": ")
		return key
	}
	return a.Approver
}

// strictJSON reads one JSON object into v: no unknown member, nothing
// after it, and in canonical form (what the gate wrote).
func strictJSON(b []byte, v any) error {
	if err := canon.Valid(b); err != nil {
		return err
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the entry")
	}
	return nil
}
