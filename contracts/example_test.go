package contracts_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/verity-go/verity/contracts"
	"github.com/verity-go/verity/contracts/rule"
)

func ExampleValidate() {
	doc := []byte(`{
	  "schema_version": "1.0.0",
	  "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
	  "primary_label": "network_failure",
	  "summary": "inventory-api answered 503",
	  "confidence": 1.2,
	  "evidence_refs": [{
	    "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
	    "span_id": "00f067aa0ba902b7",
	    "kind": "RETRIEVAL_CHUNK",
	    "ref": "tool:00f067aa0ba902b7",
	    "excerpt_hash": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	  }],
	  "remediation": [],
	  "gaps": []
	}`)
	err := contracts.Validate(contracts.KindRCAReport, doc)
	var ve *contracts.ValidationError
	if errors.As(err, &ve) {
		for _, v := range ve.Violations {
			fmt.Printf("%s %s\n", v.Path, v.Rule)
		}
	}
	// Output:
	// /confidence schema.maximum
	// /evidence_refs/0/ref evidence_ref.kind_mismatch
	// /primary_label schema.enum
}

func ExampleDecodeRunRecord() {
	doc := []byte(`{
	  "schema_version": "1.2.0",
	  "run_id": "run-1", "run_type": "rca", "status": "failed",
	  "started_at": "2026-03-02T10:20:00Z", "completed_at": "2026-03-02T10:20:31Z",
	  "dataset_ref": {},
	  "input_ref": {"trace_ids": ["4bf92f3577b34da6a3ce929d0e0e4736"], "time_window": {}},
	  "runtime_ref": {
	    "engine_version": "0.4.1", "model_provider": "openai", "model_name": "gpt-4o-mini",
	    "temperature": 0, "prompt_template_hash": "",
	    "budget": {"max_iterations": 40, "max_depth": 2, "max_tool_calls": 200, "max_subcalls": 80, "max_wall_time_sec": 180},
	    "usage": {"iterations": 2, "depth_reached": 0, "tool_calls": 1, "llm_subcalls": 1, "tokens_in": 900, "tokens_out": 40, "cost_usd": 0.001},
	    "state_trajectory": [], "subcall_metadata": [], "repl_trajectory": []
	  },
	  "output_ref": {},
	  "writeback_ref": {"phoenix_annotation_ids": [], "writeback_status": "failed", "annotation_names": [], "annotator_kinds": []}
	}`)
	rec, err := contracts.DecodeRunRecord(doc)
	fmt.Println(rec.RunID, rec.Status)
	fmt.Println(err)
	// Output:
	// run-1 failed
	// contracts: invalid run_record: 1 violation: /error: run_record.error_required_on_failure: a run with status failed must carry error
}

func ExampleRun_Failed() {
	start := time.Date(2026, 3, 2, 10, 20, 0, 0, time.UTC)
	run := contracts.Run{
		RunID: "run-1", RunType: contracts.RunTypeRCA,
		StartedAt: start, CompletedAt: start.Add(31 * time.Second),
		Input: contracts.InputRef{TraceIDs: []string{"4bf92f3577b34da6a3ce929d0e0e4736"}},
		Runtime: contracts.RuntimeRef{
			EngineVersion: "0.4.1", ModelProvider: "openai", ModelName: "gpt-4o-mini",
			Budget: contracts.DefaultRunBudget(),
		},
		Writeback: contracts.WritebackRef{WritebackStatus: contracts.WritebackStatusFailed},
	}
	rec, err := run.Failed(contracts.RunError{Code: "TRACE_FETCH_TIMEOUT", Message: "Phoenix did not answer", Stage: "collect", Retryable: true})
	fmt.Println(rec.Status, rec.Error.Code, err)
	_, err = run.Succeeded("") // a succeeded run must name its artifact
	fmt.Println(err)
	// Output:
	// failed TRACE_FETCH_TIMEOUT <nil>
	// contracts: invalid run_record: 1 violation: /output_ref/artifact_path: run_record.artifact_path_required_on_success: a run with status succeeded must carry output_ref.artifact_path
}

func ExampleNewComplianceReport() {
	ref, _ := contracts.NewEvidenceRef(contracts.EvidenceInput{
		TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7",
		Kind: contracts.EvidenceKindToolIO, Excerpt: "card 4111 1111 1111 1111",
	})
	report, err := contracts.NewComplianceReport("4bf92f3577b34da6a3ce929d0e0e4736", "2026.03", []contracts.ControlFinding{
		{ControlID: "PII-001", PassFail: contracts.ControlVerdictFail, Severity: contracts.SeverityCritical, Confidence: 0.9,
			Evidence: contracts.ControlEvidence{EvidenceRefs: []contracts.EvidenceRef{ref}}, Remediation: "mask card numbers"},
		{ControlID: "SEC-004", PassFail: contracts.ControlVerdictNotApplicable, Severity: contracts.SeverityHigh, Confidence: 1},
	}, 0.9, nil)
	fmt.Println(report.OverallVerdict, ref.Ref, err)
	// Output:
	// non_compliant tool:00f067aa0ba902b7 <nil>
}

func ExampleNewAnnotation() {
	ref, _ := contracts.NewEvidenceRef(contracts.EvidenceInput{
		TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7",
		Kind: contracts.EvidenceKindToolIO, Excerpt: "HTTP 503",
	})
	report, _ := contracts.NewRCAReport(contracts.RCAReport{
		TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", PrimaryLabel: contracts.PrimaryLabelToolFailure,
		Summary: "inventory-api answered 503", Confidence: 0.8, EvidenceRefs: []contracts.EvidenceRef{ref},
	})
	a, err := contracts.NewAnnotation(contracts.AnnotationInput{
		RunID: "run-1", Name: "rca_primary_label", AnnotatorKind: contracts.AnnotatorKindLLM, Label: string(report.PrimaryLabel),
	}, report)
	fmt.Println(a.EngineType, a.SchemaVersion, err)
	payload, _ := contracts.Marshal(a)
	fmt.Println(contracts.Validate(contracts.KindAnnotation, payload))
	// Output:
	// rca 1.0.0 <nil>
	// <nil>
}

func ExampleValidate_majorVersion() {
	doc := []byte(`{"schema_version":"2.0.0","trace_id":"t1"}`)
	err := contracts.Validate(contracts.KindRCAReport, doc)
	fmt.Println(errors.Is(err, contracts.ErrMajorVersion), errors.Is(err, contracts.ErrInvalid))
	fmt.Println(err)
	// Output:
	// true true
	// contracts: invalid rca_report: 1 violation: /schema_version: schema_version.major_mismatch: document schema_version 2.0.0 has major version 2, this library reads major version 1 (1.0.0)
}

func ExampleWithResolver() {
	doc := []byte(`[{"control_id":"PII-001","version":"1","title":"","description":"","severity":"low",
	  "applies_when":{"app_types":[],"tools":[],"data_domains":[]},"required_evidence":["x"],
	  "decision_logic_hint":"","remediation_template":""}]`)
	fmt.Println(contracts.Validate(contracts.KindPolicyControlLibrary, doc))

	report := []byte(`{"schema_version":"1.0.0","trace_id":"t-unknown","primary_label":"tool_failure","summary":"",
	  "confidence":0.5,"remediation":[],"gaps":[],
	  "evidence_refs":[{"trace_id":"t-unknown","span_id":"s1","kind":"SPAN","ref":"s1",
	    "excerpt_hash":"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}]}`)
	known := contracts.KnownIDs([]string{"t1"}, []string{"s1"}, nil)
	vs, _ := contracts.Check(contracts.KindRCAReport, report, contracts.WithResolver(known))
	for _, v := range vs {
		fmt.Println(v)
	}
	// Output:
	// <nil>
	// /evidence_refs/0/trace_id: evidence.unknown_trace: trace "t-unknown" is not known
	// /trace_id: evidence.unknown_trace: trace "t-unknown" is not known
}

func ExampleSpecOnly() {
	// Valid by specification 002, which does not pair kinds with id forms
	// and reads "RFC3339 UTC" as admitting +00:00; Verity's extensions
	// refuse both.
	doc := []byte(`{
	  "schema_version": "1.0.0",
	  "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
	  "primary_label": "tool_failure",
	  "summary": "inventory-api answered 503",
	  "confidence": 0.8,
	  "evidence_refs": [{
	    "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
	    "span_id": "00f067aa0ba902b7",
	    "kind": "RETRIEVAL_CHUNK",
	    "ref": "tool:00f067aa0ba902b7",
	    "excerpt_hash": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
	    "ts": "2026-03-02T10:15:04+00:00"
	  }],
	  "remediation": [],
	  "gaps": []
	}`)
	vs, _ := contracts.Check(contracts.KindRCAReport, doc)
	for _, v := range vs {
		fmt.Printf("%s %s\n", v.Path, v.Rule)
	}
	vs, _ = contracts.Check(contracts.KindRCAReport, doc, contracts.SpecOnly())
	fmt.Println("spec only:", len(vs), "violations")
	for _, r := range rule.All() {
		if r.Name == rule.OverallVerdictConsistent {
			fmt.Println(r.Extension, r.Source[:15])
		}
	}
	// Output:
	// /evidence_refs/0/ref evidence_ref.kind_mismatch
	// /evidence_refs/0/ts time.z_suffix
	// spec only: 0 violations
	// true Verity's choice
}
