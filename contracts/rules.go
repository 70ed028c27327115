package contracts

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/verity-go/verity/contracts/ids"
	"github.com/verity-go/verity/contracts/rule"
	"github.com/verity-go/verity/internal/violation"
)

// ---- shared pieces

func (c *checker) trace(p string, id string) {
	if c.cfg.resolver != nil && id != "" && !c.cfg.resolver.HasTrace(id) {
		c.add(p, rule.UnknownTrace, "trace %q is not known", id)
	}
}

func (c *checker) span(p string, id string) {
	if c.cfg.resolver != nil && id != "" && !c.cfg.resolver.HasSpan(id) {
		c.add(p, rule.UnknownSpan, "span %q is not known", id)
	}
}

func (c *checker) traces(p string, idList []string) {
	for i, id := range idList {
		c.trace(violation.Index(p, i), id)
	}
}

func (c *checker) spans(p string, idList []string) {
	for i, id := range idList {
		c.span(violation.Index(p, i), id)
	}
}

// artifactIDs checks a list of artifact ids: each parses as a canonical id
// (a bare span id is accepted: it is the id of a span artifact) and, with a
// resolver, exists.
func (c *checker) artifactIDs(p string, idList []string) {
	for i, id := range idList {
		q := violation.Index(p, i)
		parsed, err := ids.Parse(id)
		if err != nil {
			c.add(q, rule.ArtifactFormat, "%s", idReason(err))
			continue
		}
		c.resolveArtifact(q, parsed, id)
	}
}

func (c *checker) resolveArtifact(p string, parsed ids.ID, id string) {
	if c.cfg.resolver == nil {
		return
	}
	if parsed.Form == ids.FormSpan {
		c.span(p, id)
		return
	}
	if !c.cfg.resolver.HasArtifact(id) {
		c.add(p, rule.UnknownArtifact, "artifact %q is not known", id)
	}
}

func idReason(err error) string {
	var ie *ids.Error
	if errors.As(err, &ie) {
		return fmt.Sprintf("%q is not a canonical id: %s", ie.ID, ie.Reason)
	}
	return err.Error()
}

func (c *checker) evidenceRef(p string, r EvidenceRef) {
	c.trace(violation.Join(p, "trace_id"), r.TraceID)
	c.span(violation.Join(p, "span_id"), r.SpanID)
	parsed, err := ids.Parse(r.Ref)
	if err != nil {
		c.add(violation.Join(p, "ref"), rule.RefFormat, "%s", idReason(err))
		return
	}
	want, known := formForKind(r.Kind)
	switch {
	case !known:
		// the schema reports the kind
	case parsed.Form != want:
		c.add(violation.Join(p, "ref"), rule.RefKind, "a %s ref must have the %s form, %q has the %s form", r.Kind, want, r.Ref, parsed.Form)
	case parsed.Form == ids.FormSpan || parsed.Form == ids.FormTool || parsed.Form == ids.FormRetrieval:
		if parsed.SpanID != r.SpanID {
			c.add(violation.Join(p, "ref"), rule.RefSpan, "ref %q names span %q, span_id is %q", r.Ref, parsed.SpanID, r.SpanID)
		}
	}
	if parsed.Form != ids.FormSpan {
		c.resolveArtifact(violation.Join(p, "ref"), parsed, r.Ref)
	}
}

func (c *checker) evidenceRefs(p string, rs []EvidenceRef) {
	for i, r := range rs {
		c.evidenceRef(violation.Index(p, i), r)
	}
}

func (c *checker) evidenceSet(p string, e EvidenceSet) {
	c.traces(violation.Join(p, "trace_ids"), e.TraceIDs)
	c.spans(violation.Join(p, "span_ids"), e.SpanIDs)
	c.artifactIDs(violation.Join(p, "artifact_ids"), e.ArtifactIDs)
	c.evidenceRefs(violation.Join(p, "evidence_refs"), e.EvidenceRefs)
}

// ---- RunRecord

// DefaultRunBudget returns a default budget: 40 iterations, depth 2, 200 tool
// calls, 80 subcalls, 300000 tokens, no cost limit, no sampling seed, 180 s
// of wall time. Specification 002 gives the budget's fields, not values:
// these are the defaults of the reference implementation's RuntimeBudget
// (investigator/runtime/contracts.py).
func DefaultRunBudget() RunBudget {
	tokens := int64(300000)
	return RunBudget{
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
func budgetEndsRun(s RunStatus) bool { return s == RunStatusTerminatedBudget || s == RunStatusPartial }

var artifactForRun = map[RunType]ArtifactType{
	RunTypeRCA:              ArtifactTypeRCAReport,
	RunTypePolicyCompliance: ArtifactTypeComplianceReport,
	RunTypeIncidentDossier:  ArtifactTypeIncidentDossier,
}

func checkRunRecord(c *checker, r *RunRecord) {
	switch r.Status {
	case RunStatusFailed:
		if r.Error == nil {
			c.add("/error", rule.RunErrorOnFailure, "a run with status failed must carry error")
		}
	case RunStatusSucceeded:
		if r.OutputRef.ArtifactPath == nil || *r.OutputRef.ArtifactPath == "" {
			c.add("/output_ref/artifact_path", rule.RunArtifactOnSuccess, "a run with status succeeded must carry output_ref.artifact_path")
		}
	}
	if r.CompletedAt.Before(r.StartedAt) {
		c.add("/completed_at", rule.RunCompletedAfter, "completed_at %s is before started_at %s",
			r.CompletedAt.Format(time.RFC3339Nano), r.StartedAt.Format(time.RFC3339Nano))
	}
	if w := r.InputRef.TimeWindow; w.Start != nil && w.End != nil && w.Start.After(*w.End) {
		c.add("/input_ref/time_window", rule.RunTimeWindowOrder, "start %s is after end %s",
			w.Start.Format(time.RFC3339Nano), w.End.Format(time.RFC3339Nano))
	}
	if at := r.OutputRef.ArtifactType; at != nil {
		if want, ok := artifactForRun[r.RunType]; ok && *at != want {
			c.add("/output_ref/artifact_type", rule.RunArtifactType, "a %s run produces %s, not %s", r.RunType, want, *at)
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
			c.add(violation.Join("/runtime_ref/usage", field), rule.RunUsageWithinBudget,
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
			c.add("/runtime_ref/usage", rule.RunUsageWithinBudget,
				"tokens_in + tokens_out = %d exceeds max_tokens_total %d (status %s)", total, *b.MaxTokensTotal, r.Status)
		}
	}
	if b.MaxCostUSD != nil && u.CostUSD > *b.MaxCostUSD {
		c.add("/runtime_ref/usage/cost_usd", rule.RunUsageWithinBudget,
			"cost_usd %g exceeds max_cost_usd %g (status %s)", u.CostUSD, *b.MaxCostUSD, r.Status)
	}
	if !r.CompletedAt.Before(r.StartedAt) {
		wall := r.CompletedAt.Sub(r.StartedAt)
		limit := time.Duration(b.MaxWallTimeSec) * time.Second
		if b.MaxWallTimeSec > int64(math.MaxInt64/time.Second) {
			limit = math.MaxInt64
		}
		if wall > limit {
			c.add("/completed_at", rule.RunUsageWithinBudget,
				"the run took %s, more than max_wall_time_sec %d (status %s)", wall, b.MaxWallTimeSec, r.Status)
		}
	}
}

// ---- RCAReport

func checkRCAReport(c *checker, r *RCAReport) {
	if len(r.EvidenceRefs) == 0 {
		c.add("/evidence_refs", rule.RCAEvidenceNonEmpty, "an RCAReport needs at least one evidence_ref")
	}
	c.trace("/trace_id", r.TraceID)
	c.evidenceRefs("/evidence_refs", r.EvidenceRefs)
}

// ---- ComplianceReport

// DeriveOverallVerdict derives the overall verdict from the findings: any fail →
// non_compliant; otherwise any insufficient_evidence, or every finding
// not_applicable (including no findings at all) → needs_review; otherwise
// compliant. The boolean is false if a finding has an unknown verdict.
//
// Specification 002 lists the three verdicts without a rule; this is the
// derivation of the reference implementation's compliance engine
// (rule compliance_report.overall_verdict_consistent, an extension).
func DeriveOverallVerdict(findings []ControlFinding) (OverallVerdict, bool) {
	var fail, insufficient bool
	allNA := true
	for _, f := range findings {
		switch f.PassFail {
		case ControlVerdictFail:
			fail = true
		case ControlVerdictInsufficientEvidence:
			insufficient = true
		case ControlVerdictPass:
		case ControlVerdictNotApplicable:
			continue
		default:
			return "", false
		}
		allNA = false
	}
	switch {
	case fail:
		return OverallVerdictNonCompliant, true
	case insufficient || allNA:
		return OverallVerdictNeedsReview, true
	}
	return OverallVerdictCompliant, true
}

func (e ControlEvidence) pointers() int {
	return len(e.SpanIDs) + len(e.ArtifactIDs) + len(e.EvidenceRefs)
}

func checkComplianceReport(c *checker, r *ComplianceReport) {
	c.trace("/trace_id", r.TraceID)
	seen := make(map[string]int, len(r.ControlsEvaluated))
	for i, f := range r.ControlsEvaluated {
		p := violation.Index("/controls_evaluated", i)
		if first, dup := seen[f.ControlID]; dup {
			c.add(violation.Join(p, "control_id"), rule.ControlUnique, "control %q already evaluated at /controls_evaluated/%d", f.ControlID, first)
		} else {
			seen[f.ControlID] = i
		}
		switch f.PassFail {
		case ControlVerdictFail:
			if f.Evidence.pointers() == 0 {
				c.add(violation.Join(p, "evidence"), rule.FailNeedsEvidence, "control %q fails without an evidence string (span_ids, artifact_ids or evidence_refs)", f.ControlID)
			}
		case ControlVerdictInsufficientEvidence:
			if len(f.MissingEvidence) == 0 {
				c.add(violation.Join(p, "missing_evidence"), rule.InsufficientNeedsMissing, "control %q is insufficient_evidence but lists no missing_evidence", f.ControlID)
			}
		}
		if len(f.MissingEvidence) > 0 && f.PassFail != ControlVerdictInsufficientEvidence && validPassFail(f.PassFail) {
			c.add(violation.Join(p, "pass_fail"), rule.MissingNeedsInsufficient, "control %q lists missing evidence, so its verdict must be insufficient_evidence, not %s", f.ControlID, f.PassFail)
		}
		e := violation.Join(p, "evidence")
		c.trace(violation.Join(e, "trace_id"), f.Evidence.TraceID)
		c.spans(violation.Join(e, "span_ids"), f.Evidence.SpanIDs)
		c.artifactIDs(violation.Join(e, "artifact_ids"), f.Evidence.ArtifactIDs)
		c.evidenceRefs(violation.Join(e, "evidence_refs"), f.Evidence.EvidenceRefs)
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
			c.add("/controls_evaluated", rule.ControlMissing, "applicable control %q is not evaluated", id)
		}
	}
	if want, ok := DeriveOverallVerdict(r.ControlsEvaluated); ok && validVerdict(r.OverallVerdict) && r.OverallVerdict != want {
		c.add("/overall_verdict", rule.OverallVerdictConsistent, "the findings make the overall verdict %s, not %s", want, r.OverallVerdict)
	}
}

func validPassFail(p ControlVerdict) bool {
	switch p {
	case ControlVerdictPass, ControlVerdictFail, ControlVerdictNotApplicable, ControlVerdictInsufficientEvidence:
		return true
	}
	return false
}

func validVerdict(v OverallVerdict) bool {
	switch v {
	case OverallVerdictCompliant, OverallVerdictNonCompliant, OverallVerdictNeedsReview:
		return true
	}
	return false
}

// ---- IncidentDossier

func checkIncidentDossier(c *checker, d *IncidentDossier) {
	if len(d.RepresentativeTraces) == 0 {
		c.add("/representative_traces", rule.RepresentativeTraces, "an IncidentDossier needs at least one representative trace")
	}
	for i, t := range d.RepresentativeTraces {
		c.trace(violation.Join(violation.Index("/representative_traces", i), "trace_id"), t.TraceID)
	}
	for i, ev := range d.Timeline {
		p := violation.Index("/timeline", i)
		if i > 0 && ev.Timestamp.Before(d.Timeline[i-1].Timestamp) {
			c.add(violation.Join(p, "timestamp"), rule.TimelineSorted, "event %d at %s is before event %d at %s",
				i, ev.Timestamp.Format(time.RFC3339Nano), i-1, d.Timeline[i-1].Timestamp.Format(time.RFC3339Nano))
		}
		c.evidenceSet(violation.Join(p, "evidence"), ev.Evidence)
	}
	for i, h := range d.Hypotheses {
		p := violation.Index("/hypotheses", i)
		if h.Evidence.Empty() {
			c.add(violation.Join(p, "evidence"), rule.HypothesisEvidence, "hypothesis %d has no evidence string", i)
		}
		c.evidenceSet(violation.Join(p, "evidence"), h.Evidence)
	}
	if sc := d.SuspectedChange; sc != nil {
		if sc.DiffRef == nil {
			c.add("/suspected_change/diff_ref", rule.DiffRefRequired,
				"a suspected %s change needs a diff_ref (with nothing to point at, leave suspected_change out and say so in gaps)", sc.ChangeType)
			return
		}
		if sc.DiffRef.Kind != EvidenceKindConfigDiff {
			c.add("/suspected_change/diff_ref/kind", rule.DiffRefKind, "diff_ref must be a CONFIG_DIFF EvidenceRef, not %s", sc.DiffRef.Kind)
		}
		c.evidenceRef("/suspected_change/diff_ref", *sc.DiffRef)
	}
}

// ---- PolicyControl

func checkPolicyControl(c *checker, pc *PolicyControl) { checkControlAt(c, "", pc) }

func checkControlAt(c *checker, p string, pc *PolicyControl) {
	if len(pc.RequiredEvidence) == 0 {
		c.add(violation.Join(p, "required_evidence"), rule.RequiredEvidence, "control %q can fail, so it needs required_evidence", pc.ControlID)
	}
}

func checkPolicyControlLibrary(c *checker, lib *[]PolicyControl) {
	type key struct{ id, version string }
	seen := make(map[key]int, len(*lib))
	for i := range *lib {
		pc := &(*lib)[i]
		p := violation.Index("", i)
		checkControlAt(c, p, pc)
		k := key{pc.ControlID, pc.Version}
		if first, dup := seen[k]; dup {
			c.add(p, rule.ControlVersion, "control %q version %q already defined at /%d", pc.ControlID, pc.Version, first)
			continue
		}
		seen[k] = i
	}
}

// ---- Annotation

// KindForEngine returns the contract kind an engine type writes.
func KindForEngine(t RunType) (Kind, bool) {
	switch t {
	case RunTypeRCA:
		return KindRCAReport, true
	case RunTypePolicyCompliance:
		return KindComplianceReport, true
	case RunTypeIncidentDossier:
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
		c.add("/explanation_json", rule.Explanation, "%v", err)
		return
	}
	for _, v := range vs {
		path := v.Path
		if path == "" {
			path = "(document)"
		}
		c.add("/explanation_json", rule.Explanation, "%s %s: %s: %s", kind, path, v.Rule, v.Message)
	}
	if len(vs) == 0 && inner != a.SchemaVersion {
		c.add("/schema_version", rule.ExplanationVersion, "the annotation says %q, its explanation says %q", a.SchemaVersion, inner)
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

// formForKind is the id form an EvidenceRef of the given kind must carry.
func formForKind(k EvidenceKind) (ids.Form, bool) {
	switch k {
	case EvidenceKindSpan, EvidenceKindMessage:
		return ids.FormSpan, true
	case EvidenceKindToolIO:
		return ids.FormTool, true
	case EvidenceKindRetrievalChunk:
		return ids.FormRetrieval, true
	case EvidenceKindConfigDiff:
		return ids.FormConfigDiff, true
	}
	return 0, false
}
