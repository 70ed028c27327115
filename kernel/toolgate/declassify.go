package toolgate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// ErrNotCarried: Declassify named a label the caller's session does not
// carry (never attached, ended, or cleared already).
var ErrNotCarried = errors.New("toolgate: the caller's session does not carry this label")

// Declassify clears the flow label from caller's session, so that a flow
// rule that waited for it no longer refuses or asks (an approver judged
// the untrusted input harmless, say). Only an approver may: by, when not
// nil, must be a principal the policy's approvers name (by key, or
// GroupPrefix and one of its groups) for some tier; otherwise approver
// must be one of the names. The reason is required. It is recorded (a
// gatelog.KindDeclassify entry naming who and why) before the session
// changes, and replay clears it again. A label a later call attaches is
// carried again.
func (g *Gate) Declassify(ctx context.Context, caller, label, approver string, by *Principal, reason string) error {
	who, err := g.declassifier(approver, by)
	if err != nil {
		return err
	}
	if strings.TrimSpace(reason) == "" {
		return fmt.Errorf("toolgate: declassifying %q: give a reason (it is recorded with who cleared it)", label)
	}
	if !g.known(caller) {
		return fmt.Errorf("toolgate: declassifying %q: %w (no session of caller %q)", label, ErrNotCarried, caller)
	}
	cl, err := g.caller(ctx, caller)
	if err != nil {
		return err
	}
	defer g.release(cl)
	cl.turn.Lock() // between two decisions of the caller
	defer cl.turn.Unlock()
	at := trace.Normalize(g.clock())
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if !cl.carries(label, at) {
		if shared, err := g.sharedCarries(ctx, caller, label, at); err != nil || !shared {
			return cmp.Or(err, fmt.Errorf("toolgate: declassifying %q: %w", label, ErrNotCarried))
		}
	}
	e := gatelog.Declassify{Session: g.SessionID(caller), Caller: caller, Label: label, Approver: who, Reason: OneLine(reason)}
	b, err := canon.Marshal(e)
	if err == nil {
		_, err = g.log.Append(ctx, gatelog.KindDeclassify, b, trace.At(at))
	}
	if err != nil {
		return fmt.Errorf("toolgate: recording the declassification of %q: %w", label, err)
	}
	cl.declassify(label)
	if g.labels != nil {
		if err := g.labels.Clear(ctx, caller, LabelClear{Label: label, At: at, Approver: who, Reason: e.Reason}); err != nil {
			return fmt.Errorf("toolgate: clearing the shared flow label %q of caller %q: %w", label, caller, err)
		}
		cl.clearSeen(label, at)
	}
	return nil
}

// declassifier returns who may clear a label: by's key, or approver,
// when the policy's approvers name them for some tier; else
// ErrNotAnApprover.
func (g *Gate) declassifier(approver string, by *Principal) (string, error) {
	for _, names := range g.comp().cfg.Approvers {
		for _, n := range names {
			switch group, isGroup := strings.CutPrefix(n, GroupPrefix); {
			case by == nil && n == approver && approver != "":
				return approver, nil
			case by != nil && by.Key() != "" && (n == by.Key() || isGroup && slices.Contains(by.Groups, group)):
				return by.Key(), nil
			}
		}
	}
	who := approver
	if by != nil {
		who = by.Key()
	}
	return "", fmt.Errorf("%w: %q is no approver of the policy, and only an approver may clear a label", ErrNotAnApprover, who)
}
