package contracts

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Rule names of the named rules. The other schema rules are
// "schema.<keyword>".
const (
	RuleJSONSyntax   = "json.syntax"
	RuleDuplicateKey = "json.duplicate_key"
	RuleDecode       = "json.decode"
	RuleMajorVersion = "schema_version.major_mismatch"

	// Schema keywords that go beyond specification 002 (see Rules).
	RuleIDNonEmpty        = "id.non_empty"
	RuleTimeZSuffix       = "time.z_suffix"
	RuleExcerptHashSHA256 = "excerpt_hash.sha256"
	RuleNumberRange       = "number.range"

	RuleRefFormat       = "evidence_ref.ref_format"
	RuleRefKind         = "evidence_ref.kind_mismatch"
	RuleRefSpan         = "evidence_ref.span_mismatch"
	RuleArtifactFormat  = "artifact_id.format"
	RuleUnknownTrace    = "evidence.unknown_trace"
	RuleUnknownSpan     = "evidence.unknown_span"
	RuleUnknownArtifact = "evidence.unknown_artifact"

	RuleRunErrorOnFailure    = "run_record.error_required_on_failure"
	RuleRunArtifactOnSuccess = "run_record.artifact_path_required_on_success"
	RuleRunUsageWithinBudget = "run_record.usage_within_budget"
	RuleRunCompletedAfter    = "run_record.completed_not_before_started"
	RuleRunTimeWindowOrder   = "run_record.time_window_order"
	RuleRunArtifactType      = "run_record.artifact_type_matches_run_type"

	RuleRCAEvidenceNonEmpty = "rca_report.evidence_refs_nonempty"

	RuleControlUnique            = "compliance_report.control_unique"
	RuleControlMissing           = "compliance_report.control_missing"
	RuleFailNeedsEvidence        = "compliance_report.fail_needs_evidence"
	RuleInsufficientNeedsMissing = "compliance_report.insufficient_evidence_needs_missing"
	RuleMissingNeedsInsufficient = "compliance_report.missing_evidence_needs_insufficient"
	RuleVerdictConsistent        = "compliance_report.overall_verdict_consistent"

	RuleRepresentativeTraces = "incident_dossier.representative_traces_nonempty"
	RuleHypothesisEvidence   = "incident_dossier.hypothesis_needs_evidence"
	RuleTimelineSorted       = "incident_dossier.timeline_sorted"
	RuleDiffRefRequired      = "incident_dossier.diff_ref_required"
	RuleDiffRefKind          = "incident_dossier.diff_ref_kind"

	RuleRequiredEvidence = "policy_control.required_evidence_nonempty"
	RuleControlVersion   = "policy_control_library.control_version_unique"

	RuleExplanation        = "annotation.explanation_json"
	RuleExplanationVersion = "annotation.schema_version_matches_explanation"
)

// RuleInfo describes one named rule: what it checks, where it comes from,
// and whether it is an extension.
type RuleInfo struct {
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

var ruleInfos = []RuleInfo{
	{RuleJSONSyntax, "the document is one RFC 8259 JSON text without unsafe integers (beyond ±(2^53−1))", srcReading, false},
	{RuleDuplicateKey, "no object has two members with the same key", srcReading + " (RFC 8259 §4 leaves the meaning of duplicate names undefined)", false},
	{RuleDecode, "the document decodes into the contract's Go type", srcReading, false},
	{RuleMajorVersion, "schema_version has the library's major version (a newer minor is accepted)", srcVersioning, false},
	{RuleIDNonEmpty, "ids, names and versions are non-empty strings",
		"Verity's choice: the spec types ids as strings; an empty string identifies nothing", true},
	{RuleTimeZSuffix, "times are spelled with a trailing Z, not +00:00 or -00:00",
		"Verity's choice, following the reference implementation (it writes %Y-%m-%dT%H:%M:%SZ): the spec's \"RFC3339 UTC\" (Global Conventions) also admits ±00:00, which SpecOnly accepts", true},
	{RuleExcerptHashSHA256, "excerpt_hash and excerpt_hashes entries are SHA-256 digests: 64 lower-case hex digits",
		"Verity's choice, following the reference implementation (hash_excerpt is the hex SHA-256 of the excerpt): the spec types excerpt_hash as a string", true},
	{RuleNumberRange, "counts, limits, costs and temperature are not negative; hypothesis ranks are at least 1",
		"Verity's choice: the spec types them integer or number only", true},
	{RuleRefFormat, "an EvidenceRef's ref is a canonical id", srcEvidenceRef, false},
	{RuleRefKind, "an EvidenceRef's ref form matches its kind: TOOL_IO→tool:, RETRIEVAL_CHUNK→retrieval:, CONFIG_DIFF→configdiff:, SPAN and MESSAGE→the bare span id",
		"Verity's choice: the spec lists the kinds and the id formats without pairing them (the reference implementation writes other refs for SPAN and MESSAGE evidence)", true},
	{RuleRefSpan, "the span named by a span, tool: or retrieval: ref is the EvidenceRef's span_id",
		"Verity's choice: the spec does not relate ref and span_id", true},
	{RuleArtifactFormat, "every artifact_ids entry is a canonical artifact id", srcIDFormats, false},
	{RuleUnknownTrace, "with a resolver: every trace id exists", srcKnownIDs, false},
	{RuleUnknownSpan, "with a resolver: every span id exists", srcKnownIDs, false},
	{RuleUnknownArtifact, "with a resolver: every artifact id exists", srcKnownIDs, false},
	{RuleRunErrorOnFailure, "a failed run carries error", srcRunRecord + ": error is required for status=failed", false},
	{RuleRunArtifactOnSuccess, "a succeeded run carries output_ref.artifact_path", srcRunRecord + ": output_ref.artifact_path is required for status=succeeded", false},
	{RuleRunUsageWithinBudget, "usage (iterations, depth, tool calls, subcalls, tokens, cost, wall time) is within budget unless status is terminated_budget or partial",
		"Verity's choice: the spec states no relation between usage and budget", true},
	{RuleRunCompletedAfter, "completed_at is not before started_at", "Verity's choice: the spec states no order", true},
	{RuleRunTimeWindowOrder, "input_ref.time_window.start is not after its end", "Verity's choice: the spec states no order", true},
	{RuleRunArtifactType, "output_ref.artifact_type is the contract of run_type",
		"Verity's choice, following the reference implementation (each engine writes its own contract): the spec does not pair run_type and artifact_type", true},
	{RuleRCAEvidenceNonEmpty, "an RCAReport has at least one evidence_ref", srcRCA + ": evidence_refs must be non-empty", false},
	{RuleControlUnique, "each control appears at most once in controls_evaluated", srcCompliance + ": every applicable control appears exactly once", false},
	{RuleControlMissing, "with WithApplicableControls: every applicable control appears", srcCompliance + ": every applicable control appears exactly once", false},
	{RuleFailNeedsEvidence, "a fail verdict has at least one evidence pointer (span id, artifact id or evidence ref)", srcCompliance + ": fail must include at least one evidence pointer", false},
	{RuleInsufficientNeedsMissing, "an insufficient_evidence verdict lists missing_evidence", srcCompliance + ": insufficient_evidence must include non-empty missing_evidence", false},
	{RuleMissingNeedsInsufficient, "a control with missing_evidence has the insufficient_evidence verdict",
		"Verity's choice, following the reference implementation (its compliance engine gives insufficient_evidence to every control it lists missing evidence for): the spec requires insufficient_evidence when required evidence is missing, and a report does not say whether the evidence it lists as missing was required", true},
	{RuleVerdictConsistent, "overall_verdict follows the findings: any fail → non_compliant; else any insufficient_evidence or all not_applicable → needs_review; else compliant",
		"Verity's choice, following the reference implementation (the derivation of its compliance engine): the spec lists the three verdicts without a rule", true},
	{RuleRepresentativeTraces, "an IncidentDossier has at least one representative trace", srcDossier + ": representative_traces must be non-empty", false},
	{RuleHypothesisEvidence, "every hypothesis has at least one evidence pointer", srcDossier + ": each hypothesis must include evidence", false},
	{RuleTimelineSorted, "timeline timestamps are non-decreasing as instants", srcDossier + ": timeline must be chronologically sorted ascending", false},
	{RuleDiffRefRequired, "an asserted suspected_change (any change_type, unknown included) has a diff_ref", srcDossier + ": if suspected_change is asserted, diff_ref must be present", false},
	{RuleDiffRefKind, "a diff_ref is a CONFIG_DIFF EvidenceRef",
		"Verity's choice: the spec types diff_ref as an EvidenceRef of any kind", true},
	{RuleRequiredEvidence, "every control has required_evidence (every control can fail)",
		srcControl + ": required_evidence must be non-empty for controls that can fail (the contract cannot say a control cannot fail)", false},
	{RuleControlVersion, "(control_id, version) is unique in a control library", srcControl + ": control_id + version must be unique in the control library", false},
	{RuleExplanation, "explanation_json is a valid document of the contract matching engine_type", srcAnnotation + ": explanation_json must parse to one of the formal output contracts", false},
	{RuleExplanationVersion, "the annotation's schema_version is the explanation's schema_version",
		"Verity's choice: the spec does not relate the two versions", true},
}

// extensions holds the names of the extension rules.
var extensions = func() map[string]bool {
	m := map[string]bool{}
	for _, r := range ruleInfos {
		if r.Extension {
			m[r.Name] = true
		}
	}
	return m
}()

// Rules returns the named rules — every rule except the schema.<keyword>
// rules, which follow specification 002's shapes and vocabularies — with
// a description, a source and the extension mark each.
func Rules() []RuleInfo { return slices.Clone(ruleInfos) }

// ---- shared pieces

func (c *checker) trace(p pointer, id string) {
	if c.cfg.resolver != nil && id != "" && !c.cfg.resolver.HasTrace(id) {
		c.add(p, RuleUnknownTrace, "trace %q is not known", id)
	}
}

func (c *checker) span(p pointer, id string) {
	if c.cfg.resolver != nil && id != "" && !c.cfg.resolver.HasSpan(id) {
		c.add(p, RuleUnknownSpan, "span %q is not known", id)
	}
}

func (c *checker) traces(p pointer, ids []string) {
	for i, id := range ids {
		c.trace(p.index(i), id)
	}
}

func (c *checker) spans(p pointer, ids []string) {
	for i, id := range ids {
		c.span(p.index(i), id)
	}
}

// artifactIDs checks a list of artifact ids: each parses as a canonical id
// (a bare span id is accepted: it is the id of a span artifact) and, with a
// resolver, exists.
func (c *checker) artifactIDs(p pointer, ids []string) {
	for i, id := range ids {
		q := p.index(i)
		parsed, err := ParseID(id)
		if err != nil {
			c.add(q, RuleArtifactFormat, "%s", idReason(err))
			continue
		}
		c.resolveArtifact(q, parsed, id)
	}
}

func (c *checker) resolveArtifact(p pointer, parsed ID, id string) {
	if c.cfg.resolver == nil {
		return
	}
	if parsed.Form == FormSpan {
		c.span(p, id)
		return
	}
	if !c.cfg.resolver.HasArtifact(id) {
		c.add(p, RuleUnknownArtifact, "artifact %q is not known", id)
	}
}

func idReason(err error) string {
	var ie *IDError
	if errors.As(err, &ie) {
		return fmt.Sprintf("%q is not a canonical id: %s", ie.ID, ie.Reason)
	}
	return err.Error()
}

func (c *checker) evidenceRef(p pointer, r EvidenceRef) {
	c.trace(p.key("trace_id"), r.TraceID)
	c.span(p.key("span_id"), r.SpanID)
	parsed, err := ParseID(r.Ref)
	if err != nil {
		c.add(p.key("ref"), RuleRefFormat, "%s", idReason(err))
		return
	}
	want, known := formForKind(r.Kind)
	switch {
	case !known:
		// the schema reports the kind
	case parsed.Form != want:
		c.add(p.key("ref"), RuleRefKind, "a %s ref must have the %s form, %q has the %s form", r.Kind, want, r.Ref, parsed.Form)
	case parsed.Form == FormSpan || parsed.Form == FormTool || parsed.Form == FormRetrieval:
		if parsed.SpanID != r.SpanID {
			c.add(p.key("ref"), RuleRefSpan, "ref %q names span %q, span_id is %q", r.Ref, parsed.SpanID, r.SpanID)
		}
	}
	if parsed.Form != FormSpan {
		c.resolveArtifact(p.key("ref"), parsed, r.Ref)
	}
}

func (c *checker) evidenceRefs(p pointer, rs []EvidenceRef) {
	for i, r := range rs {
		c.evidenceRef(p.index(i), r)
	}
}

func (c *checker) evidenceSet(p pointer, e EvidenceSet) {
	c.traces(p.key("trace_ids"), e.TraceIDs)
	c.spans(p.key("span_ids"), e.SpanIDs)
	c.artifactIDs(p.key("artifact_ids"), e.ArtifactIDs)
	c.evidenceRefs(p.key("evidence_refs"), e.EvidenceRefs)
}

// ---- RunRecord

// DefaultBudget returns a default budget: 40 iterations, depth 2, 200 tool
// calls, 80 subcalls, 300000 tokens, no cost limit, no sampling seed, 180 s
// of wall time. Specification 002 gives the budget's fields, not values:
// these are the defaults of the reference implementation's RuntimeBudget
// (investigator/runtime/contracts.py).
func DefaultBudget() Budget {
	tokens := int64(300000)
	return Budget{
		MaxIterations:  40,
		MaxDepth:       2,
		MaxToolCalls:   200,
		MaxSubcalls:    80,
		MaxTokensTotal: &tokens,
		MaxWallTimeSec: 180,
	}
}

// budgetEndsRun reports whether the status says the budget ended the run,
// in which case usage may exceed the budget.
func budgetEndsRun(s RunStatus) bool { return s == StatusTerminatedBudget || s == StatusPartial }

var artifactForRun = map[RunType]ArtifactType{
	RunRCA:              ArtifactRCAReport,
	RunPolicyCompliance: ArtifactComplianceReport,
	RunIncidentDossier:  ArtifactIncidentDossier,
}

func checkRunRecord(c *checker, r *RunRecord) {
	switch r.Status {
	case StatusFailed:
		if r.Error == nil {
			c.add("/error", RuleRunErrorOnFailure, "a run with status failed must carry error")
		}
	case StatusSucceeded:
		if r.OutputRef.ArtifactPath == nil || *r.OutputRef.ArtifactPath == "" {
			c.add("/output_ref/artifact_path", RuleRunArtifactOnSuccess, "a run with status succeeded must carry output_ref.artifact_path")
		}
	}
	if r.CompletedAt.Before(r.StartedAt) {
		c.add("/completed_at", RuleRunCompletedAfter, "completed_at %s is before started_at %s",
			r.CompletedAt.Format(time.RFC3339Nano), r.StartedAt.Format(time.RFC3339Nano))
	}
	if w := r.InputRef.TimeWindow; w.Start != nil && w.End != nil && w.Start.After(*w.End) {
		c.add("/input_ref/time_window", RuleRunTimeWindowOrder, "start %s is after end %s",
			w.Start.Format(time.RFC3339Nano), w.End.Format(time.RFC3339Nano))
	}
	if at := r.OutputRef.ArtifactType; at != nil {
		if want, ok := artifactForRun[r.RunType]; ok && *at != want {
			c.add("/output_ref/artifact_type", RuleRunArtifactType, "a %s run produces %s, not %s", r.RunType, want, *at)
		}
	}
	if !budgetEndsRun(r.Status) {
		checkUsage(c, r)
	}
	c.traces("/input_ref/trace_ids", r.InputRef.TraceIDs)
}

func checkUsage(c *checker, r *RunRecord) {
	b, u := r.RuntimeRef.Budget, r.RuntimeRef.Usage
	over := func(field string, used, limit int64, what string) {
		if used > limit {
			c.add(pointer("/runtime_ref/usage").key(field), RuleRunUsageWithinBudget,
				"%s %d exceeds the budget of %d (status %s does not say the budget ended the run)", what, used, limit, r.Status)
		}
	}
	over("iterations", u.Iterations, b.MaxIterations, "iterations")
	over("depth_reached", u.DepthReached, b.MaxDepth, "depth")
	over("tool_calls", u.ToolCalls, b.MaxToolCalls, "tool calls")
	over("llm_subcalls", u.LLMSubcalls, b.MaxSubcalls, "LLM subcalls")
	if b.MaxTokensTotal != nil {
		total := u.TokensIn + u.TokensOut
		if u.TokensIn > math.MaxInt64-u.TokensOut {
			total = math.MaxInt64
		}
		if total > *b.MaxTokensTotal {
			c.add("/runtime_ref/usage", RuleRunUsageWithinBudget,
				"tokens_in + tokens_out = %d exceeds max_tokens_total %d (status %s)", total, *b.MaxTokensTotal, r.Status)
		}
	}
	if b.MaxCostUSD != nil && u.CostUSD > *b.MaxCostUSD {
		c.add("/runtime_ref/usage/cost_usd", RuleRunUsageWithinBudget,
			"cost_usd %g exceeds max_cost_usd %g (status %s)", u.CostUSD, *b.MaxCostUSD, r.Status)
	}
	if !r.CompletedAt.Before(r.StartedAt) {
		wall := r.CompletedAt.Sub(r.StartedAt)
		limit := time.Duration(b.MaxWallTimeSec) * time.Second
		if b.MaxWallTimeSec > int64(math.MaxInt64/time.Second) {
			limit = math.MaxInt64
		}
		if wall > limit {
			c.add("/completed_at", RuleRunUsageWithinBudget,
				"the run took %s, more than max_wall_time_sec %d (status %s)", wall, b.MaxWallTimeSec, r.Status)
		}
	}
}

// ---- RCAReport

func checkRCAReport(c *checker, r *RCAReport) {
	if len(r.EvidenceRefs) == 0 {
		c.add("/evidence_refs", RuleRCAEvidenceNonEmpty, "an RCAReport needs at least one evidence_ref")
	}
	c.trace("/trace_id", r.TraceID)
	c.evidenceRefs("/evidence_refs", r.EvidenceRefs)
}

// ---- ComplianceReport

// OverallVerdict derives the overall verdict from the findings: any fail →
// non_compliant; otherwise any insufficient_evidence, or every finding
// not_applicable (including no findings at all) → needs_review; otherwise
// compliant. The boolean is false if a finding has an unknown verdict.
//
// Specification 002 lists the three verdicts without a rule; this is the
// derivation of the reference implementation's compliance engine
// (rule compliance_report.overall_verdict_consistent, an extension).
func OverallVerdict(findings []ControlFinding) (Verdict, bool) {
	var fail, insufficient bool
	allNA := true
	for _, f := range findings {
		switch f.PassFail {
		case Fail:
			fail = true
		case InsufficientEvidence:
			insufficient = true
		case Pass:
		case NotApplicable:
			continue
		default:
			return "", false
		}
		allNA = false
	}
	switch {
	case fail:
		return NonCompliant, true
	case insufficient || allNA:
		return NeedsReview, true
	}
	return Compliant, true
}

func (e ControlEvidence) pointers() int {
	return len(e.SpanIDs) + len(e.ArtifactIDs) + len(e.EvidenceRefs)
}

func checkComplianceReport(c *checker, r *ComplianceReport) {
	c.trace("/trace_id", r.TraceID)
	seen := make(map[string]int, len(r.ControlsEvaluated))
	for i, f := range r.ControlsEvaluated {
		p := pointer("/controls_evaluated").index(i)
		if first, dup := seen[f.ControlID]; dup {
			c.add(p.key("control_id"), RuleControlUnique, "control %q already evaluated at /controls_evaluated/%d", f.ControlID, first)
		} else {
			seen[f.ControlID] = i
		}
		switch f.PassFail {
		case Fail:
			if f.Evidence.pointers() == 0 {
				c.add(p.key("evidence"), RuleFailNeedsEvidence, "control %q fails without an evidence pointer (span_ids, artifact_ids or evidence_refs)", f.ControlID)
			}
		case InsufficientEvidence:
			if len(f.MissingEvidence) == 0 {
				c.add(p.key("missing_evidence"), RuleInsufficientNeedsMissing, "control %q is insufficient_evidence but lists no missing_evidence", f.ControlID)
			}
		}
		if len(f.MissingEvidence) > 0 && f.PassFail != InsufficientEvidence && validPassFail(f.PassFail) {
			c.add(p.key("pass_fail"), RuleMissingNeedsInsufficient, "control %q lists missing evidence, so its verdict must be insufficient_evidence, not %s", f.ControlID, f.PassFail)
		}
		e := p.key("evidence")
		c.trace(e.key("trace_id"), f.Evidence.TraceID)
		c.spans(e.key("span_ids"), f.Evidence.SpanIDs)
		c.artifactIDs(e.key("artifact_ids"), f.Evidence.ArtifactIDs)
		c.evidenceRefs(e.key("evidence_refs"), f.Evidence.EvidenceRefs)
	}
	if c.cfg.hasApplic {
		missing := []string{}
		for _, id := range c.cfg.applicable {
			if _, ok := seen[id]; !ok && !slices.Contains(missing, id) {
				missing = append(missing, id)
			}
		}
		slices.Sort(missing)
		for _, id := range missing {
			c.add("/controls_evaluated", RuleControlMissing, "applicable control %q is not evaluated", id)
		}
	}
	if want, ok := OverallVerdict(r.ControlsEvaluated); ok && validVerdict(r.OverallVerdict) && r.OverallVerdict != want {
		c.add("/overall_verdict", RuleVerdictConsistent, "the findings make the overall verdict %s, not %s", want, r.OverallVerdict)
	}
}

func validPassFail(p PassFail) bool {
	switch p {
	case Pass, Fail, NotApplicable, InsufficientEvidence:
		return true
	}
	return false
}

func validVerdict(v Verdict) bool {
	switch v {
	case Compliant, NonCompliant, NeedsReview:
		return true
	}
	return false
}

// ---- IncidentDossier

func checkIncidentDossier(c *checker, d *IncidentDossier) {
	if len(d.RepresentativeTraces) == 0 {
		c.add("/representative_traces", RuleRepresentativeTraces, "an IncidentDossier needs at least one representative trace")
	}
	for i, t := range d.RepresentativeTraces {
		c.trace(pointer("/representative_traces").index(i).key("trace_id"), t.TraceID)
	}
	for i, ev := range d.Timeline {
		p := pointer("/timeline").index(i)
		if i > 0 && ev.Timestamp.Before(d.Timeline[i-1].Timestamp) {
			c.add(p.key("timestamp"), RuleTimelineSorted, "event %d at %s is before event %d at %s",
				i, ev.Timestamp.Format(time.RFC3339Nano), i-1, d.Timeline[i-1].Timestamp.Format(time.RFC3339Nano))
		}
		c.evidenceSet(p.key("evidence"), ev.Evidence)
	}
	for i, h := range d.Hypotheses {
		p := pointer("/hypotheses").index(i)
		if h.Evidence.Empty() {
			c.add(p.key("evidence"), RuleHypothesisEvidence, "hypothesis %d has no evidence pointer", i)
		}
		c.evidenceSet(p.key("evidence"), h.Evidence)
	}
	if sc := d.SuspectedChange; sc != nil {
		if sc.DiffRef == nil {
			c.add("/suspected_change/diff_ref", RuleDiffRefRequired,
				"a suspected %s change needs a diff_ref (with nothing to point at, leave suspected_change out and say so in gaps)", sc.ChangeType)
			return
		}
		if sc.DiffRef.Kind != EvidenceConfigDiff {
			c.add("/suspected_change/diff_ref/kind", RuleDiffRefKind, "diff_ref must be a CONFIG_DIFF EvidenceRef, not %s", sc.DiffRef.Kind)
		}
		c.evidenceRef("/suspected_change/diff_ref", *sc.DiffRef)
	}
}

// ---- PolicyControl

func checkPolicyControl(c *checker, pc *PolicyControl) { checkControlAt(c, "", pc) }

func checkControlAt(c *checker, p pointer, pc *PolicyControl) {
	if len(pc.RequiredEvidence) == 0 {
		c.add(p.key("required_evidence"), RuleRequiredEvidence, "control %q can fail, so it needs required_evidence", pc.ControlID)
	}
}

func checkPolicyControlLibrary(c *checker, lib *[]PolicyControl) {
	type key struct{ id, version string }
	seen := make(map[key]int, len(*lib))
	for i := range *lib {
		pc := &(*lib)[i]
		p := pointer("").index(i)
		checkControlAt(c, p, pc)
		k := key{pc.ControlID, pc.Version}
		if first, dup := seen[k]; dup {
			c.add(p, RuleControlVersion, "control %q version %q already defined at /%d", pc.ControlID, pc.Version, first)
			continue
		}
		seen[k] = i
	}
}

// ---- Annotation

// KindForEngine returns the contract kind an engine type writes.
func KindForEngine(t RunType) (Kind, bool) {
	switch t {
	case RunRCA:
		return KindRCAReport, true
	case RunPolicyCompliance:
		return KindComplianceReport, true
	case RunIncidentDossier:
		return KindIncidentDossier, true
	}
	return "", false
}

func checkAnnotation(c *checker, a *Annotation) {
	if a.TargetSpanID != nil {
		c.span("/target_span_id", *a.TargetSpanID)
	}
	kind, ok := KindForEngine(a.EngineType)
	if !ok {
		return // the schema reports the engine type
	}
	inner, vs, err := decodeExplanation(kind, []byte(a.ExplanationJSON), c.cfg)
	if err != nil {
		c.add("/explanation_json", RuleExplanation, "%v", err)
		return
	}
	for _, v := range vs {
		path := v.Path
		if path == "" {
			path = "(document)"
		}
		c.add("/explanation_json", RuleExplanation, "%s %s: %s: %s", kind, path, v.Rule, v.Message)
	}
	if len(vs) == 0 && inner != a.SchemaVersion {
		c.add("/schema_version", RuleExplanationVersion, "the annotation says %q, its explanation says %q", a.SchemaVersion, inner)
	}
}

// decodeExplanation validates the explanation and returns its schema_version.
func decodeExplanation(kind Kind, data []byte, cfg *config) (string, []Violation, error) {
	switch kind {
	case KindRCAReport:
		v, vs, err := decode(kind, data, cfg, checkRCAReport)
		return v.SchemaVersion, vs, err
	case KindComplianceReport:
		v, vs, err := decode(kind, data, cfg, checkComplianceReport)
		return v.SchemaVersion, vs, err
	case KindIncidentDossier:
		v, vs, err := decode(kind, data, cfg, checkIncidentDossier)
		return v.SchemaVersion, vs, err
	}
	return "", nil, fmt.Errorf("%w: %s", ErrUnknownKind, kind)
}
