#!/usr/bin/env python3
"""Regenerates the contract fixtures under testdata/valid and testdata/invalid.

Each invalid fixture is a valid base document with one mutation; its file
name is the rule it breaks, optionally followed by "--<variant>".
"""
import copy, hashlib, json, os, shutil

HERE = os.path.dirname(os.path.abspath(__file__))

def h(text):
    return hashlib.sha256(text.encode()).hexdigest()

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACE2 = "0af7651916cd43dd8448eb211c80319c"
SPAN_TOOL = "00f067aa0ba902b7"
SPAN_RET = "b7ad6b7169203331"
SPAN_MSG = "53995c3f42cd8ad8"
DIFF = h("--- a/config.yaml\n+++ b/config.yaml\n-top_k: 8\n+top_k: 2\n")

def ref(kind, span, ref, excerpt, ts="2026-03-02T10:15:04.120Z", trace=TRACE):
    return {"trace_id": trace, "span_id": span, "kind": kind, "ref": ref,
            "excerpt_hash": h(excerpt), "ts": ts}

TOOL_REF = ref("TOOL_IO", SPAN_TOOL, "tool:" + SPAN_TOOL, "HTTP 503 from inventory-api")
RET_REF = ref("RETRIEVAL_CHUNK", SPAN_RET, "retrieval:%s:3:kb/returns-policy.md:chunk=12" % SPAN_RET,
              "Returns are accepted within 30 days.")
MSG_REF = ref("MESSAGE", SPAN_MSG, SPAN_MSG, "I could not find the order.", ts=None)
SPAN_REF = ref("SPAN", SPAN_TOOL, SPAN_TOOL, "inventory lookup span", ts=None)
DIFF_REF = ref("CONFIG_DIFF", SPAN_RET, "configdiff:" + DIFF, "top_k: 8 -> 2", ts="2026-03-02T09:58:00Z")

run_succeeded = {
    "schema_version": "1.0.0",
    "run_id": "run-0192f3a4-7c1e-7b2a-9d3e-5f6a7b8c9d0e",
    "run_type": "rca",
    "status": "succeeded",
    "started_at": "2026-03-02T10:20:00Z",
    "completed_at": "2026-03-02T10:21:12.5Z",
    "dataset_ref": {"dataset_id": None, "dataset_hash": None},
    "input_ref": {
        "project_name": "checkout-assistant",
        "trace_ids": [TRACE],
        "time_window": {"start": "2026-03-02T10:00:00Z", "end": "2026-03-02T10:30:00Z"},
        "filter_expr": "status_code == 'ERROR'",
        "controls_version": None,
    },
    "runtime_ref": {
        "engine_version": "0.4.1",
        "model_provider": "openai",
        "model_name": "gpt-4o-mini",
        "temperature": 0,
        "prompt_template_hash": h("rca prompt v3"),
        "budget": {"max_iterations": 40, "max_depth": 2, "max_tool_calls": 200, "max_subcalls": 80,
                   "max_tokens_total": 300000, "max_cost_usd": None, "sampling_seed": None,
                   "max_wall_time_sec": 180},
        "usage": {"iterations": 7, "depth_reached": 1, "tool_calls": 12, "llm_subcalls": 5,
                  "tokens_in": 18230, "tokens_out": 2210, "cost_usd": 0.0213},
        "state_trajectory": ["collect", "hypothesize", "verify", "report"],
        "subcall_metadata": [{"model": "gpt-4o-mini", "purpose": "classify"}],
        "repl_trajectory": [{"step": 1, "code": "spans.filter(kind='TOOL')"}],
    },
    "output_ref": {"artifact_type": "RCAReport", "artifact_path": "artifacts/run-0192f3a4/rca_report.json",
                   "schema_version": "1.0.0"},
    "writeback_ref": {"phoenix_annotation_ids": ["QW5ub3RhdGlvbjox"], "writeback_status": "succeeded",
                      "annotation_names": ["rca_primary_label"], "annotator_kinds": ["LLM"]},
}

run_failed = copy.deepcopy(run_succeeded)
run_failed.update({"status": "failed",
                   "output_ref": {"artifact_type": None, "artifact_path": None, "schema_version": None},
                   "writeback_ref": {"phoenix_annotation_ids": [], "writeback_status": "failed",
                                     "annotation_names": [], "annotator_kinds": []},
                   "error": {"code": "TRACE_FETCH_TIMEOUT", "message": "Phoenix did not answer within 30 s",
                             "stage": "collect", "retryable": True}})

run_budget = copy.deepcopy(run_failed)
del run_budget["error"]
run_budget["status"] = "terminated_budget"
run_budget["runtime_ref"]["usage"].update({"iterations": 41, "tool_calls": 230})

rca = {
    "schema_version": "1.0.0",
    "trace_id": TRACE,
    "primary_label": "tool_failure",
    "summary": "The inventory tool returned HTTP 503, and the agent answered without stock data.",
    "confidence": 0.82,
    "evidence_refs": [TOOL_REF, SPAN_REF, MSG_REF],
    "remediation": ["Retry inventory-api with backoff", "Tell the user when stock data is unavailable"],
    "gaps": ["No upstream logs for inventory-api"],
}

def finding(i, pf):
    cid = "CTRL-%03d" % i
    f = {"control_id": cid, "pass_fail": pf, "severity": ["critical", "high", "medium", "low"][i % 4],
         "confidence": 0.9,
         "evidence": {"trace_id": TRACE, "span_ids": [], "artifact_ids": [], "excerpt_hashes": [],
                      "evidence_refs": []},
         "missing_evidence": [], "remediation": ""}
    if pf in ("pass", "fail"):
        f["evidence"]["span_ids"] = [SPAN_TOOL]
        f["evidence"]["artifact_ids"] = ["tool:" + SPAN_TOOL, "compliance:%s:%s" % (cid, h(cid))]
        f["evidence"]["excerpt_hashes"] = [h("excerpt " + cid)]
        f["evidence"]["evidence_refs"] = [TOOL_REF]
    if pf == "fail":
        f["remediation"] = "Mask card numbers before logging tool output."
    if pf == "insufficient_evidence":
        f["missing_evidence"] = ["redaction log for span " + SPAN_TOOL]
    return f

compliance = {
    "schema_version": "1.0.0",
    "trace_id": TRACE,
    "controls_version": "2026.03",
    "controls_evaluated": [finding(1, "pass"), finding(2, "fail"), finding(3, "not_applicable")],
    "overall_verdict": "non_compliant",
    "overall_confidence": 0.8,
    "gaps": [],
}
compliance10 = copy.deepcopy(compliance)
compliance10["controls_evaluated"] = [finding(i, pf) for i, pf in enumerate(
    ["pass", "pass", "not_applicable", "pass", "insufficient_evidence", "pass", "pass", "not_applicable", "pass", "pass"], 1)]
compliance10["overall_verdict"] = "needs_review"

def event(i, ts):
    return {"timestamp": ts, "event": "event %d" % i,
            "evidence": {"trace_ids": [TRACE], "span_ids": [SPAN_TOOL], "artifact_ids": ["tool:" + SPAN_TOOL],
                         "evidence_refs": [TOOL_REF]}}

dossier = {
    "schema_version": "1.0.0",
    "incident_id": "INC-2026-0302-01",
    "incident_summary": "Checkout answers lost stock data after retrieval top_k was lowered.",
    "impacted_components": ["checkout-assistant", "inventory-api"],
    "timeline": [
        {"timestamp": "2026-03-02T09:58:00Z", "event": "Config change lowers top_k from 8 to 2",
         "evidence": {"trace_ids": [], "span_ids": [], "artifact_ids": ["configdiff:" + DIFF], "evidence_refs": [DIFF_REF]}},
        {"timestamp": "2026-03-02T10:15:04Z", "event": "First answer without stock data",
         "evidence": {"trace_ids": [TRACE], "span_ids": [SPAN_TOOL], "artifact_ids": [], "evidence_refs": [TOOL_REF]}},
        {"timestamp": "2026-03-02T10:15:04.5Z", "event": "Retrieval returns the returns policy instead of stock",
         "evidence": {"trace_ids": [TRACE], "span_ids": [], "artifact_ids": [RET_REF["ref"]], "evidence_refs": [RET_REF]}},
    ],
    "representative_traces": [{"trace_id": TRACE, "why_selected": "first failing checkout"},
                              {"trace_id": TRACE2, "why_selected": "typical failure at peak"}],
    "suspected_change": {"change_type": "config", "change_ref": "config-repo@9f2c1e7",
                         "diff_ref": DIFF_REF, "summary": "top_k lowered from 8 to 2"},
    "hypotheses": [
        {"rank": 1, "statement": "Lower top_k drops the stock chunk from context", "confidence": 0.7,
         "evidence": {"trace_ids": [TRACE], "span_ids": [SPAN_RET], "artifact_ids": [], "evidence_refs": [RET_REF]}},
        {"rank": 2, "statement": "inventory-api outage", "confidence": 0.2,
         "evidence": {"trace_ids": [], "span_ids": [], "artifact_ids": ["tool:" + SPAN_TOOL], "evidence_refs": []}},
    ],
    "recommended_actions": [{"priority": "P0", "type": "mitigation", "action": "Restore top_k to 8"},
                            {"priority": "P2", "type": "follow_up_fix", "action": "Add a retrieval regression test"}],
    "confidence": 0.7,
    "gaps": ["inventory-api logs unavailable"],
}
dossier20 = copy.deepcopy(dossier)
dossier20["timeline"] = [event(i, "2026-03-02T10:%02d:%02d.%dZ" % (i // 6, (i * 7) % 60 if False else i * 2, i % 10))
                         for i in range(20)]

control = {
    "control_id": "PII-001",
    "version": "2026.03",
    "title": "No card numbers in tool output logs",
    "description": "Tool outputs logged to traces must mask primary account numbers.",
    "severity": "critical",
    "applies_when": {"app_types": ["checkout"], "tools": ["payments-api"], "data_domains": ["payments"]},
    "required_evidence": ["tool output span", "redaction log"],
    "decision_logic_hint": "fail if any TOOL_IO excerpt matches a PAN pattern",
    "remediation_template": "Mask PANs in {tool} before logging.",
}
control2 = copy.deepcopy(control)
control2.update({"control_id": "SEC-004", "title": "Prompt injection guard", "severity": "high",
                 "required_evidence": ["guard verdict span"]})
control3 = copy.deepcopy(control)
control3["version"] = "2026.04"
library = [control, control2, control3]

annotation = {
    "run_id": run_succeeded["run_id"],
    "engine_type": "rca",
    "schema_version": "1.0.0",
    "name": "rca_primary_label",
    "annotator_kind": "LLM",
    "label": "tool_failure",
    "score": 0.82,
    "explanation_json": json.dumps(rca, separators=(",", ":"), sort_keys=True),
    "target_span_id": SPAN_TOOL,
}
annotation_compliance = {
    "run_id": "run-0192f3a4-8000-7000-8000-000000000001",
    "engine_type": "policy_compliance",
    "schema_version": "1.0.0",
    "name": "policy_verdict",
    "annotator_kind": "CODE",
    "label": "non_compliant",
    "score": None,
    "explanation_json": json.dumps(compliance, separators=(",", ":"), sort_keys=True),
    "target_span_id": None,
}

VALID = {
    "run_record": {"succeeded": run_succeeded, "failed": run_failed, "terminated_budget": run_budget},
    "rca_report": {"tool_failure": rca},
    "compliance_report": {"three_controls": compliance, "ten_controls": compliance10},
    "incident_dossier": {"config_change": dossier, "twenty_events": dossier20},
    "policy_control": {"pii": control},
    "policy_control_library": {"three_controls": library},
    "annotation": {"rca": annotation, "compliance": annotation_compliance},
}

# (kind, file name, base document, mutation)
def setp(path, value):
    def f(d):
        *head, last = path
        for k in head:
            d = d[k]
        d[last] = value
    return f

def delp(path):
    def f(d):
        *head, last = path
        for k in head:
            d = d[k]
        del d[last]
    return f

def seq(*fs):
    def f(d):
        for g in fs:
            g(d)
    return f

def mutate_explanation(base, mut):
    def f(d):
        inner = copy.deepcopy(base)
        mut(inner)
        d["explanation_json"] = json.dumps(inner, separators=(",", ":"), sort_keys=True)
    return f

INVALID = [
    # acceptance 2: invalid enum values
    ("rca_report", "schema.enum--primary_label", rca, setp(["primary_label"], "network_failure")),
    ("rca_report", "schema.enum--evidence_kind", rca, setp(["evidence_refs", 0, "kind"], "LOG")),
    ("run_record", "schema.enum--status", run_succeeded, setp(["status"], "done")),
    ("run_record", "schema.enum--annotator_kind", run_succeeded, setp(["writeback_ref", "annotator_kinds"], ["ROBOT"])),
    ("compliance_report", "schema.enum--pass_fail", compliance, setp(["controls_evaluated", 0, "pass_fail"], "passed")),
    ("compliance_report", "schema.enum--severity", compliance, setp(["controls_evaluated", 0, "severity"], "urgent")),
    ("compliance_report", "schema.enum--overall_verdict", compliance, setp(["overall_verdict"], "mostly_compliant")),
    ("incident_dossier", "schema.enum--change_type", dossier, setp(["suspected_change", "change_type"], "hotfix")),
    ("incident_dossier", "schema.enum--priority", dossier, setp(["recommended_actions", 0, "priority"], "P3")),
    ("incident_dossier", "schema.enum--action_type", dossier, setp(["recommended_actions", 0, "type"], "rollback")),
    ("policy_control", "schema.enum--severity", control, setp(["severity"], "CRITICAL")),
    ("annotation", "schema.enum--engine_type", annotation, setp(["engine_type"], "summarize")),
    ("annotation", "schema.enum--annotator_kind", annotation, setp(["annotator_kind"], "AI")),
    # acceptance 3: missing required evidence fields
    ("rca_report", "schema.required--evidence_refs", rca, delp(["evidence_refs"])),
    ("rca_report", "schema.required--superseded_evidence_array", rca,
     seq(delp(["evidence_refs"]), setp(["evidence"], [{"artifact_id": "tool:" + SPAN_TOOL, "artifact_type": "TOOL_IO", "why": "503"}]))),
    ("rca_report", "schema.required--excerpt_hash", rca, delp(["evidence_refs", 0, "excerpt_hash"])),
    ("compliance_report", "schema.required--evidence", compliance, delp(["controls_evaluated", 1, "evidence"])),
    ("incident_dossier", "schema.required--hypothesis_evidence", dossier, delp(["hypotheses", 0, "evidence"])),
    ("run_record", "schema.required--run_id", run_succeeded, delp(["run_id"])),
    ("annotation", "schema.required--run_id", annotation, delp(["run_id"])),
    ("annotation", "schema.required--name", annotation, delp(["name"])),
    ("annotation", "schema.required--annotator_kind", annotation, delp(["annotator_kind"])),
    ("policy_control", "schema.required--required_evidence", control, delp(["required_evidence"])),
    # shape: types, ranges, formats
    ("rca_report", "schema.maximum--confidence", rca, setp(["confidence"], 1.5)),
    ("rca_report", "schema.minimum--confidence", rca, setp(["confidence"], -0.01)),
    ("rca_report", "schema.type--confidence_bool", rca, setp(["confidence"], True)),
    ("rca_report", "schema.type--confidence_string", rca, setp(["confidence"], "0.8")),
    ("compliance_report", "schema.maximum--overall_confidence", compliance, setp(["overall_confidence"], 2)),
    ("rca_report", "schema.pattern--excerpt_hash", rca, setp(["evidence_refs", 0, "excerpt_hash"], "ABC123")),
    ("rca_report", "schema.pattern--schema_version", rca, setp(["schema_version"], "1.0")),
    ("run_record", "schema.pattern--non_utc_time", run_succeeded, setp(["started_at"], "2026-03-02T11:20:00+01:00")),
    ("run_record", "schema.format--date_time", run_succeeded, setp(["started_at"], "2026-02-30T10:20:00Z")),
    ("incident_dossier", "schema.pattern--non_utc_timeline", dossier, setp(["timeline", 1, "timestamp"], "2026-03-02T05:15:04-05:00")),
    ("run_record", "schema.minimum--negative_usage", run_succeeded, setp(["runtime_ref", "usage", "tool_calls"], -1)),
    ("run_record", "schema.type--retryable", run_failed, setp(["error", "retryable"], "yes")),
    ("annotation", "schema.minLength--empty_name", annotation, setp(["name"], "")),
    ("policy_control_library", "schema.type--not_an_array", library, lambda d: None),
    # canonical ids (acceptance 4: wrong id format)
    ("rca_report", "evidence_ref.ref_format--unknown_prefix", rca, setp(["evidence_refs", 0, "ref"], "toolcall:" + SPAN_TOOL)),
    ("rca_report", "evidence_ref.ref_format--retrieval_negative_position", rca,
     setp(["evidence_refs", 0], dict(RET_REF, ref="retrieval:%s:-1:kb/returns-policy.md" % SPAN_RET))),
    ("rca_report", "evidence_ref.ref_format--retrieval_empty_chunk", rca,
     setp(["evidence_refs", 0], dict(RET_REF, ref="retrieval:%s:3:kb/returns-policy.md:chunk=" % SPAN_RET))),
    ("incident_dossier", "evidence_ref.ref_format--configdiff_uppercase", dossier,
     setp(["suspected_change", "diff_ref", "ref"], "configdiff:" + DIFF.upper())),
    ("rca_report", "evidence_ref.kind_mismatch--tool_ref_as_retrieval", rca, setp(["evidence_refs", 0, "kind"], "RETRIEVAL_CHUNK")),
    ("rca_report", "evidence_ref.kind_mismatch--span_kind_with_tool_ref", rca, setp(["evidence_refs", 1, "ref"], "tool:" + SPAN_TOOL)),
    ("rca_report", "evidence_ref.span_mismatch", rca, setp(["evidence_refs", 0, "ref"], "tool:" + SPAN_MSG)),
    ("compliance_report", "artifact_id.format--short_digest", compliance,
     setp(["controls_evaluated", 0, "evidence", "artifact_ids"], ["compliance:CTRL-001:abc123"])),
    ("incident_dossier", "artifact_id.format--empty_document", dossier,
     setp(["hypotheses", 1, "evidence", "artifact_ids"], ["retrieval:%s:3:" % SPAN_RET])),
    # RunRecord (acceptance 5: required-on-failure)
    ("run_record", "run_record.error_required_on_failure", run_failed, delp(["error"])),
    ("run_record", "run_record.error_required_on_failure--null", run_failed, setp(["error"], None)),
    ("run_record", "run_record.artifact_path_required_on_success", run_succeeded, setp(["output_ref", "artifact_path"], None)),
    ("run_record", "run_record.usage_within_budget--tool_calls", run_succeeded, setp(["runtime_ref", "usage", "tool_calls"], 201)),
    ("run_record", "run_record.usage_within_budget--tokens", run_succeeded, setp(["runtime_ref", "usage", "tokens_in"], 299000)),
    ("run_record", "run_record.usage_within_budget--wall_time", run_succeeded, setp(["completed_at"], "2026-03-02T10:23:00.001Z")),
    ("run_record", "run_record.usage_within_budget--failed_run", run_failed, setp(["runtime_ref", "usage", "iterations"], 41)),
    ("run_record", "run_record.completed_not_before_started", run_succeeded, setp(["completed_at"], "2026-03-02T10:19:59.999Z")),
    ("run_record", "run_record.time_window_order", run_succeeded, setp(["input_ref", "time_window", "start"], "2026-03-02T11:00:00Z")),
    ("run_record", "run_record.artifact_type_matches_run_type", run_succeeded, setp(["output_ref", "artifact_type"], "IncidentDossier")),
    ("run_record", "schema_version.major_mismatch", run_succeeded, setp(["schema_version"], "2.0.0")),
    # RCAReport
    ("rca_report", "rca_report.evidence_refs_nonempty", rca, setp(["evidence_refs"], [])),
    ("rca_report", "schema_version.major_mismatch", rca, setp(["schema_version"], "0.9.0")),
    # ComplianceReport
    ("compliance_report", "compliance_report.control_unique", compliance,
     lambda d: d["controls_evaluated"].append(copy.deepcopy(d["controls_evaluated"][0]))),
    ("compliance_report", "compliance_report.fail_needs_evidence", compliance,
     setp(["controls_evaluated", 1, "evidence"], {"trace_id": TRACE, "span_ids": [], "artifact_ids": [],
                                                  "excerpt_hashes": [h("x")], "evidence_refs": []})),
    ("compliance_report", "compliance_report.insufficient_evidence_needs_missing", compliance10,
     setp(["controls_evaluated", 4, "missing_evidence"], [])),
    ("compliance_report", "compliance_report.missing_evidence_needs_insufficient", compliance,
     setp(["controls_evaluated", 0, "missing_evidence"], ["redaction log"])),
    ("compliance_report", "compliance_report.overall_verdict_consistent--fail_is_non_compliant", compliance,
     setp(["overall_verdict"], "needs_review")),
    ("compliance_report", "compliance_report.overall_verdict_consistent--insufficient_needs_review", compliance10,
     setp(["overall_verdict"], "compliant")),
    ("compliance_report", "compliance_report.overall_verdict_consistent--all_not_applicable", compliance,
     seq(setp(["controls_evaluated"], [finding(3, "not_applicable")]), setp(["overall_verdict"], "compliant"))),
    # IncidentDossier
    ("incident_dossier", "incident_dossier.representative_traces_nonempty", dossier, setp(["representative_traces"], [])),
    ("incident_dossier", "incident_dossier.hypothesis_needs_evidence", dossier,
     setp(["hypotheses", 1, "evidence"], {"trace_ids": [], "span_ids": [], "artifact_ids": [], "evidence_refs": []})),
    ("incident_dossier", "incident_dossier.timeline_sorted", dossier, setp(["timeline", 2, "timestamp"], "2026-03-02T10:00:00Z")),
    # 10:15:04Z sorts after 10:15:04.5Z as a string ('Z' > '.') but is earlier as an instant.
    ("incident_dossier", "incident_dossier.timeline_sorted--string_order_is_not_instant_order", dossier,
     seq(setp(["timeline", 1, "timestamp"], "2026-03-02T10:15:04.5Z"), setp(["timeline", 2, "timestamp"], "2026-03-02T10:15:04Z"))),
    ("incident_dossier", "incident_dossier.diff_ref_required", dossier, delp(["suspected_change", "diff_ref"])),
    ("incident_dossier", "incident_dossier.diff_ref_kind", dossier, setp(["suspected_change", "diff_ref"], TOOL_REF)),
    ("incident_dossier", "schema_version.major_mismatch", dossier, setp(["schema_version"], "2.1.0")),
    # PolicyControl
    ("policy_control", "policy_control.required_evidence_nonempty", control, setp(["required_evidence"], [])),
    ("policy_control_library", "policy_control_library.control_version_unique", library,
     lambda d: d.append(copy.deepcopy(d[0]))),
    ("policy_control_library", "policy_control.required_evidence_nonempty", library, setp([1, "required_evidence"], [])),
    # Annotation
    ("annotation", "annotation.explanation_json--not_json", annotation, setp(["explanation_json"], "tool_failure because 503")),
    ("annotation", "annotation.explanation_json--wrong_contract", annotation,
     setp(["explanation_json"], json.dumps(compliance, separators=(",", ":"), sort_keys=True))),
    ("annotation", "annotation.explanation_json--invalid_report", annotation,
     mutate_explanation(rca, setp(["evidence_refs"], []))),
    ("annotation", "annotation.schema_version_matches_explanation", annotation, setp(["schema_version"], "1.1.0")),
    ("annotation", "schema_version.major_mismatch", annotation, setp(["schema_version"], "3.0.0")),
    # JSON level: a leap second is RFC 3339 but not representable as a Go time.Time
    ("incident_dossier", "json.decode--leap_second", dossier, setp(["timeline", 2, "timestamp"], "2026-03-02T23:59:60Z")),
    ("rca_report", "json.duplicate_key", rca, None),
    ("rca_report", "json.syntax", rca, None),
]

RAW = {
    ("rca_report", "json.duplicate_key"): '{"schema_version":"1.0.0","schema_version":"1.0.0"}\n',
    ("rca_report", "json.syntax"): '{"schema_version": "1.0.0", "trace_id": }\n',
}

def dump(path, doc):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=2, ensure_ascii=False)
        f.write("\n")

def main():
    for sub in ("valid", "invalid"):
        shutil.rmtree(os.path.join(HERE, sub), ignore_errors=True)
    for kind, docs in VALID.items():
        for name, doc in docs.items():
            dump(os.path.join(HERE, "valid", kind, name + ".json"), doc)
    for kind, name, base, mut in INVALID:
        path = os.path.join(HERE, "invalid", kind, name + ".json")
        if (kind, name) in RAW:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "w").write(RAW[(kind, name)])
            continue
        doc = copy.deepcopy(base)
        mut(doc)
        if name == "schema.type--not_an_array":
            doc = control
        dump(path, doc)

main()
