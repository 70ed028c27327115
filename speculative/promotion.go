package speculative

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/verity-go/verity/internal/violation"
	"github.com/verity-go/verity/trace"
)

// Direction says which way a transition moves a claim. The zero value is
// not a direction.
type Direction uint8

const (
	DirectionUnchanged Direction = iota + 1 // From == To
	DirectionUpgrade                        // up the order of statuses: the promotion policy applies
	DirectionDowngrade                      // down the order: always allowed, always recorded
)

var directionNames = [...]string{"", "unchanged", "upgrade", "downgrade"}

func (d Direction) valid() bool { return d >= DirectionUnchanged && d <= DirectionDowngrade }

func (d Direction) String() string {
	if d.valid() {
		return directionNames[d]
	}
	return "Direction(" + strconv.Itoa(int(d)) + ")"
}

// MarshalText writes the lower-case name; the zero Direction is an error.
func (d Direction) MarshalText() ([]byte, error) {
	if !d.valid() {
		return nil, fmt.Errorf("%w: direction %v", ErrMalformed, d)
	}
	return []byte(directionNames[d]), nil
}

// UnmarshalText reads the lower-case name.
func (d *Direction) UnmarshalText(b []byte) error {
	i := slices.Index(directionNames[1:], string(b))
	if i < 0 {
		return fmt.Errorf("%w: unknown direction %q", ErrMalformed, b)
	}
	*d = Direction(i + 1)
	return nil
}

// NonFragility is the outcome of the checks that a result is not an
// artefact of one lucky setting: the Feynman checks, and the sensitivity
// suite (every axis that flipped the result is a failure).
type NonFragility struct {
	FeynmanPassed       bool     `json:"feynman_passed"`
	SensitivityFailures []string `json:"sensitivity_failures"`
}

// Approval is the approval of a write intent.
type Approval struct {
	By    string `json:"by"`    // who approved
	Human bool   `json:"human"` // a person, not a policy
}

// PromotionRequest is everything the promotion policy looks at.
type PromotionRequest struct {
	ClaimID  string
	From, To Status
	// Evidence is the grounded validation evidence on record for the claim.
	Evidence []Evidence
	// Known lists the evidence that was already on record when the claim
	// was refuted; only evidence outside it is new.
	Known []trace.Hash
	// Checks are the non-fragility checks of the evidence.
	Checks NonFragility
	// Approval is the approval of the write intent; nil when there is none.
	Approval *Approval
}

// Transition is an allowed status change, as the Steward records it.
type Transition struct {
	ClaimID   string    `json:"claim_id"`
	From      Status    `json:"from"`
	To        Status    `json:"to"`
	Direction Direction `json:"direction"`
	// Derived is the status the evidence supports on its own (upgrades).
	Derived Status `json:"derived,omitzero"`
	// Evidence lists the ids of the successful evidence the upgrade rests
	// on, sorted.
	Evidence []trace.Hash `json:"evidence,omitempty"`
}

// Promote is the promotion policy, a pure function. It returns the
// Transition, or a *ValidationError (errors.Is(err, ErrPromotion)) with
// every reason the transition is refused:
//
//   - From and To must be statuses and ClaimID non-blank;
//   - a downgrade (To below From) is allowed without conditions: the
//     Steward records it like any other transition;
//   - From == To is allowed and changes nothing;
//   - speculative → proven is never allowed directly: a claim is supported
//     first;
//   - every other upgrade needs grounded validation evidence for this claim
//     with success true, enough of it that DeriveStatus reaches To, all of
//     the evidence naming this claim; passed non-fragility checks (Feynman
//     checks passed, no sensitivity failure); and an approved write
//     intent;
//   - leaving refuted also needs new evidence (successful evidence not in
//     Known) and the approval of a human.
func Promote(req PromotionRequest) (Transition, error) {
	const subject = "promotion"
	var vs violations
	bad := func(rule, format string, args ...any) { vs.add("", rule, ErrPromotion, format, args...) }
	if strings.TrimSpace(req.ClaimID) == "" {
		bad("claim", "claim id is blank")
	}
	if !req.From.Valid() {
		bad("status", "from is not a status: %v", req.From)
	}
	if !req.To.Valid() {
		bad("status", "to is not a status: %v", req.To)
	}
	if err := vs.err(subject); err != nil {
		return Transition{}, err
	}
	t := Transition{ClaimID: req.ClaimID, From: req.From, To: req.To, Direction: direction(req.From, req.To)}
	if t.Direction != DirectionUpgrade {
		return t, nil
	}
	if req.From == StatusSpeculative && req.To == StatusProven {
		bad("no-direct-proof", "speculative → proven is never allowed directly; promote to supported first")
	}
	var ok []Evidence
	for i, e := range req.Evidence {
		if e.claimID != req.ClaimID {
			vs.add(violation.Index("/evidence", i), "claim", ErrPromotion, "evidence is for claim %q, not %q", e.claimID, req.ClaimID)
			continue
		}
		if e.success && e.doc != nil {
			ok = append(ok, e)
		}
	}
	if len(ok) == 0 {
		bad("evidence", "an upgrade needs grounded validation evidence with success true")
	} else {
		t.Derived = DeriveStatus(ok)
		if t.Derived < req.To {
			bad("evidence", "the evidence supports %v, not %v", t.Derived, req.To)
		}
	}
	for _, e := range ok {
		t.Evidence = append(t.Evidence, e.id)
	}
	slices.SortFunc(t.Evidence, func(a, b trace.Hash) int { return bytes.Compare(a[:], b[:]) })
	t.Evidence = slices.Compact(t.Evidence) // the same document is one experiment
	if !req.Checks.FeynmanPassed {
		bad("non-fragility", "the Feynman checks have not passed")
	}
	if n := len(req.Checks.SensitivityFailures); n > 0 {
		bad("non-fragility", "%d sensitivity failure(s): %s", n, strings.Join(req.Checks.SensitivityFailures, ", "))
	}
	if req.Approval == nil {
		bad("approval", "an upgrade needs an approved write intent")
	}
	if req.From == StatusRefuted {
		fresh := 0
		for _, e := range ok {
			if !slices.Contains(req.Known, e.id) {
				fresh++
			}
		}
		if fresh == 0 {
			bad("refuted", "leaving refuted needs new evidence")
		}
		if req.Approval == nil || !req.Approval.Human {
			bad("refuted", "leaving refuted needs the approval of a human")
		}
	}
	if err := vs.err(subject); err != nil {
		return Transition{}, err
	}
	return t, nil
}

// direction says which way from → to moves a claim.
func direction(from, to Status) Direction {
	switch {
	case to == from:
		return DirectionUnchanged
	case to < from:
		return DirectionDowngrade
	}
	return DirectionUpgrade
}
