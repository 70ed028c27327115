package contracts

//lint:file-ignore SA5008 internal/strictjson reads these structs: its tag option "optional" (a member that may be absent) is one staticcheck does not know, and strictjson refuses an unknown option itself

import (
	"encoding/json"
	"time"
)

// Severity is the spec's severity vocabulary.
type Severity string

// Severities.
const (
	SeverityCritical Severity = "critical"
	SeverityHigh     Severity = "high"
	SeverityMedium   Severity = "medium"
	SeverityLow      Severity = "low"
)

// ControlVerdict is the per-control verdict vocabulary.
type ControlVerdict string

// Per-control verdicts.
const (
	ControlVerdictPass                 ControlVerdict = "pass"
	ControlVerdictFail                 ControlVerdict = "fail"
	ControlVerdictNotApplicable        ControlVerdict = "not_applicable"
	ControlVerdictInsufficientEvidence ControlVerdict = "insufficient_evidence"
)

// AnnotatorKind says who wrote an annotation.
type AnnotatorKind string

// Annotator kinds.
const (
	AnnotatorKindLLM   AnnotatorKind = "LLM"
	AnnotatorKindHuman AnnotatorKind = "HUMAN"
	AnnotatorKindCode  AnnotatorKind = "CODE"
)

// RunType is the evaluator engine type; annotations call it engine_type.
type RunType string

// Run (engine) types.
const (
	RunTypeRCA              RunType = "rca"
	RunTypePolicyCompliance RunType = "policy_compliance"
	RunTypeIncidentDossier  RunType = "incident_dossier"
)

// RunStatus is how an evaluator invocation ended.
type RunStatus string

// Run statuses.
const (
	RunStatusSucceeded        RunStatus = "succeeded"
	RunStatusFailed           RunStatus = "failed"
	RunStatusPartial          RunStatus = "partial"
	RunStatusTerminatedBudget RunStatus = "terminated_budget"
)

// WritebackStatus is how the annotation write-back ended.
type WritebackStatus string

// Write-back statuses.
const (
	WritebackStatusSucceeded WritebackStatus = "succeeded"
	WritebackStatusPartial   WritebackStatus = "partial"
	WritebackStatusFailed    WritebackStatus = "failed"
)

// ArtifactType names the formal output contract a run produced.
type ArtifactType string

// Artifact types.
const (
	ArtifactTypeRCAReport        ArtifactType = "RCAReport"
	ArtifactTypeComplianceReport ArtifactType = "ComplianceReport"
	ArtifactTypeIncidentDossier  ArtifactType = "IncidentDossier"
)

// PrimaryLabel is the root-cause class of an RCAReport.
type PrimaryLabel string

// Primary labels.
const (
	PrimaryLabelRetrievalFailure          PrimaryLabel = "retrieval_failure"
	PrimaryLabelToolFailure               PrimaryLabel = "tool_failure"
	PrimaryLabelInstructionFailure        PrimaryLabel = "instruction_failure"
	PrimaryLabelUpstreamDependencyFailure PrimaryLabel = "upstream_dependency_failure"
	PrimaryLabelDataSchemaMismatch        PrimaryLabel = "data_schema_mismatch"
)

// EvidenceKind is what an EvidenceRef points at.
type EvidenceKind string

// Evidence kinds.
const (
	EvidenceKindSpan           EvidenceKind = "SPAN"
	EvidenceKindToolIO         EvidenceKind = "TOOL_IO"
	EvidenceKindRetrievalChunk EvidenceKind = "RETRIEVAL_CHUNK"
	EvidenceKindMessage        EvidenceKind = "MESSAGE"
	EvidenceKindConfigDiff     EvidenceKind = "CONFIG_DIFF"
)

// ChangeType classifies a suspected change.
type ChangeType string

// Change types.
const (
	ChangeTypeDeploy     ChangeType = "deploy"
	ChangeTypeConfig     ChangeType = "config"
	ChangeTypePrompt     ChangeType = "prompt"
	ChangeTypeDependency ChangeType = "dependency"
	ChangeTypeUnknown    ChangeType = "unknown"
)

// Priority of a recommended action.
type Priority string

// Priorities.
const (
	PriorityP0 Priority = "P0"
	PriorityP1 Priority = "P1"
	PriorityP2 Priority = "P2"
)

// ActionType of a recommended action.
type ActionType string

// Action types.
const (
	ActionTypeMitigation  ActionType = "mitigation"
	ActionTypeFollowUpFix ActionType = "follow_up_fix"
)

// OverallVerdict is a ComplianceReport's overall verdict.
type OverallVerdict string

// Overall verdicts.
const (
	OverallVerdictCompliant    OverallVerdict = "compliant"
	OverallVerdictNonCompliant OverallVerdict = "non_compliant"
	OverallVerdictNeedsReview  OverallVerdict = "needs_review"
)

// EvidenceRef is the canonical evidence pointer. Ref is a canonical id whose
// form matches Kind (see package ids); ExcerptHash is the SHA-256 (hex) of the
// excerpt that influenced a verdict (see ids.ExcerptHash).
type EvidenceRef struct {
	TraceID     string       `json:"trace_id"`
	SpanID      string       `json:"span_id"`
	Kind        EvidenceKind `json:"kind"`
	Ref         string       `json:"ref"`
	ExcerptHash string       `json:"excerpt_hash"`
	TS          *time.Time   `json:"ts,optional"`
}

// RunRecord is Contract 1: one auditable record per evaluator invocation.
type RunRecord struct {
	SchemaVersion string       `json:"schema_version"`
	RunID         string       `json:"run_id"`
	RunType       RunType      `json:"run_type"`
	Status        RunStatus    `json:"status"`
	StartedAt     time.Time    `json:"started_at"`
	CompletedAt   time.Time    `json:"completed_at"`
	DatasetRef    DatasetRef   `json:"dataset_ref"`
	InputRef      InputRef     `json:"input_ref"`
	RuntimeRef    RuntimeRef   `json:"runtime_ref"`
	OutputRef     OutputRef    `json:"output_ref"`
	WritebackRef  WritebackRef `json:"writeback_ref"`
	Error         *RunError    `json:"error,omitempty"`
}

// DatasetRef names the dataset a run evaluated, if any.
type DatasetRef struct {
	DatasetID   *string `json:"dataset_id,optional"`
	DatasetHash *string `json:"dataset_hash,optional"`
}

// InputRef describes what a run read.
type InputRef struct {
	ProjectName     *string    `json:"project_name,optional"`
	TraceIDs        []string   `json:"trace_ids"`
	TimeWindow      TimeWindow `json:"time_window"`
	FilterExpr      *string    `json:"filter_expr,optional"`
	ControlsVersion *string    `json:"controls_version,optional"`
}

// TimeWindow is an optional [Start, End] interval.
type TimeWindow struct {
	Start *time.Time `json:"start,optional"`
	End   *time.Time `json:"end,optional"`
}

// RuntimeRef describes the engine, model, budget and usage of a run.
type RuntimeRef struct {
	EngineVersion      string            `json:"engine_version"`
	ModelProvider      string            `json:"model_provider"`
	ModelName          string            `json:"model_name"`
	Temperature        float64           `json:"temperature"`
	PromptTemplateHash string            `json:"prompt_template_hash"`
	Budget             RunBudget         `json:"budget"`
	Usage              Usage             `json:"usage"`
	StateTrajectory    []string          `json:"state_trajectory"`
	SubcallMetadata    []json.RawMessage `json:"subcall_metadata"`
	ReplTrajectory     []json.RawMessage `json:"repl_trajectory"`
}

// RunBudget is the limit set on a run. Nil pointers mean "no limit" (or, for
// SamplingSeed, "no seed"). DefaultRunBudget returns the reference
// implementation's defaults (specification 002 gives no values).
type RunBudget struct {
	MaxIterations  int64    `json:"max_iterations"`
	MaxDepth       int64    `json:"max_depth"`
	MaxToolCalls   int64    `json:"max_tool_calls"`
	MaxSubcalls    int64    `json:"max_subcalls"`
	MaxTokensTotal *int64   `json:"max_tokens_total,optional"`
	MaxCostUSD     *float64 `json:"max_cost_usd,optional"`
	SamplingSeed   *int64   `json:"sampling_seed,optional"`
	MaxWallTimeSec int64    `json:"max_wall_time_sec"`
}

// Usage is what a run consumed.
type Usage struct {
	Iterations   int64   `json:"iterations"`
	DepthReached int64   `json:"depth_reached"`
	ToolCalls    int64   `json:"tool_calls"`
	LLMSubcalls  int64   `json:"llm_subcalls"`
	TokensIn     int64   `json:"tokens_in"`
	TokensOut    int64   `json:"tokens_out"`
	CostUSD      float64 `json:"cost_usd"`
}

// OutputRef points at the formal artifact a run produced.
type OutputRef struct {
	ArtifactType  *ArtifactType `json:"artifact_type,optional"`
	ArtifactPath  *string       `json:"artifact_path,optional"`
	SchemaVersion *string       `json:"schema_version,optional"`
}

// WritebackRef records the annotation write-back of a run.
type WritebackRef struct {
	PhoenixAnnotationIDs []string        `json:"phoenix_annotation_ids"`
	WritebackStatus      WritebackStatus `json:"writeback_status"`
	AnnotationNames      []string        `json:"annotation_names"`
	AnnotatorKinds       []AnnotatorKind `json:"annotator_kinds"`
}

// RunError describes why a run failed.
type RunError struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Stage     string `json:"stage"`
	Retryable bool   `json:"retryable"`
}

// RCAReport is Contract 2: the root cause of one trace.
type RCAReport struct {
	SchemaVersion string        `json:"schema_version"`
	TraceID       string        `json:"trace_id"`
	PrimaryLabel  PrimaryLabel  `json:"primary_label"`
	Summary       string        `json:"summary"`
	Confidence    float64       `json:"confidence"`
	EvidenceRefs  []EvidenceRef `json:"evidence_refs"`
	Remediation   []string      `json:"remediation"`
	Gaps          []string      `json:"gaps"`
}

// ComplianceReport is Contract 3: control verdicts for one trace.
type ComplianceReport struct {
	SchemaVersion     string           `json:"schema_version"`
	TraceID           string           `json:"trace_id"`
	ControlsVersion   string           `json:"controls_version"`
	ControlsEvaluated []ControlFinding `json:"controls_evaluated"`
	OverallVerdict    OverallVerdict   `json:"overall_verdict"`
	OverallConfidence float64          `json:"overall_confidence"`
	Gaps              []string         `json:"gaps"`
}

// ControlFinding is the verdict on one control.
type ControlFinding struct {
	ControlID       string          `json:"control_id"`
	PassFail        ControlVerdict  `json:"pass_fail"`
	Severity        Severity        `json:"severity"`
	Confidence      float64         `json:"confidence"`
	Evidence        ControlEvidence `json:"evidence"`
	MissingEvidence []string        `json:"missing_evidence"`
	Remediation     string          `json:"remediation"`
}

// ControlEvidence is the evidence behind one control verdict. An evidence
// pointer is an entry of SpanIDs, ArtifactIDs or EvidenceRefs.
type ControlEvidence struct {
	TraceID       string        `json:"trace_id"`
	SpanIDs       []string      `json:"span_ids"`
	ArtifactIDs   []string      `json:"artifact_ids"`
	ExcerptHashes []string      `json:"excerpt_hashes"`
	EvidenceRefs  []EvidenceRef `json:"evidence_refs"`
}

// IncidentDossier is Contract 4: an evidence-backed account of an incident.
type IncidentDossier struct {
	SchemaVersion        string                `json:"schema_version"`
	IncidentID           string                `json:"incident_id"`
	IncidentSummary      string                `json:"incident_summary"`
	ImpactedComponents   []string              `json:"impacted_components"`
	Timeline             []TimelineEvent       `json:"timeline"`
	RepresentativeTraces []RepresentativeTrace `json:"representative_traces"`
	SuspectedChange      *SuspectedChange      `json:"suspected_change,omitempty"`
	Hypotheses           []Hypothesis          `json:"hypotheses"`
	RecommendedActions   []RecommendedAction   `json:"recommended_actions"`
	Confidence           float64               `json:"confidence"`
	Gaps                 []string              `json:"gaps"`
}

// TimelineEvent is one dated event of an incident.
type TimelineEvent struct {
	Timestamp time.Time   `json:"timestamp"`
	Event     string      `json:"event"`
	Evidence  EvidenceSet `json:"evidence"`
}

// EvidenceSet holds the evidence pointers of a timeline event or hypothesis.
type EvidenceSet struct {
	TraceIDs     []string      `json:"trace_ids"`
	SpanIDs      []string      `json:"span_ids"`
	ArtifactIDs  []string      `json:"artifact_ids"`
	EvidenceRefs []EvidenceRef `json:"evidence_refs"`
}

// Empty reports whether the set holds no pointer at all.
func (e EvidenceSet) Empty() bool {
	return len(e.TraceIDs) == 0 && len(e.SpanIDs) == 0 && len(e.ArtifactIDs) == 0 && len(e.EvidenceRefs) == 0
}

// RepresentativeTrace is a trace chosen to illustrate an incident.
type RepresentativeTrace struct {
	TraceID     string `json:"trace_id"`
	WhySelected string `json:"why_selected"`
}

// SuspectedChange is the change suspected of causing an incident. DiffRef
// is required whatever the ChangeType, ChangeUnknown included (the
// specification: "if suspected_change is asserted, diff_ref must be
// present"); that it is a CONFIG_DIFF EvidenceRef is an extension
// (incident_dossier.diff_ref_kind). With nothing to point at, leave the
// suspected change out.
type SuspectedChange struct {
	ChangeType ChangeType   `json:"change_type"`
	ChangeRef  string       `json:"change_ref"`
	DiffRef    *EvidenceRef `json:"diff_ref,omitempty"`
	Summary    string       `json:"summary"`
}

// Hypothesis is one ranked explanation of an incident.
type Hypothesis struct {
	Rank       int64       `json:"rank"`
	Statement  string      `json:"statement"`
	Confidence float64     `json:"confidence"`
	Evidence   EvidenceSet `json:"evidence"`
}

// RecommendedAction is one follow-up of an incident.
type RecommendedAction struct {
	Priority Priority   `json:"priority"`
	Type     ActionType `json:"type"`
	Action   string     `json:"action"`
}

// PolicyControl is Contract 5: one control of a policy library.
type PolicyControl struct {
	ControlID           string      `json:"control_id"`
	Version             string      `json:"version"`
	Title               string      `json:"title"`
	Description         string      `json:"description"`
	Severity            Severity    `json:"severity"`
	AppliesWhen         AppliesWhen `json:"applies_when"`
	RequiredEvidence    []string    `json:"required_evidence"`
	DecisionLogicHint   string      `json:"decision_logic_hint"`
	RemediationTemplate string      `json:"remediation_template"`
}

// AppliesWhen scopes a control.
type AppliesWhen struct {
	AppTypes    []string `json:"app_types"`
	Tools       []string `json:"tools"`
	DataDomains []string `json:"data_domains"`
}

// Annotation is Contract 6: one write-back row. ExplanationJSON holds the
// formal output contract matching EngineType, as JSON text.
type Annotation struct {
	RunID           string        `json:"run_id"`
	EngineType      RunType       `json:"engine_type"`
	SchemaVersion   string        `json:"schema_version"`
	Name            string        `json:"name"`
	AnnotatorKind   AnnotatorKind `json:"annotator_kind"`
	Label           string        `json:"label"`
	Score           *float64      `json:"score,optional"`
	ExplanationJSON string        `json:"explanation_json"`
	TargetSpanID    *string       `json:"target_span_id,optional"`
}
