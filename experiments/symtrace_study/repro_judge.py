"""RQ1's optional method-blinded LLM judge of reproduction equivalence (App. D.1).

The rule-based mechanism test (reproduction.py) decides every RQ1 row. With `rq1.judge`
configured, the study also asks an LLM, for every RQ1 attempt the evaluator rejected, whether
it failed *the same way* as the source, and reports how often the two agree.

Blinding: the judge sees the task (evaluator information removed), the source failure (its
answer, evaluator reason, categories and mechanism: category, rules, role, evidence quotes and
canonical facets) and the attempt's evidence, built the same way for a replay and a rerun:
its answer, evaluator reason and the symptoms its own diagnosis finds on the events it produced
itself (`reproduction.live_events`: a replay's served prefix is the source's record, not the
attempt's). Never the method, the arm, the bundle path, the seed, the prefix length or an
event position; attempts are asked in an order given by their request's digest, so replays
and reruns are interleaved. A replay and a rerun with the same evidence send byte-identical
requests (tested).

Verdicts are stored in `rq1_judge.jsonl` (canonical JSON, one per line, with the rationale),
keyed by attempt, bundle digest and judge (base URL, model): a stored verdict is never asked
again, a changed judge asks afresh. Attempts the evaluator accepted and replays whose prefix
diverged are not asked: they are no reproduction for either check.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

import symtrace
from symtrace.diagnosis import diagnose, parse_task
from symtrace.diagnosis.errors import JudgeError
from symtrace.diagnosis.judge import _first_object, chat_completion
from symtrace.diagnosis.symptoms import quote
from symtrace.model.canonical import canonical_bytes
from symtrace_study.benchmark import task_index
from symtrace_study.config import JudgeSpec, StudyConfig
from symtrace_study.errors import JudgeReplyMalformed, JudgeUnavailable
from symtrace_study.reproduction import evidence_facets, live_events
from symtrace_study.results import ResultLog

JUDGE_LOG = "rq1_judge.jsonl"
SYMPTOM_LIMIT = 12  # live symptoms shown per attempt (in observed order)
QUOTE_LIMIT = 300
SYSTEM_PROMPT = (
    "You compare two runs of the same multi-agent system on the same task. The SOURCE run "
    "failed; the ATTEMPT is a later run that the evaluator also rejected. Decide whether the "
    "attempt reproduces the source's failure: the same failure mechanism (the same kind of "
    "mistake, by the same role, on the same case-specific content: the same failing action or "
    "argument, the same wrong claim, the same recorded fault), not merely any failure. "
    "Answer with one JSON object and nothing else: "
    '{"reproduced": true or false, "rationale": "one or two sentences"}.')


@dataclass(frozen=True)
class ReproductionVerdict:
    reproduced: bool
    rationale: str


def parse_reply(text: str) -> ReproductionVerdict:
    """The judge's JSON object; anything else is JudgeReplyMalformed (never a default)."""
    data = _first_object(text)
    shown = quote(text, 200)
    if data is None:
        raise JudgeReplyMalformed(f"the RQ1 judge's reply has no JSON object: {shown!r}")
    if not isinstance(data.get("reproduced"), bool):
        raise JudgeReplyMalformed(
            f"the RQ1 judge's reply lacks a boolean 'reproduced': {shown!r}")
    rationale = data.get("rationale")
    if not isinstance(rationale, str) or not rationale.strip():
        raise JudgeReplyMalformed(f"the RQ1 judge's reply lacks a 'rationale': {shown!r}")
    return ReproductionVerdict(data["reproduced"], rationale.strip())


class ReproductionJudge:
    """The judge at an OpenAI-compatible endpoint (temperature 0)."""

    def __init__(self, spec: JudgeSpec, *, client: httpx.Client | None = None,
                 timeout: float = 120.0) -> None:
        self.spec = spec
        self.api_key = os.environ.get(spec.api_key_env) if spec.api_key_env else None
        self.client = client or httpx.Client()
        self.timeout = timeout

    def __call__(self, request: dict[str, Any]) -> ReproductionVerdict:
        try:
            text = chat_completion(self.client, self.spec.base_url, self.spec.model,
                                   SYSTEM_PROMPT, canonical_bytes(request).decode(),
                                   api_key=self.api_key, timeout=self.timeout)
        except JudgeError as exc:
            raise JudgeUnavailable(f"the RQ1 judge {self.spec.model}: {exc}") from exc
        return parse_reply(text)


def identity(spec: JudgeSpec) -> dict[str, str]:
    return {"base_url": spec.base_url, "model": spec.model}


def judged(row: dict[str, Any]) -> bool:
    """An RQ1 attempt the judge is asked about: it ran to an answer the evaluator rejected."""
    return (row["phase"] == "rq1" and row["status"] != "error" and not row.get("diverged")
            and row.get("passed") is False)


def _key(row: dict[str, Any], judge: dict[str, Any]) -> tuple[Any, ...]:
    return (row["case"], row["arm"], int(row["attempt"]), row.get("bundle_digest"),
            judge["base_url"], judge["model"])


def verdict_log(out: Path) -> ResultLog:
    return ResultLog(out / JUDGE_LOG, key=lambda v: _key(v, v["judge"]))


def source_failure(case: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    """The source failure as the judge sees it (the same for every attempt of the case)."""
    mechanism = [{k: v for k, v in sig.items() if k != "event"}
                 for sig in row.get("signature") or []]
    return {"final_answer": case.get("answer"), "evaluator_reason": case.get("reason"),
            "categories": case.get("categories") or [], "mechanism": mechanism}


def attempt_evidence(bundle: Any, row: dict[str, Any], **diagnosis: Any) -> dict[str, Any]:
    """What the attempt did, from its own live events only, whatever the method."""
    live = live_events(bundle)
    found = diagnose(bundle, **diagnosis)
    symptoms = []
    for node in found.nodes:
        if node.view.id not in live:
            continue
        for item in node.confirmed_evidence:
            symptoms.append({
                "category": item.category.value if item.category else None, "rule": item.rule,
                "role": {"type": node.view.type.value, "agent": node.view.agent},
                "quote": quote(item.quote, QUOTE_LIMIT),
                "facets": sorted(evidence_facets(item, found.context, live))})
    return {"final_answer": row.get("answer"), "evaluator_reason": row.get("reason"),
            "symptoms": symptoms[:SYMPTOM_LIMIT]}


def blinded_request(task: dict[str, Any], source: dict[str, Any], attempt: dict[str, Any]
                    ) -> dict[str, Any]:
    return {"task": task, "source_failure": source, "attempt": attempt}


def judge_reproductions(config: StudyConfig, rows: Iterable[dict[str, Any]],
                        cases: Iterable[dict[str, Any]], diagnosis: dict[str, Any], *,
                        judge: Callable[[dict[str, Any]], ReproductionVerdict] | None = None,
                        progress: Callable[[int, int], None] | None = None) -> int:
    """Ask the judge about every judged RQ1 attempt without a stored verdict; returns how many
    were asked. Each verdict is appended as it comes (an interruption loses none)."""
    assert config.rq1_judge is not None
    who = identity(config.rq1_judge)
    log = verdict_log(config.out)
    stored = log.load()
    todo = [r for r in rows if judged(r) and _key(r, who) not in stored]
    if not todo:
        return 0
    by_case = {c["case"]: c for c in cases}
    benchmark = config.load_benchmark()
    tasks = task_index(benchmark)
    asks = []
    for row in todo:
        spec = parse_task({**tasks[row["task"]].to_json(), "benchmark": benchmark.name})
        task = {"text": spec.text, "constraints": list(spec.constraints)}
        bundle = symtrace.load_bundle(config.out / row["bundle"])
        request = blinded_request(task, source_failure(by_case[row["case"]], row),
                                  attempt_evidence(bundle, row, **diagnosis))
        digest = "sha256:" + hashlib.sha256(canonical_bytes(request)).hexdigest()
        asks.append((digest, row, request))
    ask = judge or ReproductionJudge(config.rq1_judge)
    for done, (digest, row, request) in enumerate(sorted(asks, key=lambda a: (a[0], _key(
            a[1], who))), 1):
        verdict = ask(request)
        log.append({"case": row["case"], "arm": row["arm"], "attempt": int(row["attempt"]),
                    "bundle_digest": row.get("bundle_digest"), "judge": who,
                    "request_digest": digest, "reproduced": verdict.reproduced,
                    "rationale": verdict.rationale})
        if progress is not None:
            progress(done, len(asks))
    return len(asks)


def preflight_request() -> dict[str, Any]:
    """A request of the real shape with nothing in it (the study's pre-flight)."""
    return blinded_request({"text": "Pre-flight check of the RQ1 judge: answer anything."},
                           {"final_answer": None, "evaluator_reason": "none",
                            "categories": [], "mechanism": []},
                           {"final_answer": None, "evaluator_reason": "none", "symptoms": []})


def agreement(rows: Iterable[dict[str, Any]], verdicts: Iterable[dict[str, Any]],
              spec: dict[str, Any]) -> dict[str, Any]:
    """The judge beside the rule-based check, per method and pooled: both / rule only / judge
    only / neither, raw agreement and Cohen's κ. Attempts the judge is not asked about are
    no reproduction for both; judged attempts still without a verdict are counted apart."""
    who = {"base_url": spec["base_url"], "model": spec["model"]}
    by_key = {_key(v, v["judge"]): v for v in verdicts if v["judge"] == who}
    tables: dict[str, dict[str, Any]] = {}
    disagreements = []
    for row in sorted(rows, key=lambda r: (r["case"], r["arm"], int(r["attempt"]))):
        if row["phase"] != "rq1" or row["status"] == "error":
            continue
        for method in (row["arm"], "all"):
            tables.setdefault(method, {"both": 0, "rule_only": 0, "judge_only": 0,
                                       "neither": 0, "unjudged": 0})
        rule = row["status"] == "reproduced"
        verdict = None
        if judged(row):
            verdict = by_key.get(_key(row, who))
            if verdict is None:
                for method in (row["arm"], "all"):
                    tables[method]["unjudged"] += 1
                continue
            judge = verdict["reproduced"]
        else:
            judge = False
        cell = ("both" if rule and judge else "rule_only" if rule else
                "judge_only" if judge else "neither")
        for method in (row["arm"], "all"):
            tables[method][cell] += 1
        if rule != judge:
            disagreements.append({"case": row["case"], "arm": row["arm"],
                                  "attempt": int(row["attempt"]), "rule": rule,
                                  "judge": judge,
                                  "rationale": verdict["rationale"] if verdict else None})
    for table in tables.values():
        table.update(_agreement_stats(table))
    return {"judge": who, "methods": tables, "disagreements": disagreements}


def _agreement_stats(t: dict[str, int]) -> dict[str, Any]:
    n = t["both"] + t["rule_only"] + t["judge_only"] + t["neither"]
    if n == 0:
        return {"n": 0, "agreement": None, "kappa": None}
    observed = (t["both"] + t["neither"]) / n
    rule_yes = (t["both"] + t["rule_only"]) / n
    judge_yes = (t["both"] + t["judge_only"]) / n
    chance = rule_yes * judge_yes + (1 - rule_yes) * (1 - judge_yes)
    kappa = None if chance >= 1 else round((observed - chance) / (1 - chance), 6)
    return {"n": n, "agreement": round(observed, 6), "kappa": kappa,
            "rule_rate": round(rule_yes, 6), "judge_rate": round(judge_yes, 6)}
