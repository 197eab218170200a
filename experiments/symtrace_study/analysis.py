"""From result rows to numbers: per-case outcomes, repair rates, paired tests, RQ1 rep_k.

The case (one source failure) is the inferential unit: a method gets one binary outcome per
case. A case whose attempt ended in a system error has no outcome for that method; it is
counted apart and left out of that method's rate. In a Holm family every comparison uses the
same cases — those where every method of the family has an outcome — so n does not vary
inside a family (the cases dropped for system errors are counted). A program crash is a
non-repair (status `failed`) unless the study says `crashes: system_error`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from symtrace_study.config import NODE_ARMS, TASK_ARMS
from symtrace_study.stats import holm, mcnemar_exact, paired_bootstrap_difference, rep_k, wilson

ALL = "all"
CRASH_KINDS = ("program_crash", "no_final_result")
# RQ2 compares the feedback baselines with the unguided rerun; RQ3 the reference with the rest.
RQ2_PAIRS = (("self_reflection", "rerun"), ("critic", "rerun"))


def case_outcome(rows: Sequence[dict[str, Any]]) -> bool | None:
    """Repaired if any permitted attempt passed; None (no outcome) on a system error or when
    the attempts are incomplete."""
    if any(r["status"] == "passed" for r in rows):
        return True
    if not rows or any(r["status"] == "error" for r in rows):
        return None
    return False


def outcomes(cases: list[dict[str, Any]], rows: list[dict[str, Any]], methods: Sequence[str],
             attempts: int) -> dict[str, dict[str, bool | None]]:
    """method → case → outcome (True/False/None)."""
    by: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if r["phase"] == "repair":
            by.setdefault((r["arm"], r["case"]), []).append(r)
    out: dict[str, dict[str, bool | None]] = {}
    for m in methods:
        out[m] = {}
        for c in cases:
            attempts_rows = sorted(by.get((m, c["case"]), []), key=lambda r: r["attempt"])
            value = case_outcome(attempts_rows)
            last = attempts_rows[-1] if attempts_rows else None
            if (value is False and m in TASK_ARMS and len(attempts_rows) < attempts
                    and last is not None and last["status"] == "failed"):
                value = None  # the run stopped before the budget was used up
            out[m][c["case"]] = value
    return out


def method_table(cases: list[dict[str, Any]], rows: list[dict[str, Any]], methods: Sequence[str],
                 attempts: int) -> dict[str, dict[str, Any]]:
    result = outcomes(cases, rows, methods, attempts)
    ids = {c["case"] for c in cases}
    table = {}
    for m in methods:
        values = [v for v in result[m].values() if v is not None]
        repaired = sum(values)
        calls = sum(r.get("api_calls") or 0 for r in rows
                    if r["phase"] == "repair" and r["arm"] == m and r["case"] in ids)
        ci = wilson(repaired, len(values)) if values else None
        table[m] = {
            "level": "node" if m in NODE_ARMS else "task",
            "budget": 1 if m in NODE_ARMS else attempts,
            "n": len(values), "repaired": repaired,
            "errors": sum(1 for v in result[m].values() if v is None),
            "abstained": sum(1 for r in rows if r["phase"] == "repair" and r["arm"] == m
                             and r["case"] in ids and r.get("intervened") is False),
            "crashed": sum(1 for r in rows if r["phase"] == "repair" and r["arm"] == m
                           and r["case"] in ids and r["status"] != "error"
                           and r.get("error_kind") in CRASH_KINDS),
            "rate": ci.estimate if ci else None,
            "wilson95": [ci.low, ci.high] if ci else None,
            "api_calls": calls,
            "calls_per_repair": calls / repaired if repaired else None,
        }
    return table


def paired(cases: list[dict[str, Any]], rows: list[dict[str, Any]],
           pairs: Sequence[tuple[str, str]], attempts: int) -> list[dict[str, Any]]:
    """One Holm family: each (a, b) on the same cases, those where every method of the
    family has an outcome."""
    methods = sorted({m for pair in pairs for m in pair})
    result = outcomes(cases, rows, methods, attempts)
    common = [c["case"] for c in cases if all(result[m][c["case"]] is not None for m in methods)]
    out = []
    for a, b in pairs:
        both = common
        xa = [bool(result[a][c]) for c in both]
        xb = [bool(result[b][c]) for c in both]
        entry: dict[str, Any] = {"a": a, "b": b, "n": len(both),
                                 "dropped": len(cases) - len(both),
                                 "repaired_a": sum(xa), "repaired_b": sum(xb),
                                 "n10": sum(1 for x, y in zip(xa, xb, strict=True) if x and not y),
                                 "n01": sum(1 for x, y in zip(xa, xb, strict=True) if y and not x)}
        if both:
            delta = paired_bootstrap_difference(xa, xb)
            entry.update(delta_pp=delta.estimate, ci95=[delta.low, delta.high],
                         p=mcnemar_exact(xa, xb))
        else:
            entry.update(delta_pp=None, ci95=None, p=None)
        out.append(entry)
    tested = [e for e in out if e["p"] is not None]
    for e, adjusted in zip(tested, holm([e["p"] for e in tested]), strict=True):
        e["p_holm"] = adjusted
    for e in out:
        e.setdefault("p_holm", None)
    return out


def rq1(cases: list[dict[str, Any]], rows: list[dict[str, Any]], k_max: int) -> dict[str, Any]:
    """rep_k (k=1..K) of strict replay and of live rerun on the same failures, and the exact
    McNemar test on the paired per-case rep_K outcomes (all K attempts reproduce)."""
    if k_max < 1:
        return {"enabled": False}
    per: dict[str, dict[str, list[bool]]] = {"replay": {}, "rerun": {}}
    errors = {"replay": 0, "rerun": 0}
    ids = {c["case"] for c in cases}
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if r["phase"] == "rq1" and r["case"] in ids:
            grouped.setdefault((r["arm"], r["case"]), []).append(r)
    for (arm, case), items in grouped.items():
        if len(items) < k_max or any(r["status"] == "error" for r in items):
            errors[arm] += 1
            continue
        per[arm][case] = [r["status"] == "reproduced" for r in
                          sorted(items, key=lambda r: r["attempt"])]
    table: dict[str, Any] = {"enabled": True, "k": k_max, "errors": errors, "methods": {}}
    replays = [r for items in grouped.values() for r in items if r["arm"] == "replay"]
    table["replay_notes"] = {
        "diverged": sum(1 for r in replays if r.get("diverged")),
        "target_from_last_decision": len({r["case"] for r in replays
                                          if r.get("target_from") == "last_decision"}),
        "reason_fallback": len({r["case"] for items in grouped.values() for r in items
                                if str(r.get("equivalence", "")).startswith("reason")}),
        "crashed": sum(1 for items in grouped.values() for r in items
                       if r.get("error_kind") in CRASH_KINDS and r["status"] != "error"),
    }
    for arm, data in per.items():
        table["methods"][arm] = {
            "n": len(data),
            "rep": {str(k): (rep_k(list(data.values()), k) if data else None)
                    for k in range(1, k_max + 1)},
        }
    both = sorted(set(per["replay"]) & set(per["rerun"]))
    a = [all(per["replay"][c]) for c in both]
    b = [all(per["rerun"][c]) for c in both]
    table["paired"] = {"n": len(both), "n10": sum(x and not y for x, y in zip(a, b, strict=True)),
                       "n01": sum(y and not x for x, y in zip(a, b, strict=True)),
                       "p": mcnemar_exact(a, b) if both else None}
    return table


def by_category(cases: list[dict[str, Any]], rows: list[dict[str, Any]], methods: Sequence[str],
                attempts: int) -> dict[str, dict[str, Any]]:
    """Repair counts per symptom category of the source (a case counts in each of its
    categories; "none" when the diagnosis found no eligible anchor)."""
    result = outcomes(cases, rows, methods, attempts)
    out: dict[str, dict[str, Any]] = {}
    for c in cases:
        for cat in c.get("categories") or ["none"]:
            entry = out.setdefault(cat, {"cases": 0, **{m: [0, 0] for m in methods}})
            entry["cases"] += 1
            for m in methods:
                v = result[m][c["case"]]
                if v is not None:
                    entry[m][0] += int(v)
                    entry[m][1] += 1
    return dict(sorted(out.items()))


def summarise(study: dict[str, Any], frozen: dict[str, Any], rows: list[dict[str, Any]]
              ) -> dict[str, Any]:
    config = study["config"]
    methods = list(config["methods"])
    attempts = int(config["attempts"])
    reference = config["reference"]
    families = sorted({c["mas"] for c in frozen["cases"]})
    summary: dict[str, Any] = {"backend": config["backend"], "name": config["name"],
                               "methods": methods, "reference": reference,
                               "attempts": attempts, "excluded": frozen["excluded"],
                               "collect_errors": frozen["errors"], "families": {},
                               "config": config, "cases": case_rows(frozen["cases"], rows,
                                                                    methods, attempts)}
    for family in [*families, ALL]:
        cases = [c for c in frozen["cases"] if family in (ALL, c["mas"])]
        rq3 = [(reference, m) for m in methods if m != reference]
        rq2 = [p for p in RQ2_PAIRS if p[0] in methods and p[1] in methods]
        summary["families"][family] = {
            "cases": len(cases),
            "methods": method_table(cases, rows, methods, attempts),
            "rq3": paired(cases, rows, rq3, attempts),
            "rq2": paired(cases, rows, rq2, attempts),
            "rq1": rq1(cases, rows, int(config["rq1_k"])),
            "categories": by_category(cases, rows, methods, attempts),
        }
    summary["system_errors"] = sum(1 for r in rows if r["status"] == "error") + len(
        frozen["errors"])
    kinds: dict[str, int] = {}
    for r in rows:
        if r.get("error_kind"):
            key = f"{r['error_kind']} ({'system error' if r['status'] == 'error' else 'counted'})"
            kinds[key] = kinds.get(key, 0) + 1
    summary["error_kinds"] = dict(sorted(kinds.items()))
    summary["infra_retries"] = sum(max(0, int(r.get("tries", 1)) - 1) for r in rows)
    return summary


def case_rows(cases: list[dict[str, Any]], rows: list[dict[str, Any]], methods: Sequence[str],
              attempts: int) -> list[dict[str, Any]]:
    """One row per case for the report: the source, RQ1 counts and each arm's outcome with
    the bundle of its deciding attempt (the passing one, else the last)."""
    result = outcomes(cases, rows, methods, attempts)
    by: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        by.setdefault((r["case"], r["phase"], r["arm"]), []).append(r)
    out = []
    for c in cases:
        entry: dict[str, Any] = {"case": c["case"], "mas": c["mas"], "task": c["task"],
                                 "bundle": c.get("bundle"), "categories": c.get("categories"),
                                 "target": c.get("target"), "reason": c.get("reason"),
                                 "rq1": {}, "arms": {}}
        for arm in ("replay", "rerun"):
            items = by.get((c["case"], "rq1", arm), [])
            entry["rq1"][arm] = [sum(r["status"] == "reproduced" for r in items), len(items)]
        for m in methods:
            items = sorted(by.get((c["case"], "repair", m), []), key=lambda r: r["attempt"])
            decisive = next((r for r in items if r["status"] == "passed"),
                            items[-1] if items else None)
            entry["arms"][m] = {"outcome": result[m][c["case"]],
                                "attempts": len(items),
                                "bundle": decisive.get("bundle") if decisive else None,
                                "error_kind": decisive.get("error_kind") if decisive else None}
        out.append(entry)
    return out
