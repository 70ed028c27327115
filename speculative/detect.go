package speculative

import (
	"fmt"
	"strconv"
	"strings"
)

// Detection limits. A value that exceeds one of them is not checked to the
// end, so it is rejected: Detect and Check return a *LimitError
// (errors.Is(err, ErrLimit)).
const (
	// MaxDepth is the deepest nesting of objects and arrays, counted
	// through every JSON-in-string layer (a string holding an object at
	// depth 3 puts that object's members at depth 4).
	MaxDepth = 512
	// MaxEncodings is how many times a string may hold JSON inside JSON
	// (an object serialised into a string, that string serialised again,
	// and so on). Each layer is parsed and checked.
	MaxEncodings = 8
	// MaxWork bounds the total work of one check: one unit per decoded
	// value and per byte of every string or JSON text examined, layers
	// included. A 1 MiB document with every string holding JSON eight
	// times over stays well inside it.
	MaxWork = 64 << 20
)

// Rule names why a marker is a marker.
type Rule uint8

const (
	// RuleStatus: "epistemic_status" or "lane" whose value reads
	// "speculative" (a string, or a string inside an array).
	RuleStatus Rule = iota + 1
	// RuleContext: a key of the speculative_context family — any key whose
	// folded form starts with "speculativecontext" (speculative_context,
	// speculative-context, speculativeContextID, ...).
	RuleContext
	// RuleArtifact: a key naming a speculative artifact: experiment_hints,
	// alternatives, analogies, edge_cases.
	RuleArtifact
	// RuleQuoted: the last-resort wire. A string that is not JSON contains
	// a quoted marker token ("speculative", "epistemic_status", a context
	// key or an artifact key, between ' or " quotes).
	RuleQuoted
	// RuleResidue: an "epistemic_status" key with any value. Only
	// ExperimentSpec decoding uses it: a spec has no business carrying an
	// epistemic status at all.
	RuleResidue
)

func (r Rule) String() string {
	switch r {
	case RuleStatus:
		return "status"
	case RuleContext:
		return "context"
	case RuleArtifact:
		return "artifact"
	case RuleQuoted:
		return "quoted"
	case RuleResidue:
		return "residue"
	}
	return "Rule(" + strconv.Itoa(int(r)) + ")"
}

// Finding says where a speculative marker is and which one it is.
type Finding struct {
	// Path is the RFC 6901 JSON Pointer of the marker
	// (/params/l/0/alternatives, /meta/odd~1key/lane; "" for the value
	// itself). A JSON text held in a string continues the pointer of that
	// string: /payload/lane is the member lane of the object the string
	// at /payload holds.
	Path string
	// Marker is the canonical name: epistemic_status, lane,
	// speculative_context, experiment_hints, alternatives, analogies,
	// edge_cases, or speculative (a quoted value token).
	Marker string
	// Key is the key as written ("" for RuleQuoted).
	Key string
	// Rule is why it counts.
	Rule Rule
	// Encodings is how many JSON-in-string layers were opened to reach it.
	Encodings int
}

func (f Finding) String() string {
	where := f.Path
	if where == "" {
		where = "the top level"
	}
	var b strings.Builder
	b.WriteString(f.what())
	b.WriteString(" at ")
	b.WriteString(where)
	b.WriteString(f.layers())
	return b.String()
}

// what says which marker was found, without where.
func (f Finding) what() string {
	switch f.Rule {
	case RuleStatus:
		return fmt.Sprintf("%q is speculative", f.Key)
	case RuleQuoted:
		return fmt.Sprintf("quoted marker %q in a string", f.Marker)
	}
	return fmt.Sprintf("%s key %q", f.Rule, f.Key)
}

// layers says how many JSON-in-string layers were crossed, if any.
func (f Finding) layers() string {
	switch f.Encodings {
	case 0:
		return ""
	case 1:
		return " (inside 1 JSON-in-string layer)"
	}
	return fmt.Sprintf(" (inside %d JSON-in-string layers)", f.Encodings)
}

// Detect reports whether v carries a speculative marker anywhere, and
// where: it returns the first marker in document order — array elements
// by index; members of a Go map by key, byte-wise, so the answer does not
// depend on map iteration order; members of a JSON text as written — and
// found = true.
//
// v is a decoded JSON value (nil, bool, float64, json.Number, string,
// []any, map[string]any, or the typed variants map[string]string,
// []string, []map[string]any, map[string]json.RawMessage), a
// json.RawMessage or []byte holding JSON, or any other Go value, which is
// first encoded with encoding/json.
//
// A non-nil err is a *LimitError, or wraps ErrMalformed for a Go value
// encoding/json cannot encode: v could not be checked to the end and must
// be treated as speculative (fail closed), as Check does.
func Detect(v any) (f Finding, found bool, err error) {
	w := newWalker(false, false, 1)
	w.value(v, 0, "")
	if w.err != nil {
		return Finding{}, false, w.err
	}
	if len(w.found) == 0 {
		return Finding{}, false, nil
	}
	return w.found[0], true, nil
}

// Check returns nil when v is grounded, a *SpeculativeError
// (errors.Is(err, ErrSpeculative)) naming the first marker, or the error
// Detect returned.
func Check(v any) error {
	f, found, err := Detect(v)
	if err != nil {
		return err
	}
	if found {
		return &SpeculativeError{Finding: f}
	}
	return nil
}

// detectAll returns up to max findings, in document order. strict adds
// RuleResidue.
func detectAll(v any, strict bool, max int) ([]Finding, error) {
	w := newWalker(true, strict, max)
	w.value(v, 0, "")
	if w.err != nil {
		return nil, w.err
	}
	return w.found, nil
}

// pointer renders path segments as an RFC 6901 JSON Pointer: what
// violation.Join and violation.Index build, in one allocation (a finding's
// path is built on the detector's hot path when a marker is found).
func pointer(path []seg) string {
	var buf [128]byte
	b := buf[:0]
	for _, s := range path {
		b = append(b, '/')
		switch s.kind {
		case segIndex:
			b = strconv.AppendInt(b, int64(s.idx), 10)
		case segBytes:
			b = appendToken(b, s.key)
		default:
			b = appendToken(b, s.str)
		}
	}
	return string(b)
}

// appendToken appends a member name with "~" and "/" escaped.
func appendToken[T ~string | ~[]byte](b []byte, tok T) []byte {
	for i := 0; i < len(tok); i++ {
		switch tok[i] {
		case '~':
			b = append(b, "~0"...)
		case '/':
			b = append(b, "~1"...)
		default:
			b = append(b, tok[i])
		}
	}
	return b
}
