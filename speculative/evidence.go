package speculative

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/verity-go/verity/internal/canon"
)

// Digest is a SHA-256 digest. Its text form is 64 lower-case hex digits.
type Digest [32]byte

func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// MarshalText writes the hex form.
func (d Digest) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads the hex form.
func (d *Digest) UnmarshalText(b []byte) error {
	if len(b) != 64 {
		return fmt.Errorf("%w: digest must be 64 hex digits, got %d bytes", ErrMalformed, len(b))
	}
	var out Digest
	if _, err := hex.Decode(out[:], b); err != nil {
		return fmt.Errorf("%w: digest: %v", ErrMalformed, err)
	}
	*d = out
	return nil
}

// Claim-id keys in the order Guard 2 consults them. entity_id is never
// among them: it names the evidence itself, and falling back to it would
// let evidence anchor to itself.
var claimIDKeys = [...]string{"claim_id", "claim-id", "proposition_id"}

// ClaimID applies Guard 2 to a decoded validation-evidence object: the
// claim id is the value of the first of "claim_id", "claim-id",
// "proposition_id" that is present. It must be a string with something
// other than white space in it. "entity_id" is never consulted. Any other
// case is an error wrapping ErrMissingClaimID that names the key.
func ClaimID(doc map[string]any) (string, error) {
	for _, k := range claimIDKeys {
		v, present := doc[k]
		if !present {
			continue
		}
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("%w: %q must be a string, got %s", ErrMissingClaimID, k, jsonKind(v))
		}
		if strings.TrimSpace(s) == "" {
			return "", fmt.Errorf("%w: %q is blank", ErrMissingClaimID, k)
		}
		return s, nil
	}
	if _, ok := doc["entity_id"]; ok {
		return "", fmt.Errorf("%w: none of claim_id, claim-id, proposition_id is present (entity_id names the evidence, not its claim, and is never used)", ErrMissingClaimID)
	}
	return "", fmt.Errorf("%w: none of claim_id, claim-id, proposition_id is present", ErrMissingClaimID)
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64, json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// Evidence is validation evidence that has passed Guards 1 and 2: it
// carries no speculative marker anywhere and names its claim. The only way
// to obtain one is ParseEvidence, so holding an Evidence is proof of both
// guards.
type Evidence struct {
	claimID     string
	success     bool
	outcome     Outcome
	variance    float64
	hasVariance bool
	doc         []byte // canonical JSON
	id          Digest
}

// ClaimID is the claim the evidence is for.
func (e Evidence) ClaimID() string { return e.claimID }

// Success reports the document's "success" field (false when absent).
func (e Evidence) Success() bool { return e.success }

// Outcome reports the "outcome" field ("supports" when absent).
func (e Evidence) Outcome() Outcome { return e.outcome }

// Variance reports the "variance" field, and whether it was present.
func (e Evidence) Variance() (float64, bool) { return e.variance, e.hasVariance }

// Document returns a copy of the canonical JSON of the evidence.
func (e Evidence) Document() []byte { return bytes.Clone(e.doc) }

// ID is the SHA-256 of the canonical document: evidence is
// content-addressed, so the same document always has the same id.
func (e Evidence) ID() Digest { return e.id }

// ParseEvidence applies the guards to a validation-evidence document and
// returns the Evidence, or a *ValidationError listing every violation:
//
//   - Guard 1 (hard): the document carries no speculative marker at any
//     depth, in any JSON-in-string layer (Check); a marker is a violation
//     at its path wrapping a *SpeculativeError, a limit a *LimitError;
//   - the document is a JSON object that canonical JSON accepts;
//   - Guard 2 (hard): ClaimID succeeds;
//   - "success", when present, is a boolean; "outcome", when present, is
//     supports, contradicts or refutes (any case); "variance", when
//     present, is a finite number ≥ 0.
//
// doc is anything Detect accepts: a decoded object, json.RawMessage or
// []byte holding one, or a Go value encoding/json turns into one.
func ParseEvidence(doc any) (Evidence, error) {
	var vs []Violation
	if err := Check(doc); err != nil {
		path := ""
		var se *SpeculativeError
		var le *LimitError
		if errors.As(err, &se) {
			path = se.Finding.Path
		} else if errors.As(err, &le) {
			path = le.Path
		}
		vs = append(vs, Violation{Path: path, Rule: "guard-1", Message: err.Error(), err: err})
	}
	b, err := canonical(doc)
	if err != nil {
		vs = append(vs, Violation{Rule: "json", Message: err.Error(), err: ErrMalformed})
		return Evidence{}, newValidationError("validation evidence", vs)
	}
	var obj map[string]any
	if json.Unmarshal(b, &obj) != nil || obj == nil {
		vs = append(vs, Violation{Rule: "json", Message: "validation evidence must be a JSON object", err: ErrMalformed})
		return Evidence{}, newValidationError("validation evidence", vs)
	}
	ev := Evidence{doc: b, id: sha256.Sum256(b), outcome: OutcomeSupports}
	if ev.claimID, err = ClaimID(obj); err != nil {
		vs = append(vs, Violation{Rule: "guard-2", Message: err.Error(), err: ErrMissingClaimID})
	}
	if v, ok := obj["success"]; ok {
		if ev.success, ok = v.(bool); !ok {
			vs = append(vs, Violation{Path: "success", Rule: "type", Message: "must be a boolean, got " + jsonKind(v), err: ErrMalformed})
		}
	}
	if v, ok := obj["outcome"]; ok {
		s, isString := v.(string)
		o, known := parseOutcome(s)
		if !isString || !known {
			vs = append(vs, Violation{Path: "outcome", Rule: "enum", Message: "must be supports, contradicts or refutes", err: ErrMalformed})
		}
		ev.outcome = o
	}
	if v, ok := obj["variance"]; ok {
		f, isNum := v.(float64)
		if !isNum || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			vs = append(vs, Violation{Path: "variance", Rule: "range", Message: "must be a finite number ≥ 0", err: ErrMalformed})
		}
		ev.variance, ev.hasVariance = f, true
	}
	if err := newValidationError("validation evidence", vs); err != nil {
		return Evidence{}, err
	}
	return ev, nil
}

// canonical returns the canonical JSON of a document given as anything
// Detect accepts: a []byte is a JSON text (not bytes to base64-encode).
func canonical(doc any) ([]byte, error) {
	if b, ok := doc.([]byte); ok {
		return canon.Transform(b)
	}
	return canon.Marshal(doc)
}
