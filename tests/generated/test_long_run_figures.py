"""The long run's bookkeeping: the time budget shares, and the figures summarise.py prints
(per framework and topology, what stopped each topology, each failure with its reproducer)."""

from __future__ import annotations

from pathlib import Path

import gen_harness
import orjson
import pytest
import summarise
from gen_harness import Budget


def _program(topology: str, option: str = "", framework: str = "ag2v1") -> dict:
    return {"framework": framework, "topology": topology, "option": option}


def _passed(topology: str, option: str = "", live: int = 2) -> dict:
    return {"kind": "program", "label": f"x-{topology}", "refused_at_record": None,
            "llm_requests": live, "strict_replays": 3, "perturbed_agent": "planner",
            "anchors": {"live": live}, "program": _program(topology, option)}


def test_summary_counts_per_framework_and_topology_and_names_the_reproducer(
        tmp_path: Path) -> None:
    rows = [
        _passed("ask", "once"), _passed("ask", "once", live=3), _passed("ask", "followup"),
        {**_passed("hub_delegate"), "anchors": {"live": 1, "refused:AnchorRefused": 1}},
        {"kind": "failure", "label": "ag2v1-subtasks-bounded-1ag-3t", "what": "strict replay 1 "
         "diverged: SYM-R105", "kept": "/k/drawn", "shrinking": False,
         "program": _program("subtasks", "bounded")},
        {"kind": "failure", "label": "ag2v1-subtasks-bounded-1ag-0t", "what": "strict replay 1 "
         "diverged: SYM-R105", "kept": "/k/shrunk", "shrinking": True,
         "program": _program("subtasks", "bounded")},
        {"kind": "topology", "framework": "ag2v1", "topology": "ask", "checked": 3,
         "unchecked": 40, "failed": False, "seconds": 61.0, "budget_stopped": True},
        {"kind": "topology", "framework": "ag2v1", "topology": "subtasks", "checked": 0,
         "unchecked": 0, "failed": True, "seconds": 12.5, "budget_stopped": False},
    ]
    report = tmp_path / "r.jsonl"
    report.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    lines = summarise.summarise(summarise.load([str(report)]))
    table = {line.split()[0] if not line.startswith("  ") else line[:36].strip(): line.split()
             for line in lines[1:] if line.strip() and not line.startswith(("runs", "FAILED"))}
    # programs refused LLM strict perturb live refused failed
    assert table["ag2v1"][1:] == ["4", "0", "9", "12", "4", "8", "1", "1"]
    assert table["ask (once)"][-8:] == ["2", "0", "5", "6", "2", "5", "0", "0"]
    assert table["subtasks (bounded)"][-8:] == ["0", "0", "0", "0", "0", "0", "0", "1"]
    assert any("ag2v1 ask" in line and line.split()[-1] == "budget" for line in lines)
    assert any("ag2v1 subtasks" in line and line.split()[-1] == "failure" for line in lines)
    failed = lines[lines.index("FAILED ag2v1 subtasks: strict replay 1 diverged: SYM-R105"):]
    assert "ag2v1-subtasks-bounded-1ag-3t" in failed[1] and "/k/drawn" in failed[1]
    assert "ag2v1-subtasks-bounded-1ag-0t" in failed[2] and "/k/shrunk" in failed[3]


def test_an_unshrunk_failure_run_again_is_not_called_shrunk(tmp_path: Path) -> None:
    failure = {"kind": "failure", "label": "ag2-nested-2ag", "kept": "/k/b", "shrinking": False,
               "what": "selective replay diverged: SYM-R102", "program": _program("nested")}
    again = {**failure, "what": "strict replay 1 differs", "shrinking": True}
    report = tmp_path / "r.jsonl"
    report.write_bytes(orjson.dumps(failure) + b"\n" + orjson.dumps(again) + b"\n")
    lines = summarise.summarise(summarise.load([str(report)]))
    assert lines[-1] == "  run again to report it (new server answers): strict replay 1 differs"
    assert not any("shrunk" in line for line in lines)


def test_rows_without_a_kind_are_programs(tmp_path: Path) -> None:
    old = {k: v for k, v in _passed("two_agent", "sync").items() if k != "kind"}
    report = tmp_path / "r.jsonl"
    report.write_bytes(orjson.dumps(old) + b"\n")
    assert summarise.summarise(summarise.load([str(report)]))[1].split()[:2] == ["ag2v1", "1"]


def test_the_budget_is_shared_out_over_the_topologies_left(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    clock = [1000.0]
    monkeypatch.setattr(gen_harness.time, "monotonic", lambda: clock[0])
    monkeypatch.setitem(gen_harness.ENV, "SYMTRACE_GEN_BUDGET", "500")
    monkeypatch.setattr(Budget, "started", {})
    monkeypatch.setattr(Budget, "begun", {})
    n = len(gen_harness.TOPOLOGIES["ag2v1"])
    first = Budget("ag2v1", "ask")
    assert first.deadline == 1000.0 + 500.0 / n and not first.spent()
    clock[0] = first.deadline
    assert first.spent()
    clock[0] = 1040.0  # the next topology started early: it gets an even share of 460 s
    assert Budget("ag2v1", "delegation").deadline == 1040.0 + 460.0 / (n - 1)
    clock[0] = 1600.0  # the budget is gone: the last topologies stop at once
    assert Budget("ag2v1", "subtasks").spent()
    monkeypatch.setitem(gen_harness.ENV, "SYMTRACE_GEN_BUDGET", "")
    assert not Budget("ag2v1", "hub_delegate").spent()  # no budget: never spent
