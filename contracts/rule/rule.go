// Package rule names the rules package contracts checks: the stable names
// a contracts.Violation carries, and for each its description, where it
// comes from and whether it extends specification 002.
//
//	if ve, ok := errors.AsType[*contracts.ValidationError](err); ok && ve.Has(rule.TimelineSorted) {
//		// the dossier's timeline is out of order
//	}
//
// The schema rules are not listed here: they are named "schema.<keyword>"
// after the JSON Schema keyword that failed (schema.required, schema.enum,
// …), or after the x-verity-rule of a keyword Verity adds (IDNonEmpty,
// TimeZSuffix, ExcerptHashSHA256, NumberRange).
package rule

import "slices"

// The names of the named rules.
const (
	JSONSyntax   = "json.syntax"
	DuplicateKey = "json.duplicate_key"
	Decode       = "json.decode"
	MajorVersion = "schema_version.major_mismatch"

	// Schema keywords that go beyond specification 002 (see All).
	IDNonEmpty        = "id.non_empty"
	TimeZSuffix       = "time.z_suffix"
	ExcerptHashSHA256 = "excerpt_hash.sha256"
	NumberRange       = "number.range"

	RefFormat       = "evidence_ref.ref_format"
	RefKind         = "evidence_ref.kind_mismatch"
	RefSpan         = "evidence_ref.span_mismatch"
	ArtifactFormat  = "artifact_id.format"
	UnknownTrace    = "evidence.unknown_trace"
	UnknownSpan     = "evidence.unknown_span"
	UnknownArtifact = "evidence.unknown_artifact"

	RunErrorOnFailure    = "run_record.error_required_on_failure"
	RunArtifactOnSuccess = "run_record.artifact_path_required_on_success"
	RunUsageWithinBudget = "run_record.usage_within_budget"
	RunCompletedAfter    = "run_record.completed_not_before_started"
	RunTimeWindowOrder   = "run_record.time_window_order"
	RunArtifactType      = "run_record.artifact_type_matches_run_type"

	RCAEvidenceNonEmpty = "rca_report.evidence_refs_nonempty"

	ControlUnique            = "compliance_report.control_unique"
	ControlMissing           = "compliance_report.control_missing"
	FailNeedsEvidence        = "compliance_report.fail_needs_evidence"
	InsufficientNeedsMissing = "compliance_report.insufficient_evidence_needs_missing"
	MissingNeedsInsufficient = "compliance_report.missing_evidence_needs_insufficient"
	OverallVerdictConsistent = "compliance_report.overall_verdict_consistent"

	RepresentativeTraces = "incident_dossier.representative_traces_nonempty"
	HypothesisEvidence   = "incident_dossier.hypothesis_needs_evidence"
	TimelineSorted       = "incident_dossier.timeline_sorted"
	DiffRefRequired      = "incident_dossier.diff_ref_required"
	DiffRefKind          = "incident_dossier.diff_ref_kind"

	RequiredEvidence = "policy_control.required_evidence_nonempty"
	ControlVersion   = "policy_control_library.control_version_unique"

	Explanation        = "annotation.explanation_json"
	ExplanationVersion = "annotation.schema_version_matches_explanation"
)

// Info describes one named rule: what it checks, where it comes from,
// and whether it is an extension.
type Info struct {
	Name        string
	Description string
	// Source names where the rule comes from: a section of specification
	// 002 ("Formal Contracts") that states it, or the reason Verity adds it.
	Source string
	// Extension marks a rule that specification 002 does not state: Verity
	// adds it, in most cases following the reference implementation the
	// specification was written for. Validation checks extensions by
	// default; SpecOnly leaves them out.
	Extension bool
}

// Where the rules come from. "spec" is specification 002, "reference" the
// Python implementation it was written for (investigator/runtime/
// contracts.py and the engines that use it).
const (
	srcReading     = "reading the document: spec, Acceptance Checks 1 (contract fixtures parse); the strict reader is Verity's and applies under every option"
	srcConventions = "spec, Global Conventions"
	srcVersioning  = "spec, Compatibility and Versioning (a major bump marks a breaking change)"
	srcIDFormats   = "spec, Canonical ID Formats and Acceptance Checks 4 (wrong id format fails)"
	srcEvidenceRef = "spec, Canonical EvidenceRef rules (ref is a resolvable identifier under the canonical id formats)"
	srcKnownIDs    = "spec, Validation Requirements 2 (evidence pointers reference known ids); checked only WithResolver"
	srcRunRecord   = "spec, Contract 1 (RunRecord) rules"
	srcRCA         = "spec, Contract 2 (RCAReport) rules"
	srcCompliance  = "spec, Contract 3 (ComplianceReport) rules"
	srcDossier     = "spec, Contract 4 (IncidentDossier) rules"
	srcControl     = "spec, Contract 5 (PolicyControl) rules"
	srcAnnotation  = "spec, Contract 6 (annotation payload) rules"
)

var ruleInfos = []Info{
	{JSONSyntax, "the document is one RFC 8259 JSON text without unsafe integers (beyond ±(2^53−1))", srcReading, false},
	{DuplicateKey, "no object has two members with the same key", srcReading + " (RFC 8259 §4 leaves the meaning of duplicate names undefined)", false},
	{Decode, "the document decodes into the contract's Go type", srcReading, false},
	{MajorVersion, "schema_version has the library's major version (a newer minor is accepted)", srcVersioning, false},
	{IDNonEmpty, "ids, names and versions are non-empty strings",
		"Verity's choice: the spec types ids as strings; an empty string identifies nothing", true},
	{TimeZSuffix, "times are spelled with a trailing Z, not +00:00 or -00:00",
		"Verity's choice, following the reference implementation (it writes %Y-%m-%dT%H:%M:%SZ): the spec's \"RFC3339 UTC\" (Global Conventions) also admits ±00:00, which SpecOnly accepts", true},
	{ExcerptHashSHA256, "excerpt_hash and excerpt_hashes entries are SHA-256 digests: 64 lower-case hex digits",
		"Verity's choice, following the reference implementation (hash_excerpt is the hex SHA-256 of the excerpt): the spec types excerpt_hash as a string", true},
	{NumberRange, "counts, limits, costs and temperature are not negative; hypothesis ranks are at least 1",
		"Verity's choice: the spec types them integer or number only", true},
	{RefFormat, "an EvidenceRef's ref is a canonical id", srcEvidenceRef, false},
	{RefKind, "an EvidenceRef's ref form matches its kind: TOOL_IO→tool:, RETRIEVAL_CHUNK→retrieval:, CONFIG_DIFF→configdiff:, SPAN and MESSAGE→the bare span id",
		"Verity's choice: the spec lists the kinds and the id formats without pairing them (the reference implementation writes other refs for SPAN and MESSAGE evidence)", true},
	{RefSpan, "the span named by a span, tool: or retrieval: ref is the EvidenceRef's span_id",
		"Verity's choice: the spec does not relate ref and span_id", true},
	{ArtifactFormat, "every artifact_ids entry is a canonical artifact id", srcIDFormats, false},
	{UnknownTrace, "with a resolver: every trace id exists", srcKnownIDs, false},
	{UnknownSpan, "with a resolver: every span id exists", srcKnownIDs, false},
	{UnknownArtifact, "with a resolver: every artifact id exists", srcKnownIDs, false},
	{RunErrorOnFailure, "a failed run carries error", srcRunRecord + ": error is required for status=failed", false},
	{RunArtifactOnSuccess, "a succeeded run carries output_ref.artifact_path", srcRunRecord + ": output_ref.artifact_path is required for status=succeeded", false},
	{RunUsageWithinBudget, "usage (iterations, depth, tool calls, subcalls, tokens, cost, wall time) is within budget unless status is terminated_budget or partial",
		"Verity's choice: the spec states no relation between usage and budget", true},
	{RunCompletedAfter, "completed_at is not before started_at", "Verity's choice: the spec states no order", true},
	{RunTimeWindowOrder, "input_ref.time_window.start is not after its end", "Verity's choice: the spec states no order", true},
	{RunArtifactType, "output_ref.artifact_type is the contract of run_type",
		"Verity's choice, following the reference implementation (each engine writes its own contract): the spec does not pair run_type and artifact_type", true},
	{RCAEvidenceNonEmpty, "an RCAReport has at least one evidence_ref", srcRCA + ": evidence_refs must be non-empty", false},
	{ControlUnique, "each control appears at most once in controls_evaluated", srcCompliance + ": every applicable control appears exactly once", false},
	{ControlMissing, "with WithApplicableControls: every applicable control appears", srcCompliance + ": every applicable control appears exactly once", false},
	{FailNeedsEvidence, "a fail verdict has at least one evidence pointer (span id, artifact id or evidence ref)", srcCompliance + ": fail must include at least one evidence pointer", false},
	{InsufficientNeedsMissing, "an insufficient_evidence verdict lists missing_evidence", srcCompliance + ": insufficient_evidence must include non-empty missing_evidence", false},
	{MissingNeedsInsufficient, "a control with missing_evidence has the insufficient_evidence verdict",
		"Verity's choice, following the reference implementation (its compliance engine gives insufficient_evidence to every control it lists missing evidence for): the spec requires insufficient_evidence when required evidence is missing, and a report does not say whether the evidence it lists as missing was required", true},
	{OverallVerdictConsistent, "overall_verdict follows the findings: any fail → non_compliant; else any insufficient_evidence or all not_applicable → needs_review; else compliant",
		"Verity's choice, following the reference implementation (the derivation of its compliance engine): the spec lists the three verdicts without a rule", true},
	{RepresentativeTraces, "an IncidentDossier has at least one representative trace", srcDossier + ": representative_traces must be non-empty", false},
	{HypothesisEvidence, "every hypothesis has at least one evidence pointer", srcDossier + ": each hypothesis must include evidence", false},
	{TimelineSorted, "timeline timestamps are non-decreasing as instants", srcDossier + ": timeline must be chronologically sorted ascending", false},
	{DiffRefRequired, "an asserted suspected_change (any change_type, unknown included) has a diff_ref", srcDossier + ": if suspected_change is asserted, diff_ref must be present", false},
	{DiffRefKind, "a diff_ref is a CONFIG_DIFF EvidenceRef",
		"Verity's choice: the spec types diff_ref as an EvidenceRef of any kind", true},
	{RequiredEvidence, "every control has required_evidence (every control can fail)",
		srcControl + ": required_evidence must be non-empty for controls that can fail (the contract cannot say a control cannot fail)", false},
	{ControlVersion, "(control_id, version) is unique in a control library", srcControl + ": control_id + version must be unique in the control library", false},
	{Explanation, "explanation_json is a valid document of the contract matching engine_type", srcAnnotation + ": explanation_json must parse to one of the formal output contracts", false},
	{ExplanationVersion, "the annotation's schema_version is the explanation's schema_version",
		"Verity's choice: the spec does not relate the two versions", true},
}

var byName = func() map[string]Info {
	m := make(map[string]Info, len(ruleInfos))
	for _, r := range ruleInfos {
		m[r.Name] = r
	}
	return m
}()

// All returns the named rules — every rule except the schema.<keyword>
// rules, which follow specification 002's shapes and vocabularies — with
// a description, a source and the extension mark each.
func All() []Info { return slices.Clone(ruleInfos) }

// Lookup returns the named rule called name; ok is false for a
// schema.<keyword> rule or an unknown name.
func Lookup(name string) (info Info, ok bool) {
	info, ok = byName[name]
	return info, ok
}
