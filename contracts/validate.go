package contracts

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/verity-go/verity/contracts/rule"
	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/internal/strictjson"
	"github.com/verity-go/verity/internal/violation"
)

// Resolver tells the validators which ids exist, so that evidence pointers
// can be checked against them ("Validate evidence pointers reference known
// ids"). Without a resolver only the form of ids is checked.
//
// HasArtifact is asked about canonical artifact ids (tool:, retrieval:,
// configdiff:, compliance:); bare span ids (the ref of SPAN and MESSAGE
// evidence, span_ids lists) go to HasSpan.
type Resolver interface {
	HasTrace(traceID string) bool
	HasSpan(spanID string) bool
	HasArtifact(artifactID string) bool
}

// KnownIDs returns a Resolver that knows exactly the given ids (it keeps
// its own copies).
func KnownIDs(traces, spans, artifacts []string) Resolver {
	return knownIDs{traces: setOf(traces), spans: setOf(spans), artifacts: setOf(artifacts)}
}

type knownIDs struct{ traces, spans, artifacts map[string]bool }

func setOf(list []string) map[string]bool {
	m := make(map[string]bool, len(list))
	for _, id := range list {
		m[id] = true
	}
	return m
}

func (k knownIDs) HasTrace(id string) bool    { return k.traces[id] }
func (k knownIDs) HasSpan(id string) bool     { return k.spans[id] }
func (k knownIDs) HasArtifact(id string) bool { return k.artifacts[id] }

// Option configures a validation.
type Option func(*config)

type config struct {
	resolver   Resolver
	applicable []string
	hasApplic  bool
	specOnly   bool
}

// SpecOnly validates by the rules of specification 002 alone: the rules
// rule.All marks as extensions (Verity's additions, such as
// compliance_report.overall_verdict_consistent, incident_dossier.diff_ref_kind
// or time.z_suffix) are not checked, and nothing else changes. Without it
// every rule is checked. The document is still read strictly (json.* rules:
// a document with duplicate keys or unsafe integers has no one meaning to
// check), still decoded into the Go types (a leap second or a lower-case
// "t" or "z" in a time, which time.Time cannot read, is json.decode or
// schema.pattern under every option), and the builders always check every
// rule.
func SpecOnly() Option { return func(c *config) { c.specOnly = true } }

// skips reports whether the configuration leaves the rule out.
func (c *config) skips(name string) bool { return c.specOnly && isExtension(name) }

// isExtension reports whether the rule called name is one specification
// 002 does not state.
func isExtension(name string) bool {
	info, _ := rule.Lookup(name)
	return info.Extension
}

// WithResolver checks every evidence string against r (rules
// evidence.unknown_trace, evidence.unknown_span, evidence.unknown_artifact).
func WithResolver(r Resolver) Option { return func(c *config) { c.resolver = r } }

// WithApplicableControls names the controls that apply to the evaluated
// trace: a ComplianceReport must then list each of them (rule
// compliance_report.control_missing). Without it only "at most once" is
// checked, since applicability is not part of the report.
func WithApplicableControls(controlIDs ...string) Option {
	idList := append([]string(nil), controlIDs...)
	return func(c *config) { c.applicable, c.hasApplic = idList, true }
}

func newConfig(opts []Option) *config {
	c := &config{}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return c
}

// Validate checks a document of the given kind against its schema and every
// semantic rule. It returns nil for a valid document, a *ValidationError
// (errors.Is ErrInvalid) carrying all violations sorted,
// or an error wrapping ErrUnknownKind.
func Validate(kind Kind, data []byte, opts ...Option) error {
	vs, err := Check(kind, data, opts...)
	if err != nil {
		return err
	}
	return newValidationError(string(kind), vs)
}

// Check is Validate returning the violations themselves (empty when the
// document is valid). The error is only for an unknown kind or a broken
// embedded schema set.
func Check(kind Kind, data []byte, opts ...Option) ([]Violation, error) {
	cfg := newConfig(opts)
	switch kind {
	case KindRunRecord:
		_, vs, err := decode(kind, data, cfg, checkRunRecord)
		return vs, err
	case KindRCAReport:
		_, vs, err := decode(kind, data, cfg, checkRCAReport)
		return vs, err
	case KindComplianceReport:
		_, vs, err := decode(kind, data, cfg, checkComplianceReport)
		return vs, err
	case KindIncidentDossier:
		_, vs, err := decode(kind, data, cfg, checkIncidentDossier)
		return vs, err
	case KindPolicyControl:
		_, vs, err := decode(kind, data, cfg, checkPolicyControl)
		return vs, err
	case KindPolicyControlLibrary:
		_, vs, err := decode(kind, data, cfg, checkPolicyControlLibrary)
		return vs, err
	case KindAnnotation:
		_, vs, err := decode(kind, data, cfg, checkAnnotation)
		return vs, err
	}
	_, err := ParseKind(string(kind))
	return nil, err
}

// DecodeRunRecord decodes and validates a RunRecord. The record is returned
// as far as it could be decoded, together with a *ValidationError listing
// every violation (nil when valid).
func DecodeRunRecord(data []byte, opts ...Option) (RunRecord, error) {
	return decodeTyped(KindRunRecord, data, opts, checkRunRecord)
}

// DecodeRCAReport decodes and validates an RCAReport (see DecodeRunRecord).
func DecodeRCAReport(data []byte, opts ...Option) (RCAReport, error) {
	return decodeTyped(KindRCAReport, data, opts, checkRCAReport)
}

// DecodeComplianceReport decodes and validates a ComplianceReport.
func DecodeComplianceReport(data []byte, opts ...Option) (ComplianceReport, error) {
	return decodeTyped(KindComplianceReport, data, opts, checkComplianceReport)
}

// DecodeIncidentDossier decodes and validates an IncidentDossier.
func DecodeIncidentDossier(data []byte, opts ...Option) (IncidentDossier, error) {
	return decodeTyped(KindIncidentDossier, data, opts, checkIncidentDossier)
}

// DecodePolicyControl decodes and validates one PolicyControl.
func DecodePolicyControl(data []byte, opts ...Option) (PolicyControl, error) {
	return decodeTyped(KindPolicyControl, data, opts, checkPolicyControl)
}

// DecodePolicyControlLibrary decodes and validates a control library (a JSON
// array of PolicyControl).
func DecodePolicyControlLibrary(data []byte, opts ...Option) ([]PolicyControl, error) {
	return decodeTyped(KindPolicyControlLibrary, data, opts, checkPolicyControlLibrary)
}

// DecodeAnnotation decodes and validates an annotation payload, including
// the formal contract inside explanation_json.
func DecodeAnnotation(data []byte, opts ...Option) (Annotation, error) {
	return decodeTyped(KindAnnotation, data, opts, checkAnnotation)
}

func decodeTyped[T any](kind Kind, data []byte, opts []Option, check func(*checker, *T)) (T, error) {
	v, vs, err := decode(kind, data, newConfig(opts), check)
	if err != nil {
		return v, err
	}
	return v, newValidationError(string(kind), vs)
}

// decode reads and checks a document: by the fast path when it finds
// nothing wrong, else by the full one, which says what is wrong.
func decode[T any](kind Kind, data []byte, cfg *config, check func(*checker, *T)) (T, []Violation, error) {
	if out, ok := decodeFast(kind, data, cfg, check); ok {
		return out, nil, nil
	}
	return decodeFull(kind, data, cfg, check)
}

// decodeFast is the path of a valid document, in two passes over its
// bytes and no tree: the compiled shape of the kind's schema (shape.go)
// checks the strict text as the schema library would, strictjson reads
// it into the Go type, then the major version and the semantic rules are
// checked. It reports false as soon as anything is wrong — or differs
// from what decodeFull would read, such as an integer written 1.0 — and
// the caller then takes the full path, so a document's violations and
// its decoded value are always decodeFull's (TestFastPathAgreesWithSchema,
// FuzzFastPathAgrees).
func decodeFast[T any](kind Kind, data []byte, cfg *config, check func(*checker, *T)) (T, bool) {
	var out, zero T
	if ok, longInt := readShape(kind, data, cfg); !ok || longInt {
		return zero, false
	}
	if (strictjson.Options{AllowUnknown: true}).Unmarshal(data, &out) != nil {
		return zero, false
	}
	switch x := any(&out).(type) {
	case *RunRecord:
		// fromTree gives a json.RawMessage the canonical text of its value.
		for _, list := range [][]json.RawMessage{x.RuntimeRef.SubcallMetadata, x.RuntimeRef.ReplTrajectory} {
			for i, raw := range list {
				tree, err := canon.Decode(raw)
				if err != nil {
					return zero, false
				}
				c, err := canon.Marshal(tree)
				if err != nil {
					return zero, false
				}
				list[i] = c
			}
		}
	}
	if kind.versioned() && versionMismatch(schemaVersionOf(&out)) != nil {
		return zero, false
	}
	c := &checker{cfg: cfg}
	check(c, &out)
	if len(c.out) > 0 {
		return zero, false
	}
	return out, true
}

// schemaVersionOf returns the schema_version of a versioned document.
func schemaVersionOf(v any) string {
	switch x := v.(type) {
	case *RunRecord:
		return x.SchemaVersion
	case *RCAReport:
		return x.SchemaVersion
	case *ComplianceReport:
		return x.SchemaVersion
	case *IncidentDossier:
		return x.SchemaVersion
	case *Annotation:
		return x.SchemaVersion
	}
	return ""
}

// decodeFull runs the whole pipeline: strict JSON (RFC 8785 parser: no
// duplicate keys, no unsafe integers), the major version gate, the schema,
// the typed decoding, then the semantic rules. Semantic violations located
// at or under a schema violation are dropped: the schema message already
// says what is wrong there.
func decodeFull[T any](kind Kind, data []byte, cfg *config, check func(*checker, *T)) (T, []Violation, error) {
	var out T
	tree, err := canon.Decode(data)
	if err != nil {
		name := rule.JSONSyntax
		if errors.Is(err, canon.ErrDuplicateKey) {
			name = rule.DuplicateKey
		}
		return out, []Violation{{Path: "", Rule: name, Message: err.Error()}}, nil
	}
	nodes, _ := shapes()
	if vs := numbersTooLarge(nodes[kind], tree, "", nil); len(vs) > 0 {
		return out, sortViolations(vs), nil
	}
	if kind.versioned() {
		if v := majorMismatch(tree); v != nil {
			return out, []Violation{*v}, nil
		}
	}
	schemaVs, err := schemaViolations(kind, tree)
	if err != nil {
		return out, nil, err
	}
	schemaVs = slices.DeleteFunc(schemaVs, func(v Violation) bool { return cfg.skips(v.Rule) })
	if v := fromTree(tree, &out); v != nil {
		if len(schemaVs) == 0 {
			schemaVs = append(schemaVs, *v)
		}
		return out, sortViolations(schemaVs), nil
	}
	c := &checker{cfg: cfg}
	check(c, &out)
	all := schemaVs
	for _, v := range c.out {
		if !slices.ContainsFunc(schemaVs, func(s Violation) bool { return underOrAt(v.Path, s.Path) }) {
			all = append(all, v)
		}
	}
	return out, sortViolations(all), nil
}

// checker collects semantic violations.
type checker struct {
	cfg *config
	out []Violation
}

func (c *checker) add(p string, rule, format string, args ...any) {
	if c.cfg.skips(rule) {
		return
	}
	c.out = append(c.out, Violation{Path: p, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

// numbersTooLarge returns a json.decode violation for every number the
// schema compares (minimum, maximum, an integer type: node n says where;
// every number without n) whose decimal scale is beyond maxExponent:
// 1e-99999 is a double (0), but not a number the schema library can
// compare.
func numbersTooLarge(n *node, v any, p string, out []Violation) []Violation {
	switch x := v.(type) {
	case json.Number:
		if (n == nil || n.compares) && parseDecimal([]byte(x)).tooLarge() {
			lit := string(x)
			if len(lit) > 40 {
				lit = lit[:40] + "…"
			}
			out = append(out, Violation{Path: p, Rule: rule.Decode, Message: fmt.Sprintf(
				"the number %s has a decimal exponent beyond ±%d", lit, maxExponent)})
		}
	case []any:
		if n != nil && n.items == nil {
			return out
		}
		for i, e := range x {
			var c *node
			if n != nil {
				c = n.items
			}
			out = numbersTooLarge(c, e, violation.Index(p, i), out)
		}
	case map[string]any:
		for k, e := range x {
			var c *node
			if n != nil {
				if c = n.props[k]; c == nil {
					continue
				}
			}
			out = numbersTooLarge(c, e, violation.Join(p, k), out)
		}
	}
	return out
}
