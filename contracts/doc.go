// Package contracts checks and builds the documents an evaluator run leaves
// behind, in the shapes specification 002 (Formal Contracts) gives them:
// RunRecord, RCAReport, ComplianceReport, IncidentDossier, PolicyControl
// (and control libraries) and the annotation payload written back to the
// trace store. A document is checked against its published JSON Schema and
// against the rules a schema cannot state; a builder only returns documents
// that pass both.
//
// # Usage
//
//	report, err := contracts.DecodeComplianceReport(data) // read and check
//	var ve *contracts.ValidationError
//	if errors.As(err, &ve) {
//		for _, v := range ve.Violations {
//			fmt.Println(v.Path, v.Rule) // /overall_verdict compliance_report.overall_verdict_consistent
//		}
//	}
//
//	// Build: the overall verdict is derived, the result validated.
//	report, err = contracts.NewComplianceReport(traceID, "controls-v3", findings, 0.9, nil)
//	data, err = contracts.Marshal(report) // canonical JSON (RFC 8785)
//
// Validate and Check do the same for a kind named at run time (the
// examples/validate command). Package rule names the rules a Violation
// reports, package ids parses and builds canonical artifact ids, package
// versioning holds the compatibility rules of schema versions.
//
// # Kinds
//
// A Kind names a contract everywhere — the API, the examples/validate
// command and the schema files: run_record, rca_report, compliance_report,
// incident_dossier, policy_control, policy_control_library (a JSON array of
// controls) and annotation. Every contract exists three times, kept in
// step by tests: as Go types, as a JSON Schema (draft 2020-12, one file per
// kind in contracts/schemas/, so that programs in other languages can check
// the same shapes), and as semantic rules in Go for what a schema cannot
// say (cross-field rules, id grammar, ordering by instant).
//
// # Validating
//
// Validate(kind, data) returns nil or a *ValidationError (errors.Is
// ErrInvalid) carrying every Violation: an RFC 6901 JSON Pointer into the
// document, a rule name and a message, sorted by path (array indices
// numerically), rule, message — the one Violation type every Verity
// validator reports. Check returns the same list without the error
// wrapper; DecodeRunRecord, DecodeRCAReport, ... return the typed value as
// well. Rule names are stable (package rule lists them):
//
//   - json.syntax, json.duplicate_key, json.decode: the bytes are not the
//     JSON the contract needs. Documents are read strictly (internal/canon,
//     internal/strictjson), so duplicate keys and integers a reader would
//     round are refused rather than silently resolved or rounded; a
//     number the schema compares (minimum, maximum, integer) with a
//     decimal exponent beyond ±10000, such as 1e-99999, is json.decode.
//   - schema_version.major_mismatch: see Versioning. When it fires it is the
//     only violation reported, since the rest of the document follows
//     another contract.
//   - schema.<keyword> (schema.required, schema.enum, schema.type,
//     schema.pattern, schema.minimum, ...): the JSON Schema, as far as it
//     states specification 002's shapes. A missing key is reported at the
//     key's own path.
//   - id.non_empty, time.z_suffix, excerpt_hash.sha256, number.range: the
//     schema keywords Verity adds to the specification's shapes (see
//     "Specification and extensions").
//   - the semantic rules, e.g. evidence_ref.kind_mismatch,
//     run_record.error_required_on_failure, incident_dossier.timeline_sorted.
//
// A semantic violation at or under a place where the schema already failed
// is not repeated, and semantic rules are not run on a document that does
// not decode into its Go type.
//
// # Specification and extensions
//
// rule.All lists every named rule with its Description, its Source and an
// Extension mark. Source says where the rule comes from: the section of
// specification 002 that states it ("spec, Contract 3 (ComplianceReport)
// rules: ..."), or "Verity's choice", naming the reference implementation
// (the Python investigator the specification was written for) when the
// rule follows it. A rule the specification does not state is an
// extension. Validate checks every rule by default; with SpecOnly it
// checks the specification's rules alone and leaves the extensions out:
//
//   - schema keywords: id.non_empty (the spec types ids as strings),
//     time.z_suffix (RFC 3339 UTC also admits +00:00 and -00:00),
//     excerpt_hash.sha256 (the spec types excerpt_hash as a string; the
//     reference implementation writes the hex SHA-256), number.range
//     (counts, limits, costs and temperature ≥ 0, hypothesis ranks ≥ 1);
//   - evidence_ref.kind_mismatch and evidence_ref.span_mismatch (the spec
//     pairs neither kinds with id forms nor refs with span_id);
//   - run_record.usage_within_budget, completed_not_before_started,
//     time_window_order and artifact_type_matches_run_type;
//   - compliance_report.missing_evidence_needs_insufficient and
//     overall_verdict_consistent (both what the reference implementation's
//     compliance engine does);
//   - incident_dossier.diff_ref_kind (the spec types diff_ref as any
//     EvidenceRef);
//   - annotation.schema_version_matches_explanation.
//
// SpecOnly changes nothing else: documents are read and decoded the same
// way (json.* rules), and a value an extension flagged is still checked by
// the specification's rules (an empty ref is still no canonical id; a
// diff_ref of another kind must still be a canonical, known ref). The
// builders check every rule.
//
// # What the schemas say
//
// Keys are required as the spec's shapes list them, with one reading made
// explicit: a key whose spec type admits null ("string|null",
// "RFC3339|null") may be absent, absent meaning null. This is the one
// place where validation is looser than the specification, under every
// option: a missing key and a null one carry the same information, and
// the package's own documents (Marshal, the builders) always write the
// key. Three keys are conditional by the spec's own rules: RunRecord.error
// (required when status is failed), output_ref.artifact_path (required
// when succeeded) and suspected_change.diff_ref (required whenever
// suspected_change is present, change_type unknown included: the spec's
// rule has no exception); suspected_change itself is optional ("if
// asserted"). Closed vocabularies are exactly the spec's enums; the empty
// string is in none of them, so the zero value of every enum type (Kind,
// RunStatus, ControlVerdict, ...) is invalid. Times are RFC 3339 in UTC —
// Z, +00:00 or -00:00; other offsets are refused — and spelled with Z
// (time.z_suffix); upper-case T and Z only, and no leap second, since
// time.Time cannot read either (under every option). Confidences are
// numbers in [0, 1] (booleans and strings are refused; JSON has no NaN and
// the builders refuse it); schema_version is a semantic version. Ids and
// names are non-empty (id.non_empty), excerpt hashes 64 lower-case hex
// digits (excerpt_hash.sha256), counts non-negative and ranks positive
// (number.range). model_provider is any non-empty string ("openai" in the
// spec's shape is an example value, not a vocabulary). Unknown keys are
// accepted: a newer minor version may add optional fields; the Go types
// read a member only under its exact name, as the schema does.
//
// The schemas carry absolute $ids under
// https://github.com/verity-go/verity/contracts/schemas/, are embedded
// (a go:embed directive) and compiled once (Schema returns their text).
// The compiler's loader refuses every URL, so only the embedded $ids
// resolve: a $ref to a remote or file URL fails with ErrRefused instead
// of being fetched.
//
// # Evidence pointers
//
// An EvidenceRef's ref must be a canonical id (package ids) matching its
// kind: TOOL_IO → tool:, RETRIEVAL_CHUNK → retrieval:, CONFIG_DIFF →
// configdiff:. SPAN and MESSAGE evidence points at a span (a message is
// carried by the span that logged it), so their ref is the bare span id,
// equal to the EvidenceRef's span_id; likewise a tool: or retrieval: ref
// names the EvidenceRef's own span. compliance: ids have no EvidenceRef
// kind; they appear in artifact_ids lists. ids.ExcerptHash computes
// excerpt_hash from the excerpt's text.
//
// With WithResolver, every trace, span and artifact id a document points at
// must be known to the Resolver (KnownIDs returns one over fixed sets). The
// specification states that a ref is a canonical id; that its form matches
// its kind and names its own span is Verity's (extensions
// evidence_ref.kind_mismatch and evidence_ref.span_mismatch; the reference
// implementation writes refs such as "message:<span>:<n>" for MESSAGE
// evidence, which no canonical format covers).
//
// # Semantic rules
//
// Extensions are marked [ext].
//
// RunRecord: error when failed; artifact_path when succeeded; [ext] usage
// within budget (iterations, depth, tool calls, subcalls,
// tokens_in+tokens_out, cost, and completed_at−started_at against
// max_wall_time_sec) unless status is terminated_budget or partial; [ext]
// completed_at not before started_at; [ext] time window in order; [ext]
// artifact_type the contract of run_type. DefaultRunBudget returns a
// default budget (40, 2, 200, 80, 300000 tokens, no cost limit, no seed,
// 180 s): the specification gives the budget's fields, not values; these
// are the defaults of the reference implementation's RuntimeBudget.
//
// RCAReport: at least one evidence ref. ComplianceReport: each control at
// most once (and, with WithApplicableControls, every applicable control
// present); fail needs an evidence pointer (a span id, artifact id or
// evidence ref — an excerpt hash alone points at nothing);
// insufficient_evidence needs missing_evidence; [ext] listing
// missing_evidence requires insufficient_evidence (the reference
// implementation lists missing evidence only with that verdict); [ext]
// overall_verdict as DeriveOverallVerdict derives it (any fail →
// non_compliant; otherwise any insufficient_evidence or all
// not_applicable, including none → needs_review; otherwise compliant) —
// the specification lists the three verdicts without a rule; this is the
// reference implementation's derivation. IncidentDossier: a representative
// trace; evidence on every hypothesis; a timeline non-decreasing as
// instants (not as strings: "10:15:04.5Z" sorts before "10:15:04Z" as
// text); a diff_ref for every suspected change; [ext] of kind CONFIG_DIFF.
// PolicyControl: required_evidence non-empty — the contract has no way to
// say a control cannot fail, so every control can; in a library,
// (control_id, version) unique. Annotation: explanation_json is a valid
// document of the contract matching engine_type (rca → rca_report,
// policy_compliance → compliance_report, incident_dossier →
// incident_dossier), its violations reported under
// annotation.explanation_json; [ext] the annotation's schema_version is the
// explanation's.
//
// Where the spec contradicts itself the rule wins and the example becomes an
// invalid fixture: the RunRecord shape lists error among "required fields"
// and types artifact_path "string|null", but the rules make error required
// only for failed runs and artifact_path required for succeeded ones
// (run_record.artifact_path_required_on_success.json); the superseded RCA
// evidence array is refused (schema.required--superseded_evidence_array.json).
//
// # Versioning
//
// SchemaVersion is 1.0.0. schema_version must be a semantic version; a
// document whose major version differs is rejected with ErrMajorVersion
// (errors.Is works on the *ValidationError); a newer minor or patch is
// accepted, because the spec allows only additive, optional changes within
// a major version and unknown keys are accepted. PolicyControl has no
// schema_version (its version is the control's own). Package versioning
// implements the spec's rules for publishing a new version.
//
// # Building documents
//
// The constructors only return valid documents: each one marshals its
// result, validates it with every rule and returns a *ValidationError
// instead if anything fails. Run.Succeeded, Run.Failed, Run.Partial and
// Run.TerminatedBudget write the RunRecord of each outcome; NewEvidenceRef
// derives refs and excerpt hashes; NewComplianceReport derives the overall
// verdict; NewIncidentDossier orders the timeline by instant; NewAnnotation
// embeds a report as canonical JSON. Marshal writes canonical JSON (RFC
// 8785).
//
// # What it does not cover
//
// "Exactly one RunRecord per invocation" is a property of a store of
// records, not of one document; it is left to the caller. Which controls
// apply to a trace is not in the report, so "every applicable control
// appears" needs WithApplicableControls. Phoenix trace and span ids are
// opaque non-empty strings: their existence is the Resolver's business.
// "insufficient_evidence must be used when required evidence is missing"
// is checked by default as far as the report states what is missing
// (missing_evidence, the extension
// compliance_report.missing_evidence_needs_insufficient), not with
// SpecOnly, since a report does not say which of it was required;
// comparing a report against its controls' required_evidence is the
// evaluator's job. The package is a pure core: no clock, I/O or state, so
// it has no Session shell; hosts record validated documents themselves.
//
// # Speed
//
// A valid document is checked without the schema library and without a
// tree: the embedded schemas are compiled once into shapes that the strict
// reader checks in one pass over the bytes, a second pass reads the Go
// value, then the semantic rules run. Only a document with a problem goes
// through the schema library, so that its violations are the library's.
// A property test and a fuzz target hold the two paths to the same answer
// for every document. DESIGN.md says how a document is read and where the
// time goes.
package contracts
