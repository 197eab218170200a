"""Report sections beyond the paper's main tables: pass@k of the task arms (App. E, eq. 16–17
for every k ≤ budget), RQ1 by prefix length (App. D.3), what RQ1's live attempts were run
with (prompt, model, sampling), and each detector's flag rate on the *passing* sources (a
detector that fires on runs the evaluator accepts is tuned to the wrong thing).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from symtrace_study.config import TASK_ARMS

# Prefix length = events of the source served from the bundle before the replay goes live.
PREFIX_BUCKETS = ((0, 4), (5, 9), (10, 19), (20, None))


def pass_at_k(cases: list[dict[str, Any]], rows: list[dict[str, Any]], methods: Sequence[str],
              attempts: int) -> dict[str, dict[str, Any]]:
    """arm → {"k": {"passed": p, "n": n}} for k = 1..attempts: a case passes at k when one of
    its first k attempts passed; it has no outcome at k when one of those ended in a system
    error or the run stopped before attempt k without a pass (incomplete)."""
    by: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
    for r in rows:
        if r["phase"] == "repair" and r["arm"] in TASK_ARMS:
            by.setdefault((r["arm"], r["case"]), {})[int(r["attempt"])] = r
    out: dict[str, dict[str, Any]] = {}
    for arm in (m for m in methods if m in TASK_ARMS):
        table = {}
        for k in range(1, attempts + 1):
            passed = n = 0
            for case in cases:
                seen = by.get((arm, case["case"]), {})
                outcome = _outcome_at(seen, k)
                if outcome is not None:
                    n += 1
                    passed += outcome
            table[str(k)] = {"passed": passed, "n": n, "rate": passed / n if n else None}
        out[arm] = table
    return out


def _outcome_at(attempts: dict[int, dict[str, Any]], k: int) -> bool | None:
    for a in range(1, k + 1):
        row = attempts.get(a)
        if row is None:
            return None  # stopped before a (a pass ends the arm earlier: returned above)
        if row["status"] == "error":
            return None
        if row["status"] == "passed":
            return True
    return False


def prefix_bucket(events: int) -> str:
    for low, high in PREFIX_BUCKETS:
        if high is None or events <= high:
            return f"{low}+" if high is None else f"{low}–{high}"
    raise AssertionError("unreachable")


def rq1_by_prefix(cases: list[dict[str, Any]], rows: list[dict[str, Any]]
                  ) -> dict[str, dict[str, Any]]:
    """Per prefix-length bucket of a case (its replay rows' `prefix_events`): cases and the
    share of reproducing attempts (rep_1) of replay and of rerun."""
    ids = {c["case"] for c in cases}
    prefix: dict[str, int] = {}
    for r in rows:
        if r["phase"] == "rq1" and r["arm"] == "replay" and r["case"] in ids and isinstance(
                r.get("prefix_events"), int):
            prefix[r["case"]] = r["prefix_events"]
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        if r["phase"] != "rq1" or r["case"] not in prefix or r["status"] == "error":
            continue
        bucket = out.setdefault(prefix_bucket(prefix[r["case"]]), {
            "cases": set(), "replay": [0, 0], "rerun": [0, 0]})
        bucket["cases"].add(r["case"])
        bucket[r["arm"]][0] += r["status"] == "reproduced"
        bucket[r["arm"]][1] += 1
    order = [prefix_bucket(low) for low, _ in PREFIX_BUCKETS]
    return {name: {**out[name], "cases": len(out[name]["cases"])}
            for name in order if name in out}


def rq1_settings(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What the live part of RQ1's attempts was run with, read from the rows' `llm` summaries:
    models requested/served and the distinct sampling parameters sent."""
    requested: set[str] = set()
    served: set[str] = set()
    sampling: list[dict[str, Any]] = []
    for r in rows:
        llm = r.get("llm") or {}
        if r["phase"] != "rq1" or not llm:
            continue
        requested |= set(llm.get("models_requested", []))
        served |= set(llm.get("models_served", []))
        for params in llm.get("sampling", []):
            if params not in sampling:
                sampling.append(params)
    return {"models_requested": sorted(requested), "models_served": sorted(served),
            "sampling": sampling}


def detector_flag_rates(outdir: Path, collect_rows: list[dict[str, Any]],
                        diagnosis: dict[str, Any] | None = None) -> dict[str, Any]:
    """Share of passing sources on which each detector rule fires (confirmed by the rules;
    no judge is called at report time), per MAS and pooled."""
    import symtrace
    from symtrace.diagnosis import diagnose

    passing = [r for r in collect_rows if r.get("status") == "passed" and r.get("bundle")]
    per_mas: dict[str, dict[str, Any]] = {}
    for row in sorted(passing, key=lambda r: r["case"]):
        try:
            found = diagnose(symtrace.load_bundle(outdir / row["bundle"]), **(diagnosis or {}))
        except Exception:  # noqa: BLE001 -- an unreadable bundle is counted, not fatal
            found = None
        rules = {e.rule for n in found.nodes for e in n.confirmed_evidence} if found else set()
        for key in (row["mas"], "all"):
            entry = per_mas.setdefault(key, {"sources": 0, "flagged": 0, "rules": {},
                                             "unreadable": 0})
            if found is None:
                entry["unreadable"] += 1
                continue
            entry["sources"] += 1
            entry["flagged"] += bool(rules)
            for rule in rules:
                entry["rules"][rule] = entry["rules"].get(rule, 0) + 1
    for entry in per_mas.values():
        entry["rules"] = dict(sorted(entry["rules"].items()))
    return per_mas
