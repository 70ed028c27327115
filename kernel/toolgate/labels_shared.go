package toolgate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// Flow labels shared by several gates (WithSharedLabels): replicas of one
// deployment behind one address, each with its own log. A label one
// replica attaches to a caller is seen by every replica's next decision
// for that caller, so that a toxic flow whose first call lands on one
// replica and last on another is still refused.
//
// The shell does the sharing; the core stays pure. Before a decision the
// gate reads the caller's labels from the store (those of the call's
// conversation and the caller-wide ones, still carried at the decision's
// time); the ones its own session of the caller does not carry are
// recorded (gatelog.KindSharedLabels) and applied to the caller's life
// (applySharedLabels) before the core decides, so that the decision sees
// them as input and a replay of this replica's log alone carries them
// again at the same point. After an allowed call's execution is recorded,
// its labels are written to the store, with their end (Rule.LabelTTL) and
// in the conversation the caller's life holds them under.
//
// A declassification (Declassify) is shared too: the store removes the
// label as attached until then and keeps the declassification, which
// every gate reads with the labels. A gate whose caller's life carries a
// label declassified since it last looked records the declassification
// (gatelog.KindDeclassify, its reason saying another gate cleared it)
// and applies it, then reads back from the store what was attached after
// it — both entries before the decision, so that replay agrees.
//
// Fail closed: a store that cannot be read or written makes the call an
// error (nothing runs), as a shared rate window that cannot decide does.

// SharedLabels is a store of flow labels shared by several gates
// (kernel/sqlbudget's Store implements it). Times are the gates'
// recorded times; a label is carried while the time is before its end.
type SharedLabels interface {
	// Labels returns the labels caller carries at time at: those
	// attached with no conversation, and those of conversation conv when
	// it is not "". A label is named once, with the later of its ends
	// (zero Until: for good). cleared is the last declassification of
	// each of the caller's labels.
	Labels(ctx context.Context, caller, conv string, at time.Time) (carried []gatelog.SharedLabel, cleared []LabelClear, err error)
	// Attach records that caller carries labels — in conversation conv,
	// or caller-wide when conv is "" — from at, until at+ttl (for good
	// when ttl is 0). A label carried already keeps the later end.
	Attach(ctx context.Context, caller, conv string, labels []string, at time.Time, ttl time.Duration) error
	// Clear records the declassification c of caller's label
	// (Gate.Declassify): the label as attached at or before c.At is
	// removed, caller-wide and from every conversation, and c is the
	// label's last declassification unless a later one is.
	Clear(ctx context.Context, caller string, c LabelClear) error
}

// LabelClear is a declassification a SharedLabels store holds: Label was
// cleared from a caller at At by Approver, for Reason.
type LabelClear struct {
	Label            string
	At               time.Time
	Approver, Reason string
}

// clearedElsewherePrefix starts the reason of a declassification a gate
// records because another gate cleared the label.
const clearedElsewherePrefix = "cleared by another gate: "

// WithSharedLabels makes the gate share its callers' flow labels through
// s with every other gate using it: each decision sees the labels any of
// them attached to the caller (see SharedLabels). A policy no rule of
// which attaches, follows (flow) or reads (when) a label never asks s.
func WithSharedLabels(s SharedLabels) Option {
	return func(o *options) { o.labels = s }
}

// usesLabels reports whether some rule of the policy attaches labels,
// has a flow, or has a when condition (which may read labels): only then
// does a gate share them.
func (c *Compiled) usesLabels() bool {
	if c.conditions {
		return true
	}
	uses := func(r *compiledRule) bool { return len(r.Labels) > 0 || len(r.Flow) > 0 }
	for i := range c.rules {
		if uses(&c.rules[i]) {
			return true
		}
	}
	return c.def != nil && uses(c.def)
}

// importLabels reads the caller's shared labels before a decision at
// time at (cl.turn held) and records and applies those its life does not
// carry.
func (g *Gate) importLabels(ctx context.Context, cl *caller, c *Call, at time.Time) error {
	conv := g.conversation(c)
	got, clears, err := g.labels.Labels(ctx, c.Caller, conv, at)
	if err != nil {
		return fmt.Errorf("toolgate: reading the shared flow labels of caller %q: %w", c.Caller, err)
	}
	for _, x := range clears {
		if err := g.clearedElsewhere(ctx, cl, c.Caller, x, at); err != nil {
			return err
		}
	}
	if len(got) == 0 {
		return nil
	}
	cl.mu.Lock()
	unseen := cl.unseenLabels(conv, got, at)
	cl.mu.Unlock()
	if len(unseen) == 0 {
		return nil
	}
	e := gatelog.SharedLabels{Session: g.SessionID(c.Caller), Caller: c.Caller, Conversation: conv, Labels: unseen}
	b, err := json.Marshal(e)
	if err == nil {
		_, err = g.log.Append(ctx, gatelog.KindSharedLabels, b, trace.At(at))
	}
	if err != nil {
		return fmt.Errorf("toolgate: recording the shared flow labels of caller %q: %w", c.Caller, err)
	}
	cl.mu.Lock()
	cl.applySharedLabels(e)
	cl.mu.Unlock()
	return nil
}

// clearedElsewhere applies x, a declassification the store holds, when
// the gate has not applied it yet (cl.turn held): recorded and applied
// when the caller's life carries the label.
func (g *Gate) clearedElsewhere(ctx context.Context, cl *caller, caller string, x LabelClear, at time.Time) error {
	if !x.At.After(cl.clears[x.Label]) {
		return nil
	}
	cl.mu.Lock()
	carried := cl.carries(x.Label, at)
	cl.mu.Unlock()
	if carried {
		e := gatelog.Declassify{Session: g.SessionID(caller), Caller: caller, Label: x.Label, Approver: x.Approver,
			Reason: OneLine(clearedElsewherePrefix + x.Reason)}
		b, err := canon.Marshal(e)
		if err == nil {
			_, err = g.log.Append(ctx, gatelog.KindDeclassify, b, trace.At(at))
		}
		if err != nil {
			return fmt.Errorf("toolgate: recording the declassification of %q by another gate: %w", x.Label, err)
		}
		cl.mu.Lock()
		cl.declassify(x.Label)
		cl.mu.Unlock()
	}
	cl.clearSeen(x.Label, x.At)
	return nil
}

// clearSeen notes that the gate applied the store's declassification
// of label at at (cl.turn held); the note is the shell's, bounded, and
// lost with the caller: a gate that forgot it applies it again, and
// reads back what was attached after it.
func (cl *caller) clearSeen(label string, at time.Time) {
	if cl.clears == nil || len(cl.clears) >= maxConversations {
		cl.clears = map[string]time.Time{}
	}
	if at.After(cl.clears[label]) {
		cl.clears[label] = at
	}
}

// shareLabels writes the labels of the execution x, recorded and applied
// already, to the store: in the conversation the caller's life holds
// them under (caller-wide beyond maxConversations).
func (g *Gate) shareLabels(ctx context.Context, cl *caller, caller string, x *executed) error {
	conv := x.conv
	if conv != "" {
		cl.mu.Lock()
		if cl.convs[conv] == nil {
			conv = ""
		}
		cl.mu.Unlock()
	}
	if err := g.labels.Attach(ctx, caller, conv, x.labels, x.at, x.labelTTL); err != nil {
		return fmt.Errorf("toolgate: sharing the flow labels %v of caller %q: %w", x.labels, caller, err)
	}
	return nil
}

// sharedCarries reports whether the store holds label for caller
// (caller-wide) at at: Declassify clears a label another gate attached.
func (g *Gate) sharedCarries(ctx context.Context, caller, label string, at time.Time) (bool, error) {
	if g.labels == nil {
		return false, nil
	}
	got, _, err := g.labels.Labels(ctx, caller, "", at)
	if err != nil {
		return false, fmt.Errorf("toolgate: reading the shared flow labels of caller %q: %w", caller, err)
	}
	return slices.ContainsFunc(got, func(l gatelog.SharedLabel) bool { return l.Label == label }), nil
}

// unseenLabels is the part of shared, the labels a store says the
// caller carries at at in conversation conv, that the life does not
// carry then, by label. Pure.
func (l *life) unseenLabels(conv string, shared []gatelog.SharedLabel, at time.Time) []gatelog.SharedLabel {
	have := l.labelsAt(conv, at)
	var out []gatelog.SharedLabel
	for _, s := range shared {
		if s.Label == "" || have[s.Label] || !s.Until.IsZero() && !at.Before(s.Until) {
			continue
		}
		if i := slices.IndexFunc(out, func(o gatelog.SharedLabel) bool { return o.Label == s.Label }); i >= 0 {
			if out[i].Until.IsZero() || !s.Until.IsZero() && s.Until.Before(out[i].Until) {
				continue
			}
			out[i] = s
			continue
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b gatelog.SharedLabel) int { return strings.Compare(a.Label, b.Label) })
	return out
}

// applySharedLabels: the caller carries the labels x recorded, until
// their ends, in x's conversation when the life holds it or has room
// for it (as applyExecuted does), else caller-wide. A label carried for
// good stays so; one that ends ends at the later of its two ends. Pure.
func (l *life) applySharedLabels(x gatelog.SharedLabels) {
	labels, until := l.labelSet(x.Conversation)
	for _, s := range x.Labels {
		end, ends := until[s.Label]
		switch {
		case s.Until.IsZero():
			delete(until, s.Label)
		case labels[s.Label] && !ends:
			// for good already
		case !ends || s.Until.After(end):
			until[s.Label] = s.Until
		}
		labels[s.Label] = true
	}
}

// labelSet returns the labels and ends that conversation conv's labels
// are attached to: its own set, made when there is room for one more
// (maxConversations), else the caller's.
func (l *life) labelSet(conv string) (map[string]bool, map[string]time.Time) {
	if conv == "" {
		return l.labels, l.until
	}
	s := l.convs[conv]
	if s == nil && len(l.convs) < maxConversations {
		if l.convs == nil {
			l.convs = map[string]*labelSet{}
		}
		s = &labelSet{labels: map[string]bool{}, until: map[string]time.Time{}}
		l.convs[conv] = s
	}
	if s == nil {
		return l.labels, l.until
	}
	return s.labels, s.until
}
