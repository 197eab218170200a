"""How specific is RQ1's mechanism test? A source's signature compared with the failed
attempts of its OWN case (reproductions the test should find) and with those of OTHER tasks
(a match there is a false positive: a failure of the same kind, not this failure).

    python -m symtrace_study mechanism-audit OUTDIR

Every failed attempt of the study (RQ1 replays and reruns, failed repair attempts) is
diagnosed once, with the study's judge, θ and trace-back; its live events are those of
`attempts.live_events`. Rates are over (source, attempt) pairs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import symtrace
from symtrace_study.reproduction import Signature, match_diagnosis, source_signatures


def live_events(bundle: Any) -> set[str]:
    """The attempt's own events: a replay child's live suffix (its final result included),
    every event of a live run."""
    from symtrace.model.events import EventType

    lineage = bundle.lineage or {}
    if "live_events" not in lineage:
        return {e.id for e in bundle.events}
    return set(lineage["live_events"]) | {
        e.id for e in bundle.events if e.type is EventType.FINAL_RESULT}


def audit(outdir: Path, *, signatures_of: Any = None, match: Any = None,
          diagnosis: dict[str, Any] | None = None) -> dict[str, Any]:
    """{"same": [matched, pairs], "cross": [matched, pairs], ...}; *signatures_of* and *match*
    replace the study's own functions (to measure another definition on the same data)."""
    from symtrace.diagnosis import diagnose
    from symtrace_study.report import load_study

    study, frozen, rows = load_study(outdir)
    kwargs = diagnosis if diagnosis is not None else _study_diagnosis(study["config"])
    signatures_of = signatures_of or (lambda b: source_signatures(b, **kwargs))
    match = match or (lambda sigs, bundle, live: match_diagnosis(
        sigs, diagnose(bundle, **kwargs), live) if sigs else None)
    sources: dict[str, tuple[str, list[Signature]]] = {}
    for case in frozen["cases"]:
        path = Path(case["bundle"])
        bundle = symtrace.load_bundle(path if path.is_absolute() else outdir / path)
        sources[case["case"]] = (case["task"], signatures_of(bundle))
    failed = [r for r in rows if r.get("passed") is False and not r.get("diverged")
              and r.get("status") != "error" and r.get("bundle")]
    same, cross = [0, 0], [0, 0]
    per_source: dict[str, dict[str, int]] = {}
    for row in failed:
        bundle = symtrace.load_bundle(outdir / row["bundle"])
        live = live_events(bundle)
        for case_id, (task, sigs) in sources.items():
            if not sigs:
                continue
            if case_id == row["case"]:
                bucket = same
            elif task != row["task"]:
                bucket = cross
            else:
                continue  # the same task in another MAS/seed: neither
            hit = match(sigs, bundle, live) is not None
            bucket[0] += hit
            bucket[1] += 1
            if hit and bucket is cross:
                per_source.setdefault(case_id, {})
                per_source[case_id][row["case"]] = per_source[case_id].get(row["case"], 0) + 1
    return {"same": same, "cross": cross, "attempts": len(failed),
            "sources_with_mechanism": sum(1 for _, s in sources.values() if s),
            "cross_matches_by_source": per_source}


def _study_diagnosis(config: dict[str, Any]) -> dict[str, Any]:
    """The study's θ and trace-back (the judge is not called again: rules only)."""
    from dataclasses import replace

    from symtrace.diagnosis.scoring import ScoringConfig

    theta = config.get("theta")
    scoring = ScoringConfig() if theta is None else replace(ScoringConfig(), theta=theta)
    return {"config": scoring, "trace_back": config.get("trace_back", True)}


def render(result: dict[str, Any]) -> str:
    def rate(pair: list[int]) -> str:
        return f"{pair[0]}/{pair[1]} = {100 * pair[0] / pair[1]:.1f}%" if pair[1] else "n/a"

    return (f"failed attempts: {result['attempts']}; sources with a mechanism: "
            f"{result['sources_with_mechanism']}\n"
            f"own case (reproductions found): {rate(result['same'])}\n"
            f"other tasks (false positives):  {rate(result['cross'])}")
