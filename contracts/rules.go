package contracts

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Rule names of the non-schema rules. Schema rules are "schema.<keyword>".
const (
	RuleJSONSyntax   = "json.syntax"
	RuleDuplicateKey = "json.duplicate_key"
	RuleDecode       = "json.decode"
	RuleMajorVersion = "schema_version.major_mismatch"

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

// RuleInfo describes one semantic rule.
type RuleInfo struct {
	Name        string
	Description string
}

var ruleInfos = []RuleInfo{
	{RuleJSONSyntax, "the document is one RFC 8259 JSON text without unsafe integers (beyond ±(2^53−1))"},
	{RuleDuplicateKey, "no object has two members with the same key"},
	{RuleDecode, "the document decodes into the contract's Go type"},
	{RuleMajorVersion, "schema_version has the library's major version (a newer minor is accepted)"},
	{RuleRefFormat, "an EvidenceRef's ref is a canonical id"},
	{RuleRefKind, "an EvidenceRef's ref form matches its kind: TOOL_IO→tool:, RETRIEVAL_CHUNK→retrieval:, CONFIG_DIFF→configdiff:, SPAN and MESSAGE→the bare span id"},
	{RuleRefSpan, "the span named by a span, tool: or retrieval: ref is the EvidenceRef's span_id"},
	{RuleArtifactFormat, "every artifact_ids entry is a canonical artifact id"},
	{RuleUnknownTrace, "with a resolver: every trace id exists"},
	{RuleUnknownSpan, "with a resolver: every span id exists"},
	{RuleUnknownArtifact, "with a resolver: every artifact id exists"},
	{RuleRunErrorOnFailure, "a failed run carries error"},
	{RuleRunArtifactOnSuccess, "a succeeded run carries output_ref.artifact_path"},
	{RuleRunUsageWithinBudget, "usage (iterations, depth, tool calls, subcalls, tokens, cost, wall time) is within budget unless status is terminated_budget or partial"},
	{RuleRunCompletedAfter, "completed_at is not before started_at"},
	{RuleRunTimeWindowOrder, "input_ref.time_window.start is not after its end"},
	{RuleRunArtifactType, "output_ref.artifact_type is the contract of run_type"},
	{RuleRCAEvidenceNonEmpty, "an RCAReport has at least one evidence_ref"},
	{RuleControlUnique, "each control appears at most once in controls_evaluated"},
	{RuleControlMissing, "with WithApplicableControls: each applicable control appears in controls_evaluated"},
	{RuleFailNeedsEvidence, "a fail verdict has at least one evidence pointer (span id, artifact id or evidence ref)"},
	{RuleInsufficientNeedsMissing, "an insufficient_evidence verdict lists missing_evidence"},
	{RuleMissingNeedsInsufficient, "a control with missing_evidence has the insufficient_evidence verdict"},
	{RuleVerdictConsistent, "overall_verdict follows the findings: any fail → non_compliant; else any insufficient_evidence or all not_applicable → needs_review; else compliant"},
	{RuleRepresentativeTraces, "an IncidentDossier has at least one representative trace"},
	{RuleHypothesisEvidence, "every hypothesis has at least one evidence pointer"},
	{RuleTimelineSorted, "timeline timestamps are non-decreasing as instants"},
	{RuleDiffRefRequired, "a suspected change other than unknown has a diff_ref"},
	{RuleDiffRefKind, "a diff_ref is a CONFIG_DIFF EvidenceRef"},
	{RuleRequiredEvidence, "every control has required_evidence (every control can fail)"},
	{RuleControlVersion, "(control_id, version) is unique in a control library"},
	{RuleExplanation, "explanation_json is a valid document of the contract matching engine_type"},
	{RuleExplanationVersion, "the annotation's schema_version is the explanation's schema_version"},
}

// Rules returns the non-schema rules with a description each.
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
	if !known {
		return // the schema reports the kind
	}
	if parsed.Form != want {
		c.add(p.key("ref"), RuleRefKind, "a %s ref must have the %s form, %q has the %s form", r.Kind, want, r.Ref, parsed.Form)
		return
	}
	switch parsed.Form {
	case FormSpan, FormTool, FormRetrieval:
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

// DefaultBudget returns the spec's default budget: 40 iterations, depth 2,
// 200 tool calls, 80 subcalls, 300000 tokens, no cost limit, no sampling
// seed, 180 s of wall time.
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
		switch {
		case sc.DiffRef == nil:
			if sc.ChangeType != ChangeUnknown {
				c.add("/suspected_change/diff_ref", RuleDiffRefRequired, "a suspected %s change needs a diff_ref", sc.ChangeType)
			}
		case sc.DiffRef.Kind != EvidenceConfigDiff:
			c.add("/suspected_change/diff_ref/kind", RuleDiffRefKind, "diff_ref must be a CONFIG_DIFF EvidenceRef, not %s", sc.DiffRef.Kind)
		default:
			c.evidenceRef("/suspected_change/diff_ref", *sc.DiffRef)
		}
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
