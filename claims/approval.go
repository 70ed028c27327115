package claims

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Errors of RecordApproval.
var (
	// ErrNotRequired: the approver is not in the bundle's required approvals.
	ErrNotRequired = errors.New("claims: approver not required")
	// ErrAlreadyDecided: the approver has already recorded a decision.
	ErrAlreadyDecided = errors.New("claims: approver already decided")
)

// RecordApproval returns a copy of b with the human decision a appended to
// its audit trail. b itself is never modified; on error the caller keeps b
// as it was. The approval must name one of b.RequiredApprovals (as set by
// Evaluate) that has not decided yet, carry a time and be APPROVED or
// REJECTED. The decision of the returned bundle is unchanged: evaluate it
// again to learn the new decision (PUBLISH once every required approver has
// approved, REFUSE on any rejection).
func RecordApproval(b ClaimBundle, a Approval) (ClaimBundle, error) {
	var v validator
	v.approval(a)
	if err := invalid("approval", v.vs, ErrInvalid); err != nil {
		return b, err
	}
	if !slices.Contains(b.RequiredApprovals, a.Approver) {
		return b, fmt.Errorf("%w: %q (required: %q)", ErrNotRequired, a.Approver, b.RequiredApprovals)
	}
	if slices.ContainsFunc(b.AuditTrail.HumanApprovals, func(h Approval) bool { return h.Approver == a.Approver }) {
		return b, fmt.Errorf("%w: %q", ErrAlreadyDecided, a.Approver)
	}
	out := b.Clone()
	a.Timestamp = a.Timestamp.UTC()
	out.AuditTrail.HumanApprovals = append(orEmpty(out.AuditTrail.HumanApprovals), a)
	return out, nil
}

// Complete returns a copy of b with the defaults the specification's
// reference implementation fills in at construction: an id for the bundle
// and for every claim that has none (from newID), the timestamp now if it
// is zero, decision DEFER if empty, gate_recommendation EXECUTE where a
// claim's uncertainty has none, and empty lists instead of nil ones. Times
// are put in UTC. It does not invent evidence retrieval times: a pointer
// without retrieved_at stays invalid.
func (b ClaimBundle) Complete(newID func() string, now time.Time) ClaimBundle {
	out := b.canonical()
	if out.ID == "" {
		out.ID = newID()
	}
	if out.Timestamp.IsZero() {
		out.Timestamp = now.UTC()
	}
	if out.Decision == "" {
		out.Decision = DecisionDefer
	}
	for i := range out.Claims {
		c := &out.Claims[i]
		if c.ID == "" {
			c.ID = newID()
		}
		if c.Uncertainty.GateRecommendation == "" {
			c.Uncertainty.GateRecommendation = RecommendExecute
		}
	}
	return out
}
