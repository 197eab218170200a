"""Diagnosis and repair: C1–C4 symptom detection, repairability-aware anchor selection and
repair guidance (the Suspicious-Node Intervention of the paper, App. F). See docs/diagnosis.md.

    diagnosis = diagnose(load_bundle("runs/failed"))      # rules → (judge) → scores → anchor
    choice = select_anchor(diagnosis)                     # Algorithm 4, or "random"/"last"
    delta = build_guidance(choice)                        # Δ from categories + rule evidence
    repair("runs/failed", out="runs/repaired")            # the same, then one selective replay
    attribute("runs/failed", k=8)                         # the decisive step, by intervention
"""

from symtrace.diagnosis.anchors import AnchorChoice, AnchorPolicy, Boundary
from symtrace.diagnosis.attribution import Attribution, AttributionPlan, plan_attribution
from symtrace.diagnosis.attribution_run import (
    ExitCodeOutcome,
    FinalMatchOutcome,
    Outcome,
    attribute,
)
from symtrace.diagnosis.detectors import evidence_at
from symtrace.diagnosis.errors import (
    DiagnosisConfigError,
    DiagnosisError,
    JudgeError,
    LabelsError,
    NoEligibleAnchor,
    RepairUnavailable,
    TemplateError,
    TraceImportError,
)
from symtrace.diagnosis.evaluate import EvalReport, evaluate, load_labels
from symtrace.diagnosis.guidance_text import build_guidance, build_task_prompt
from symtrace.diagnosis.importers import ImportFormat, import_trace, load_source, trace_from_data
from symtrace.diagnosis.judge import Judge, JudgeRequest, JudgeVerdict, OpenAIJudge
from symtrace.diagnosis.origin import trace_origin
from symtrace.diagnosis.pipeline import Diagnosis, NodeDiagnosis, diagnose, select_anchor
from symtrace.diagnosis.repair import RepairPlan, RepairResult, plan_repair, repair
from symtrace.diagnosis.rules import (
    DEFAULT_RULES,
    Detector,
    NodeSymptoms,
    Rule,
    detect_symptoms,
    without,
)
from symtrace.diagnosis.scoring import Features, Scores, ScoringConfig, score
from symtrace.diagnosis.symptoms import Category, Evidence, Scope
from symtrace.diagnosis.task import TaskSpec, parse_task, strip_evaluator_info
from symtrace.diagnosis.templates import Templates, default_templates, load_templates
from symtrace.diagnosis.view import NodeView, TraceContext, build_context

DiagnosisConfig = ScoringConfig  # the name the issue uses

__all__ = [
    "DEFAULT_RULES",
    "AnchorChoice",
    "AnchorPolicy",
    "Attribution",
    "AttributionPlan",
    "Boundary",
    "Category",
    "Detector",
    "Diagnosis",
    "DiagnosisConfig",
    "DiagnosisConfigError",
    "DiagnosisError",
    "EvalReport",
    "Evidence",
    "ExitCodeOutcome",
    "Features",
    "FinalMatchOutcome",
    "ImportFormat",
    "Judge",
    "JudgeError",
    "JudgeRequest",
    "JudgeVerdict",
    "LabelsError",
    "NoEligibleAnchor",
    "NodeDiagnosis",
    "NodeSymptoms",
    "NodeView",
    "OpenAIJudge",
    "Outcome",
    "RepairPlan",
    "RepairResult",
    "RepairUnavailable",
    "Rule",
    "Scope",
    "Scores",
    "ScoringConfig",
    "TaskSpec",
    "TemplateError",
    "Templates",
    "TraceContext",
    "TraceImportError",
    "attribute",
    "build_context",
    "build_guidance",
    "build_task_prompt",
    "default_templates",
    "detect_symptoms",
    "diagnose",
    "evaluate",
    "evidence_at",
    "import_trace",
    "load_labels",
    "load_source",
    "load_templates",
    "parse_task",
    "plan_attribution",
    "plan_repair",
    "repair",
    "score",
    "select_anchor",
    "strip_evaluator_info",
    "trace_from_data",
    "trace_origin",
    "without",
]
