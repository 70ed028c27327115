package toolgate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// maxApprovalTimeout is the longest Policy.ApprovalTimeout: a call is
// held for a human at most a day.
const maxApprovalTimeout = 24 * time.Hour

// WithDurableApprovals makes waiting requests, and approvals and denials
// not yet used, survive a restart over the same (durable) log: each
// request is recorded as it was asked (a gatelog.KindAsk entry), and New restores
// from the log every request it names that was neither used nor expired
// — waiting ones in Pending again, answerable with Approve or ApproveAs,
// and approvals used by the next Before of exactly their call. Without
// it, a restarted gate asks again (fail closed).
func WithDurableApprovals() Option { return func(o *options) { o.durable = true } }

// Await returns when the request id is no longer waiting — approved by
// all its approvers, denied, expired, or unknown to the gate — and
// reports true; or when ctx ends, and reports false.
func (g *Gate) Await(ctx context.Context, id string) bool {
	g.mu.Lock()
	_, ok := g.approvals[id]
	var done chan struct{}
	if ok {
		if done = g.awaited[id]; done == nil {
			done = make(chan struct{})
			g.awaited[id] = done
		}
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

// Unanswered records that the call d asked about (an AskApproval
// decision) was held for its human for waited and nobody answered: a
// gatelog.KindRefuse entry, reason "approval_timeout", naming the request. The
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

// ExpireApprovals lets go of every request, approval and denial older
// than Policy.ApprovalTTL at now, each recorded as a gatelog.KindExpire entry,
// and returns how many. A host calls it from time to time (before listing
// Pending, say); Before expires what it meets on its own.
func (g *Gate) ExpireApprovals(ctx context.Context) (int, error) {
	if g.comp().cfg.ApprovalTTL <= 0 {
		return 0, nil
	}
	now := trace.Normalize(g.clock())
	// Held without being used: a sweep keeps no caller from being let go.
	g.mu.Lock()
	live := make([]*caller, 0, len(g.callers))
	for _, cl := range g.callers {
		cl.busy++
		live = append(live, cl)
	}
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		for _, cl := range live {
			cl.busy--
		}
		g.mu.Unlock()
	}()
	n := 0
	for _, cl := range live {
		select {
		case <-cl.ready:
		default: // still starting: nothing of it expired yet
			continue
		}
		cl.mu.Lock()
		k, err := g.expire(ctx, cl, nil, now)
		cl.mu.Unlock()
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// expire records what cl holds past its expiry at now — for the call key
// only when key is not nil — and applies it to the caller's life (due,
// applyExpire). cl.mu is held.
func (g *Gate) expire(ctx context.Context, cl *caller, key *callKey, now time.Time) (int, error) {
	due := cl.due(cl.key, now, g.comp().cfg.ApprovalTTL, key)
	for i, x := range due {
		if x.State == "waiting" {
			_ = g.pending.Remove(context.WithoutCancel(ctx), x.Approval)
		}
		b, err := json.Marshal(x)
		if err == nil {
			_, err = g.log.Append(context.WithoutCancel(ctx), gatelog.KindExpire, b, trace.At(now))
		}
		if err != nil {
			return i, fmt.Errorf("toolgate: recording an expired approval: %w", err)
		}
		g.index(cl.applyExpire(x))
	}
	return len(due), nil
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
