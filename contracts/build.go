package contracts

import (
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/verity-go/verity/contracts/ids"
	"github.com/verity-go/verity/internal/canon"
)

// Marshal returns the canonical JSON (RFC 8785) of a contract value: the
// bytes to persist, hash or put into an annotation's explanation_json.
func Marshal(v any) ([]byte, error) {
	b, err := canon.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("contracts: marshal: %w", err)
	}
	return b, nil
}

// build marshals v, validates it as kind, and decodes the canonical bytes
// back, so the returned value is exactly what a reader of the bytes gets.
// It is how every constructor guarantees that it only returns valid
// documents.
func build[T any](kind Kind, v T, check func(*checker, *T)) (T, error) {
	var zero T
	b, err := Marshal(v)
	if err != nil {
		return zero, err
	}
	out, vs, err := decode(kind, b, &config{}, check)
	if err != nil {
		return zero, err
	}
	if len(vs) > 0 {
		return zero, newValidationError(string(kind), vs)
	}
	return out, nil
}

// EvidenceInput are the parts of an EvidenceRef. Ref may be left empty for
// SPAN and MESSAGE (it is then the span id) and for TOOL_IO (tool:<span_id>);
// RETRIEVAL_CHUNK and CONFIG_DIFF refs come from ids.Retrieval and
// ids.ConfigDiff. Excerpt is the text that influenced the verdict; its hash is
// computed. A zero TS is written as null.
type EvidenceInput struct {
	TraceID string
	SpanID  string
	Kind    EvidenceKind
	Ref     string
	Excerpt string
	TS      time.Time
}

// NewEvidenceRef builds an EvidenceRef from its parts and checks it (ids
// non-empty, ref canonical and matching the kind and span). The error is a
// *ValidationError whose paths are relative to the EvidenceRef.
func NewEvidenceRef(in EvidenceInput) (EvidenceRef, error) {
	ref := in.Ref
	if ref == "" {
		switch in.Kind {
		case EvidenceKindSpan, EvidenceKindMessage:
			ref = in.SpanID
		case EvidenceKindToolIO:
			ref, _ = ids.Tool(in.SpanID) // a bad span id is reported below
		}
	}
	r := EvidenceRef{TraceID: in.TraceID, SpanID: in.SpanID, Kind: in.Kind, Ref: ref, ExcerptHash: ids.ExcerptHash(in.Excerpt)}
	if !in.TS.IsZero() {
		ts := in.TS.UTC()
		r.TS = &ts
	}
	// An RCAReport holding just this reference checks every EvidenceRef
	// rule, schema and semantic; paths are then mapped back.
	rep := RCAReport{SchemaVersion: SchemaVersion, TraceID: "t", PrimaryLabel: PrimaryLabelToolFailure,
		EvidenceRefs: []EvidenceRef{r}, Remediation: []string{}, Gaps: []string{}}
	got, err := build(KindRCAReport, rep, checkRCAReport)
	if err != nil {
		if ve, ok := err.(*ValidationError); ok {
			vs := make([]Violation, 0, len(ve.Violations))
			for _, v := range ve.Violations {
				v.Path = trimPrefix(v.Path, "/evidence_refs/0")
				vs = append(vs, v)
			}
			return EvidenceRef{}, newValidationError("evidence_ref", vs)
		}
		return EvidenceRef{}, err
	}
	return got.EvidenceRefs[0], nil
}

func trimPrefix(p, prefix string) string {
	if p == prefix {
		return ""
	}
	if len(p) > len(prefix) && p[:len(prefix)] == prefix && p[len(prefix)] == '/' {
		return p[len(prefix):]
	}
	return p
}

// Run holds what every RunRecord says, whatever the outcome. Times are
// converted to UTC. Nil slices are written as empty arrays.
type Run struct {
	RunID       string
	RunType     RunType
	StartedAt   time.Time
	CompletedAt time.Time
	Dataset     DatasetRef
	Input       InputRef
	Runtime     RuntimeRef
	Writeback   WritebackRef
}

func (r Run) record(status RunStatus) RunRecord {
	in := r.Input
	in.TraceIDs = nonNil(in.TraceIDs)
	in.TimeWindow = TimeWindow{Start: utcPtr(in.TimeWindow.Start), End: utcPtr(in.TimeWindow.End)}
	rt := r.Runtime
	rt.StateTrajectory = nonNil(rt.StateTrajectory)
	rt.SubcallMetadata = nonNil(rt.SubcallMetadata)
	rt.ReplTrajectory = nonNil(rt.ReplTrajectory)
	wb := r.Writeback
	wb.PhoenixAnnotationIDs = nonNil(wb.PhoenixAnnotationIDs)
	wb.AnnotationNames = nonNil(wb.AnnotationNames)
	wb.AnnotatorKinds = nonNil(wb.AnnotatorKinds)
	return RunRecord{
		SchemaVersion: SchemaVersion,
		RunID:         r.RunID,
		RunType:       r.RunType,
		Status:        status,
		StartedAt:     r.StartedAt.UTC(),
		CompletedAt:   r.CompletedAt.UTC(),
		DatasetRef:    r.Dataset,
		InputRef:      in,
		RuntimeRef:    rt,
		WritebackRef:  wb,
	}
}

func (r Run) withArtifact(rec RunRecord, artifactPath string) RunRecord {
	if artifactPath == "" {
		return rec
	}
	at := artifactForRun[r.RunType]
	v := SchemaVersion
	rec.OutputRef = OutputRef{ArtifactType: &at, ArtifactPath: &artifactPath, SchemaVersion: &v}
	return rec
}

// Succeeded returns the RunRecord of a run that wrote its artifact to
// artifactPath. The artifact type follows the run type.
func (r Run) Succeeded(artifactPath string) (RunRecord, error) {
	return build(KindRunRecord, r.withArtifact(r.record(RunStatusSucceeded), artifactPath), checkRunRecord)
}

// Failed returns the RunRecord of a failed run.
func (r Run) Failed(e RunError) (RunRecord, error) {
	rec := r.record(RunStatusFailed)
	rec.Error = &e
	return build(KindRunRecord, rec, checkRunRecord)
}

// Partial returns the RunRecord of a run that stopped early with a partial
// artifact at artifactPath ("" for none). Usage may exceed the budget.
func (r Run) Partial(artifactPath string) (RunRecord, error) {
	return build(KindRunRecord, r.withArtifact(r.record(RunStatusPartial), artifactPath), checkRunRecord)
}

// TerminatedBudget returns the RunRecord of a run its budget ended.
func (r Run) TerminatedBudget() (RunRecord, error) {
	return build(KindRunRecord, r.record(RunStatusTerminatedBudget), checkRunRecord)
}

// NewRCAReport returns a valid RCAReport or a *ValidationError. An empty
// SchemaVersion becomes SchemaVersion; nil slices become empty.
func NewRCAReport(r RCAReport) (RCAReport, error) {
	if r.SchemaVersion == "" {
		r.SchemaVersion = SchemaVersion
	}
	r.EvidenceRefs = nonNil(r.EvidenceRefs)
	r.Remediation = nonNil(r.Remediation)
	r.Gaps = nonNil(r.Gaps)
	return build(KindRCAReport, r, checkRCAReport)
}

// NewComplianceReport returns a valid ComplianceReport whose overall
// verdict is derived from the findings (see OverallVerdict), or a
// *ValidationError.
func NewComplianceReport(traceID, controlsVersion string, findings []ControlFinding, overallConfidence float64, gaps []string) (ComplianceReport, error) {
	fs := make([]ControlFinding, len(findings))
	for i, f := range findings {
		f.Evidence.SpanIDs = nonNil(f.Evidence.SpanIDs)
		f.Evidence.ArtifactIDs = nonNil(f.Evidence.ArtifactIDs)
		f.Evidence.ExcerptHashes = nonNil(f.Evidence.ExcerptHashes)
		f.Evidence.EvidenceRefs = nonNil(f.Evidence.EvidenceRefs)
		f.MissingEvidence = nonNil(f.MissingEvidence)
		fs[i] = f
	}
	verdict, _ := DeriveOverallVerdict(fs) // an unknown verdict is reported by build
	r := ComplianceReport{
		SchemaVersion:     SchemaVersion,
		TraceID:           traceID,
		ControlsVersion:   controlsVersion,
		ControlsEvaluated: fs,
		OverallVerdict:    verdict,
		OverallConfidence: overallConfidence,
		Gaps:              nonNil(gaps),
	}
	return build(KindComplianceReport, r, checkComplianceReport)
}

// NewIncidentDossier returns a valid IncidentDossier or a *ValidationError.
// The timeline is put in chronological order (stable, by instant) and its
// times in UTC; an empty SchemaVersion becomes SchemaVersion; nil slices
// become empty.
func NewIncidentDossier(d IncidentDossier) (IncidentDossier, error) {
	if d.SchemaVersion == "" {
		d.SchemaVersion = SchemaVersion
	}
	d.ImpactedComponents = nonNil(d.ImpactedComponents)
	tl := make([]TimelineEvent, len(d.Timeline))
	for i, ev := range d.Timeline {
		ev.Timestamp = ev.Timestamp.UTC()
		ev.Evidence = ev.Evidence.normalized()
		tl[i] = ev
	}
	slices.SortStableFunc(tl, func(a, b TimelineEvent) int { return a.Timestamp.Compare(b.Timestamp) })
	d.Timeline = tl
	hs := make([]Hypothesis, len(d.Hypotheses))
	for i, h := range d.Hypotheses {
		h.Evidence = h.Evidence.normalized()
		hs[i] = h
	}
	d.Hypotheses = hs
	d.RepresentativeTraces = nonNil(d.RepresentativeTraces)
	d.RecommendedActions = nonNil(d.RecommendedActions)
	d.Gaps = nonNil(d.Gaps)
	return build(KindIncidentDossier, d, checkIncidentDossier)
}

func (e EvidenceSet) normalized() EvidenceSet {
	return EvidenceSet{TraceIDs: nonNil(e.TraceIDs), SpanIDs: nonNil(e.SpanIDs), ArtifactIDs: nonNil(e.ArtifactIDs), EvidenceRefs: nonNil(e.EvidenceRefs)}
}

// NewPolicyControl returns a valid PolicyControl or a *ValidationError.
func NewPolicyControl(pc PolicyControl) (PolicyControl, error) {
	pc = pc.normalized()
	return build(KindPolicyControl, pc, checkPolicyControl)
}

// NewPolicyControlLibrary returns a valid control library (every control
// valid, (control_id, version) unique) or a *ValidationError.
func NewPolicyControlLibrary(controls ...PolicyControl) ([]PolicyControl, error) {
	lib := make([]PolicyControl, len(controls))
	for i, pc := range controls {
		lib[i] = pc.normalized()
	}
	return build(KindPolicyControlLibrary, lib, checkPolicyControlLibrary)
}

func (pc PolicyControl) normalized() PolicyControl {
	pc.AppliesWhen = AppliesWhen{AppTypes: nonNil(pc.AppliesWhen.AppTypes), Tools: nonNil(pc.AppliesWhen.Tools), DataDomains: nonNil(pc.AppliesWhen.DataDomains)}
	pc.RequiredEvidence = nonNil(pc.RequiredEvidence)
	return pc
}

// AnnotationInput are the parts of an annotation payload other than the
// explanation.
type AnnotationInput struct {
	RunID         string
	Name          string
	AnnotatorKind AnnotatorKind
	Label         string
	Score         *float64
	TargetSpanID  *string
}

// NewAnnotation returns a valid annotation payload carrying report (an
// RCAReport, ComplianceReport or IncidentDossier, by value or pointer) as
// canonical JSON in explanation_json; engine_type and schema_version follow
// from the report.
func NewAnnotation(in AnnotationInput, report any) (Annotation, error) {
	var engine RunType
	var version string
	if v := reflect.ValueOf(report); v.Kind() == reflect.Pointer && v.IsNil() {
		return Annotation{}, fmt.Errorf("%w: an annotation explains a report, not a nil %T", ErrUnknownKind, report)
	}
	switch r := report.(type) {
	case RCAReport:
		engine, version = RunTypeRCA, r.SchemaVersion
	case *RCAReport:
		engine, version = RunTypeRCA, r.SchemaVersion
	case ComplianceReport:
		engine, version = RunTypePolicyCompliance, r.SchemaVersion
	case *ComplianceReport:
		engine, version = RunTypePolicyCompliance, r.SchemaVersion
	case IncidentDossier:
		engine, version = RunTypeIncidentDossier, r.SchemaVersion
	case *IncidentDossier:
		engine, version = RunTypeIncidentDossier, r.SchemaVersion
	default:
		return Annotation{}, fmt.Errorf("%w: an annotation explains an RCAReport, ComplianceReport or IncidentDossier, not %T", ErrUnknownKind, report)
	}
	expl, err := Marshal(report)
	if err != nil {
		return Annotation{}, err
	}
	a := Annotation{
		RunID:           in.RunID,
		EngineType:      engine,
		SchemaVersion:   version,
		Name:            in.Name,
		AnnotatorKind:   in.AnnotatorKind,
		Label:           in.Label,
		Score:           in.Score,
		ExplanationJSON: string(expl),
		TargetSpanID:    in.TargetSpanID,
	}
	return build(KindAnnotation, a, checkAnnotation)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return slices.Clone(s)
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
