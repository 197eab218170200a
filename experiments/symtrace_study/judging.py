"""The study's judge: built once from the config, checked before any attempt, and its
verdicts kept in the rows.

One diagnosis for every phase: collection (the case's target and categories), RQ1 (the source
mechanism and the attempts' own) and the suspicious arm all diagnose with the same judge (or
none), the same θ and the same trace-back setting (`diagnose_kwargs`), so RQ1's targets and the
reference arm's anchors are the same ones.
"""

from __future__ import annotations

import os
from typing import Any

from symtrace.diagnosis.judge import JudgeRequest
from symtrace.diagnosis.symptoms import Category
from symtrace_study.config import StudyConfig
from symtrace_study.errors import JudgeUnavailable


def make_judge(config: StudyConfig) -> Any:
    if config.judge is None:
        return None
    from symtrace.diagnosis.judge import OpenAIJudge

    key = os.environ.get(config.judge.api_key_env) if config.judge.api_key_env else None
    return OpenAIJudge(config.judge.base_url, config.judge.model, api_key=key)


def diagnose_kwargs(config: StudyConfig, judge: Any) -> dict[str, Any]:
    """What every diagnosis of the study is run with."""
    return {"judge": judge, "config": config.scoring(), "trace_back": config.trace_back}


def preflight(config: StudyConfig) -> None:
    """One request to each configured judge before anything runs: an unreachable or
    misconfigured judge is a typed error now, not a system error on every judged attempt (or
    a stop after hours of RQ1 attempts) later."""
    if config.rq1_judge is not None and config.rq1_k:
        from symtrace_study.repro_judge import ReproductionJudge, preflight_request

        ReproductionJudge(config.rq1_judge)(preflight_request())  # typed errors, both ways
    judge = make_judge(config)
    if judge is None:
        return
    request = JudgeRequest(
        task={"text": "Pre-flight check of the study's judge: confirm nothing."},
        node={"id": "preflight", "type": "agent_action", "agent": None, "text": "hello"},
        preceding=(), proposed=(Category("C1"),), evidence=())
    try:
        judge(request)
    except Exception as exc:
        raise JudgeUnavailable(
            f"the judge {config.judge.model} at {config.judge.base_url} did not answer a "
            f"pre-flight request: {type(exc).__name__}: {exc}") from exc


def verdicts(diagnosis: Any) -> list[dict[str, Any]]:
    """The judge's verdicts and rationales ξ per judged node (audit; never part of Δ)."""
    return [{"node": node.view.id, **node.verdict.to_json()}
            for node in diagnosis.nodes if getattr(node, "verdict", None) is not None]
