"""The public surface of symtrace.diagnosis is pinned: adding or removing a name is a decision."""

from __future__ import annotations

import symtrace.diagnosis as diagnosis

EXPECTED = {
    "DEFAULT_RULES", "AnchorChoice", "AnchorPolicy", "Boundary", "Category", "Detector",
    "Diagnosis", "DiagnosisConfig", "DiagnosisConfigError", "DiagnosisError", "Evidence",
    "Features", "ImportFormat", "Judge", "JudgeError", "JudgeRequest", "JudgeVerdict",
    "NoEligibleAnchor", "NodeDiagnosis", "NodeSymptoms", "NodeView", "OpenAIJudge",
    "RepairPlan", "RepairResult", "RepairUnavailable", "Rule", "Scope", "Scores",
    "ScoringConfig", "TaskSpec", "TemplateError", "Templates", "TraceContext",
    "TraceImportError", "build_context", "build_guidance", "build_task_prompt",
    "default_templates", "detect_symptoms", "diagnose", "evidence_at", "import_trace",
    "load_source", "load_templates", "parse_task", "plan_repair", "repair", "score",
    "select_anchor", "strip_evaluator_info", "trace_from_data", "without",
    # issue 10: the --eval evaluation and the trace-back are public
    "EvalReport", "LabelsError", "evaluate", "load_labels", "trace_origin",
    # issue 37: counterfactual attribution
    "Attribution", "AttributionPlan", "ExitCodeOutcome", "FinalMatchOutcome", "Outcome",
    "attribute", "plan_attribution",
}  # fmt: skip


def test_all_is_pinned():
    assert set(diagnosis.__all__) == EXPECTED
    assert all(hasattr(diagnosis, name) for name in diagnosis.__all__)


def test_errors_join_the_project_tree():
    from symtrace.errors import AnchorError, SymtraceError

    for name in (
        "DiagnosisError",
        "TraceImportError",
        "TemplateError",
        "JudgeError",
        "RepairUnavailable",
        "DiagnosisConfigError",
        "LabelsError",
    ):
        assert issubclass(getattr(diagnosis, name), SymtraceError)
    assert issubclass(diagnosis.TraceImportError, ValueError)
    assert issubclass(diagnosis.NoEligibleAnchor, AnchorError)
