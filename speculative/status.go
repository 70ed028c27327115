package speculative

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/verity-go/verity/trace"
)

// Status is the epistemic status of a claim. The zero value is not a
// status: every method treats it as invalid, Promote refuses it, and it
// never counts as grounded.
//
// Statuses are ordered by how far a claim stands from refutation:
// refuted < speculative < unresolved < supported < proven. A move up this
// order is an upgrade (the promotion policy applies), a move down is a
// downgrade (always allowed, always recorded).
type Status uint8

const (
	StatusRefuted     Status = iota + 1 // a successful experiment refuted the claim
	StatusSpeculative                   // no grounded evidence yet
	StatusUnresolved                    // grounded evidence contradicts itself
	StatusSupported                     // at least one successful experiment supports it
	StatusProven                        // at least two successful, low-variance experiments support it
)

var statusNames = [...]string{"", "refuted", "speculative", "unresolved", "supported", "proven"}

// statuses lists the five statuses in order.
func statuses() []Status {
	return []Status{StatusRefuted, StatusSpeculative, StatusUnresolved, StatusSupported, StatusProven}
}

// Valid reports whether s is one of the five statuses.
func (s Status) Valid() bool { return s >= StatusRefuted && s <= StatusProven }

func (s Status) String() string {
	if s.Valid() {
		return statusNames[s]
	}
	return "Status(" + strconv.Itoa(int(s)) + ")"
}

// ParseStatus reads a status name, ignoring case and surrounding white
// space. Anything else is ErrUnknownStatus.
func ParseStatus(text string) (Status, error) {
	t := strings.TrimSpace(text)
	for _, s := range statuses() {
		if strings.EqualFold(t, statusNames[s]) {
			return s, nil
		}
	}
	return 0, fmt.Errorf("%w: %q (want one of refuted, speculative, unresolved, supported, proven)", ErrUnknownStatus, text)
}

// MarshalText writes the lower-case name; the zero Status is an error.
func (s Status) MarshalText() ([]byte, error) {
	if !s.Valid() {
		return nil, fmt.Errorf("%w: %v", ErrUnknownStatus, s)
	}
	return []byte(statusNames[s]), nil
}

// UnmarshalText is ParseStatus.
func (s *Status) UnmarshalText(b []byte) error {
	v, err := ParseStatus(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Outcome is what one experiment said about its claim.
type Outcome uint8

const (
	OutcomeSupports    Outcome = iota + 1 // the result agrees with the claim
	OutcomeContradicts                    // the result disagrees with other evidence without refuting the claim
	OutcomeRefutes                        // a falsification criterion fired
)

var outcomeNames = [...]string{"", "supports", "contradicts", "refutes"}

func (o Outcome) String() string {
	if o >= OutcomeSupports && o <= OutcomeRefutes {
		return outcomeNames[o]
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

func parseOutcome(text string) (Outcome, bool) {
	t := strings.TrimSpace(text)
	for o := OutcomeSupports; o <= OutcomeRefutes; o++ {
		if strings.EqualFold(t, outcomeNames[o]) {
			return o, true
		}
	}
	return 0, false
}

// ProvenVariance is the largest variance a supporting experiment may report
// and still count towards StatusProven. Specification 001 does not state
// it: it is the reference implementation's "low variance" bound (≤ 0.1).
const ProvenVariance = 0.1

// DeriveStatus is the status a body of grounded evidence supports on its
// own. Only successful experiments count (a failed run is not evidence).
// In order:
//
//  1. any refuting experiment → StatusRefuted;
//  2. any contradicting experiment → StatusUnresolved;
//  3. no successful experiment → StatusSpeculative;
//  4. at least two supporting experiments that report a variance of at
//     most ProvenVariance → StatusProven;
//  5. otherwise (at least one supporting experiment) → StatusSupported.
//
// Evidence is grounded by construction: an Evidence value exists only
// after DecodeEvidence (or the Steward) has applied Guards 1 and 2. Evidence is
// content-addressed, so a document listed more than once (same ID) is one
// experiment and counts once.
//
// Specification 001 names the five statuses and makes validation evidence
// with success true a condition of promotion (hence only successful
// experiments count); it states none of the rules 1–5. They are Verity's
// choice, following the reference implementation
// (SuperHyperion's EpistemicStatus.from_evidence, with the same order of
// precedence: refuted, unresolved on a contradiction, speculative without
// evidence, proven on replication — at least two experiments — with
// variance ≤ 0.1, otherwise supported). One difference: there the variance
// is the sample variance of the experiments' result values; here each
// supporting experiment reports its own variance, and two of them must
// each be at most ProvenVariance.
func DeriveStatus(evidence []Evidence) Status {
	var ok, lowVariance int
	var refuted, contradicted bool
	seen := make(map[trace.Hash]bool, len(evidence))
	for _, e := range evidence {
		if !e.success || seen[e.id] {
			continue
		}
		seen[e.id] = true
		ok++
		switch e.outcome {
		case OutcomeRefutes:
			refuted = true
		case OutcomeContradicts:
			contradicted = true
		default:
			if e.hasVariance && e.variance <= ProvenVariance {
				lowVariance++
			}
		}
	}
	switch {
	case refuted:
		return StatusRefuted
	case contradicted:
		return StatusUnresolved
	case ok == 0:
		return StatusSpeculative
	case lowVariance >= 2:
		return StatusProven
	}
	return StatusSupported
}
