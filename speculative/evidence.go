package speculative

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/trace"
)

// Claim-id keys in the order Guard 2 consults them. entity_id is never
// among them: it names the evidence itself, and falling back to it would
// let evidence anchor to itself.
var claimIDKeys = [...]string{"claim_id", "claim-id", "proposition_id"}

// claimIDOf applies Guard 2 to a decoded validation-evidence object: the
// claim id is the value of the first of "claim_id", "claim-id",
// "proposition_id" that is present. It must be a string with something
// other than white space in it. "entity_id" is never consulted. Any other
// case is an error wrapping ErrMissingClaimID that names the key.
func claimIDOf(doc map[string]any) (string, error) {
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
// carries no speculative marker anywhere and names its claim. The only ways
// to obtain one are DecodeEvidence and the Steward, so holding an Evidence
// is proof of both guards.
type Evidence struct {
	claimID     string
	success     bool
	outcome     Outcome
	variance    float64
	hasVariance bool
	doc         []byte // canonical JSON
	id          trace.Hash
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
func (e Evidence) ID() trace.Hash { return e.id }

// DecodeEvidence applies the guards to a validation-evidence document, a
// JSON text, and returns the Evidence, or a *ValidationError listing every
// violation:
//
//   - Guard 1 (hard): the document carries no speculative marker at any
//     depth, in any JSON-in-string layer (Check); a marker is a violation
//     at its path wrapping a *SpeculativeError, a limit a *LimitError;
//   - the document is a JSON object that canonical JSON accepts;
//   - Guard 2 (hard): the claim id is the value of the first of
//     "claim_id", "claim-id", "proposition_id" that is present, a string
//     that is not blank; "entity_id" is never consulted;
//   - "success", when present, is a boolean; "outcome", when present, is
//     supports, contradicts or refutes (any case); "variance", when
//     present, is a finite number ≥ 0.
//
// Steward.PersistEvidence applies the same rules to a document given as a
// decoded value or a Go value.
func DecodeEvidence(doc []byte) (Evidence, error) { return evidenceOf(doc) }

// evidenceOf is DecodeEvidence for anything Detect accepts: a decoded
// object, json.RawMessage or []byte holding one, or a Go value
// encoding/json turns into one.
func evidenceOf(doc any) (Evidence, error) {
	const subject = "validation evidence"
	var vs violations
	if err := Check(doc); err != nil {
		path, msg := "", detail(err)
		var se *SpeculativeError
		var le *LimitError
		if errors.As(err, &se) {
			path, msg = se.Finding.Path, se.Finding.what()+se.Finding.layers()
		} else if errors.As(err, &le) {
			path = le.Path
		}
		vs.add(path, "guard-1", err, "%s", msg)
	}
	b, err := canonical(doc)
	if err != nil {
		vs.add("", "json", ErrMalformed, "%v", err)
		return Evidence{}, vs.err(subject)
	}
	var obj map[string]any
	if json.Unmarshal(b, &obj) != nil || obj == nil {
		vs.add("", "json", ErrMalformed, "validation evidence must be a JSON object")
		return Evidence{}, vs.err(subject)
	}
	ev := Evidence{doc: b, id: sha256.Sum256(b), outcome: OutcomeSupports}
	if ev.claimID, err = claimIDOf(obj); err != nil {
		vs.add("", "guard-2", ErrMissingClaimID, "%s", detail(err))
	}
	if v, ok := obj["success"]; ok {
		if ev.success, ok = v.(bool); !ok {
			vs.add("/success", "type", ErrMalformed, "must be a boolean, got %s", jsonKind(v))
		}
	}
	if v, ok := obj["outcome"]; ok {
		s, isString := v.(string)
		o, known := parseOutcome(s)
		if !isString || !known {
			vs.add("/outcome", "enum", ErrMalformed, "must be supports, contradicts or refutes")
		}
		ev.outcome = o
	}
	if v, ok := obj["variance"]; ok {
		f, isNum := v.(float64)
		if !isNum || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			vs.add("/variance", "range", ErrMalformed, "must be a finite number ≥ 0")
		}
		ev.variance, ev.hasVariance = f, true
	}
	if err := vs.err(subject); err != nil {
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
