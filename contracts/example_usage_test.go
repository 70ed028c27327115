package contracts_test

import (
	"errors"
	"fmt"

	"github.com/verity-go/verity/contracts"
)

// Example is the package documentation's usage example: read and check a
// document, then build one.
func Example() {
	data := []byte(`{"schema_version": "1.0.0", "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
	  "controls_version": "controls-v3", "overall_verdict": "compliant", "overall_confidence": 0.9, "gaps": [],
	  "controls_evaluated": [{"control_id": "PII-001", "pass_fail": "fail", "severity": "high", "confidence": 0.9,
	    "evidence": {"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "span_ids": ["00f067aa0ba902b7"],
	      "artifact_ids": [], "excerpt_hashes": [], "evidence_refs": []},
	    "missing_evidence": [], "remediation": "mask the e-mail address"}]}`)
	_, err := contracts.DecodeComplianceReport(data)
	var ve *contracts.ValidationError
	if errors.As(err, &ve) {
		for _, v := range ve.Violations {
			fmt.Println(v.Path, v.Rule)
		}
	}

	findings := []contracts.ControlFinding{{ControlID: "PII-001", PassFail: contracts.ControlVerdictPass,
		Severity: contracts.SeverityHigh, Confidence: 0.9}}
	report, err := contracts.NewComplianceReport("4bf92f3577b34da6a3ce929d0e0e4736", "controls-v3", findings, 0.9, nil)
	fmt.Println(report.OverallVerdict, err)
	data, _ = contracts.Marshal(report)
	fmt.Println(contracts.Validate(contracts.KindComplianceReport, data))
	// Output:
	// /overall_verdict compliance_report.overall_verdict_consistent
	// compliant <nil>
	// <nil>
}
