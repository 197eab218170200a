"""Issue 22, points 1–5: the study follows the paper's protocol, through real programs.

RQ1 replays the source up to its failure target and goes live there (App. D.3); reproduction
is the mechanism-level test (App. D.1); node arms on a mutating task see the prefix's writes;
infrastructure faults and crashes land in their own buckets; task arms are told their tools
(App. E.1). The programs are the framework-free `plain` MAS (about a second each) against the
task-aware stub.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from symtrace_study import jobs as plan
from symtrace_study.attempts import equivalent
from symtrace_study.config import parse_config
from symtrace_study.jobs import Job
from symtrace_study.reproduction import Signature, find_match, source_signatures
from symtrace_study.study import freeze
from symtrace_study.worker import Worker

import symtrace

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _config(out: Path, **extra):
    return parse_config({"out": str(out), "mas": ["plain"], "tasks": ["shop-002", "shop-010"],
                         "seeds": [0], "backend": {"kind": "stub", "skill": 0.4},
                         "attempts": 1, "rq1": {"k": 1}, **extra})


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """A worker, and a failing source of shop-010 collected through it."""
    out = tmp_path_factory.mktemp("faithful")
    config = _config(out)
    worker = Worker(config)
    [source] = [j for j in plan.collect_jobs(config) if j.task == "shop-010"]
    row = worker.run(source)
    cases = freeze([row])
    assert cases["cases"], f"the shop-010 source should fail at skill 0.4: {row}"
    yield config, worker, cases["cases"][0]
    worker.close()


def test_rq1_replays_to_the_failure_target_then_goes_live(study):
    config, worker, case = study
    assert case["anchor"] and case["target"]
    [job] = [j for j in plan.first_round(config, [case]) if j.kind == "replay"]
    row = worker.run(job)
    assert row["error"] is None, row
    assert row["anchor"] == case["anchor"] and row["target_from"] == "diagnosis"
    assert row["diverged"] is False
    assert row["api_calls"] >= 1  # regenerated live from the target (a strict replay makes 0)
    child = symtrace.load_bundle(config.out / row["bundle"])
    assert child.lineage["anchor"] == case["anchor"]
    assert child.lineage["intervention"]["guidance"] == ""  # regenerated, not repaired
    source = symtrace.load_bundle(config.out / case["bundle"])
    cut = source.event(case["anchor"]).position
    assert [e.request_hash for e in child.events if e.position < cut] == [
        e.request_hash for e in source.events if e.position < cut]  # the prefix is the source's
    assert row["equivalence"] == "mechanism" and row["status"] in ("reproduced", "not_reproduced")
    assert (row["status"] == "reproduced") == (row["match"] is not None)


def test_reproduction_is_mechanism_level_not_verdict_equality(study):
    """Failing again is not enough: the same category, rule and role must show up, live, with
    evidence quoted from the attempt itself."""
    config, _, case = study
    source = symtrace.load_bundle(config.out / case["bundle"])
    signatures = source_signatures(source)
    assert signatures and signatures[0].category in case["categories"]
    every = {e.id for e in source.events}
    match = find_match(signatures, source, every)
    assert match is not None and match.rule in signatures[0].rules  # it reproduces itself
    assert find_match(signatures, source, set()) is None  # replayed prefix events do not count
    other = [Signature(s.category, ("c2_repeated_final",), s.node_type, s.agent, s.evidence,
                       s.event) for s in signatures]
    assert find_match(other, source, every) is None  # same category, another mechanism
    moved = [Signature("C2" if s.category != "C2" else "C3", s.rules, s.node_type, s.agent,
                       s.evidence, s.event) for s in signatures]
    assert find_match(moved, source, every) is None
    from symtrace_study.attempts import Observed

    failed_otherwise = Observed("prose, not JSON", False, "answer: expected a JSON object", 3)
    assert equivalent("verdict", case, failed_otherwise)  # what the old default counted
    assert parse_config({"out": "x"}).equivalence == "mechanism"


def test_node_arm_on_a_mutating_task_is_scored_on_the_restored_state(tmp_path):
    """A passing shop-010 source (it cancels orders, then answers): the `last` arm replays the
    cancellations from the bundle and regenerates only the answer. Scored against reset
    services it fails; with the prefix's writes restored it passes, as the source did."""
    config = _config(tmp_path, backend={"kind": "stub", "skill": 1.0})
    worker = Worker(config)
    try:
        [source] = [j for j in plan.collect_jobs(config) if j.task == "shop-010"]
        row = worker.run(source)
        assert row["status"] == "passed", row
        case = {k: row.get(k) for k in ("case", "mas", "task", "case_seed", "bundle", "answer",
                                        "reason", "state")}
        job = Job("repair", "node", case["case"], "plain", "shop-010", "last", 1,
                  plan.derive_seed(0, case["case"], "repair", "last", 1), case)
        repaired = worker.run(job)
        assert repaired["intervened"] and repaired["error"] is None, repaired
        bundle = symtrace.load_bundle(config.out / case["bundle"])
        writes = [e for e in bundle.events if e.type.value == "tool_call"
                  and e.request.get("tool") == "shop_cancel_order"
                  and e.position < bundle.event(repaired["anchor"]).position]
        assert writes, "the anchor should follow the cancellations"
        assert repaired["status"] == "passed", repaired["reason"]
        assert repaired["answer"] == row["answer"]
    finally:
        worker.close()


def _mas(name: str, code: str) -> dict:
    return {"name": name, "command": ["python", "-c", code, "{task}"], "prompt_args": []}


def test_infrastructure_faults_are_retried_system_errors_and_crashes_are_non_repairs(tmp_path):
    infra = _mas("infra", "import os, sys; sys.stderr.write('symtrace_suite: infrastructure "
                          "fault: route GET /x: ConnectError\\n'); os._exit(75)")
    crash = _mas("crash", "raise RuntimeError('framework bug')")
    no_llm = _mas("nollm", "raise ConnectionRefusedError(111, 'Connection refused')")
    case = {"case": "crash/shop-002/s0", "mas": "crash", "task": "shop-002", "case_seed": 0,
            "answer": None, "reason": "x", "bundle": "sources/none"}
    for crashes, status in (("non_repair", "failed"), ("system_error", "error")):
        config = parse_config({"out": str(tmp_path / crashes), "mas": [infra, crash, no_llm],
                               "tasks": ["shop-002"], "infra_retries": 2, "crashes": crashes})
        worker = Worker(config)
        try:
            [collect] = [j for j in plan.collect_jobs(config) if j.mas == "infra"]
            row = worker.run(collect)
            assert (row["status"], row["error_kind"], row["tries"]) == (
                "error", "infrastructure", 3), row
            assert "infrastructure fault" in row["error"]
            job = Job("repair", "rerun", case["case"], "crash", "shop-002", "rerun", 1, 7, case)
            row = worker.run(job)
            assert (row["status"], row["error_kind"], row["tries"]) == (
                status, "program_crash", 1), row
            assert "framework bug" in row["error"]
            job = Job("repair", "rerun", case["case"], "nollm", "shop-002", "rerun", 1, 7, case)
            row = worker.run(job)  # the LLM endpoint down: the harness failed, not the MAS
            assert (row["status"], row["error_kind"]) == ("error", "infrastructure"), row
        finally:
            worker.close()


def test_a_tool_that_cannot_reach_its_service_ends_the_program_as_an_infrastructure_fault():
    env = {**os.environ, "SYMTRACE_SUITE_URLS": orjson.dumps(
        {"shop": "http://127.0.0.1:9", "wiki": "http://127.0.0.1:9",
         "route": "http://127.0.0.1:9"}).decode()}
    proc = subprocess.run(
        [sys.executable, "-c", "from symtrace_suite.mas.tools import shop_get_order\n"
         "print(shop_get_order('O-1001'))"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 75, proc
    assert "infrastructure fault" in proc.stderr and proc.stdout == ""  # never an observation


def test_task_arms_are_given_the_tools_of_their_task():
    from symtrace_suite.tasks import get_task

    from symtrace.diagnosis import build_task_prompt, parse_task

    task = get_task("shop-010")
    data = task.to_json()
    assert "shop_cancel_order" in data["tools"] and not any(
        t.startswith(("wiki_", "route_")) for t in data["tools"])
    assert set(get_task("multi-001").to_json()["tools"]) > {"wiki_search"}
    prompt = build_task_prompt("unguided_rerun", parse_task(
        {**data, "benchmark": "symtrace_suite", "split": task.site}))
    assert "Start URLs or tools: none" not in prompt
    assert "shop_cancel_order" in prompt


def test_the_rq1_replay_sends_the_anchor_request_unchanged(study):
    """No Δ at the target: the anchor's live request is the recorded one, byte for byte in
    content (an empty guidance message would change what the model is asked)."""
    config, worker, case = study
    [job] = [j for j in plan.first_round(config, [case]) if j.kind == "replay"]
    row = worker.run(job)
    child = symtrace.load_bundle(config.out / row["bundle"])
    source = symtrace.load_bundle(config.out / case["bundle"])
    anchor = child.lineage["intervention"]["event_id"]
    assert child.event(anchor).request == source.event(case["anchor"]).request
