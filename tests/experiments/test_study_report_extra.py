"""The report's added sections, from rows: pass@k of the task arms, RQ1 by prefix length,
RQ1's live model settings, and the detectors' flag rates on passing sources."""

from __future__ import annotations

from symtrace_study.analysis_extra import (
    detector_flag_rates,
    pass_at_k,
    prefix_bucket,
    rq1_by_prefix,
    rq1_settings,
)
from symtrace_study.report import extra_markdown


def _row(case, arm, attempt, status, phase="repair", **extra):
    return {"phase": phase, "case": case, "arm": arm, "attempt": attempt, "status": status,
            **extra}


CASES = [{"case": c} for c in ("a", "b", "c", "d")]


def test_pass_at_k_counts_a_pass_within_the_first_k_attempts():
    rows = [_row("a", "rerun", 1, "passed"),
            _row("b", "rerun", 1, "failed"), _row("b", "rerun", 2, "passed"),
            _row("c", "rerun", 1, "failed"), _row("c", "rerun", 2, "failed"),
            _row("c", "rerun", 3, "failed"),
            _row("d", "rerun", 1, "failed"), _row("d", "rerun", 2, "error")]
    table = pass_at_k(CASES, rows, ["suspicious", "rerun"], 3)
    assert list(table) == ["rerun"]  # node arms have no pass@k
    assert [(table["rerun"][k]["passed"], table["rerun"][k]["n"]) for k in "123"] == [
        (1, 4), (2, 3), (2, 3)]  # d: no outcome once its system error counts


def test_rq1_by_prefix_buckets_cases_by_their_replayed_prefix():
    assert [prefix_bucket(n) for n in (0, 4, 5, 19, 20, 300)] == [
        "0–4", "0–4", "5–9", "10–19", "20+", "20+"]
    rows = [_row("a", "replay", 1, "reproduced", "rq1", prefix_events=3),
            _row("a", "rerun", 1, "not_reproduced", "rq1"),
            _row("b", "replay", 1, "not_reproduced", "rq1", prefix_events=25),
            _row("b", "rerun", 1, "reproduced", "rq1"),
            _row("c", "rerun", 1, "error", "rq1")]
    table = rq1_by_prefix(CASES, rows)
    assert table == {"0–4": {"cases": 1, "replay": [1, 1], "rerun": [0, 1]},
                     "20+": {"cases": 1, "replay": [0, 1], "rerun": [1, 1]}}


def test_rq1_settings_come_from_the_rows():
    llm = {"models_requested": ["m"], "models_served": ["m-2026"],
           "sampling": [{"temperature": 0.7}]}
    rows = [_row("a", "rerun", 1, "reproduced", "rq1", llm=llm),
            _row("a", "rerun", 1, "passed", llm={**llm, "models_served": ["other"]})]
    assert rq1_settings(rows) == {"models_requested": ["m"], "models_served": ["m-2026"],
                                  "sampling": [{"temperature": 0.7}]}


def test_flag_rates_count_unreadable_bundles_apart(tmp_path):
    rates = detector_flag_rates(tmp_path, [{"case": "x", "mas": "plain", "status": "passed",
                                            "bundle": "sources/none"}])
    assert rates["plain"] == {"sources": 0, "flagged": 0, "rules": {}, "unreadable": 1}
    md = "\n".join(extra_markdown({"methods": [], "attempts": 1, "extra": {
        "families": {}, "flag_rates": rates}}))
    assert "unreadable" in md and "| plain | 0 (1 bundle(s) unreadable) | 0 (–) |" in md
