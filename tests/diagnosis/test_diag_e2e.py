"""End to end: record a failing run against the scripted stub, `symtrace diagnose` it, then
`symtrace repair` it: one selective replay to the anchor, live from there with Δ."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from symtrace.bundle import load_bundle

pytestmark = pytest.mark.slow
PROGRAM = str(Path(__file__).parent / "programs" / "refund_agent.py")
SCRIPT = {
    "rules": [
        # The repaired decision: Δ arrives as the last user message at the anchor.
        {
            "match": {"last_user_contains": "Revisit the step"},
            "reply": {"content": "Final answer: 406.53"},
        },
        {
            "match": {"last_user_contains": "Check the task requirements"},
            "reply": {"content": "Final answer: 0"},
        },
        {
            "match": {"last_user_contains": "Observation"},
            "reply": {"content": "Final answer: 58.99"},
        },
        {"match": {"last_user_contains": "refund"}, "reply": {"content": "__SHOPPING__/orders"}},
    ],
}


def symtrace(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "symtrace", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
    )


@pytest.fixture
def recorded(tmp_path, stub_llm_factory):
    stub = stub_llm_factory(script=SCRIPT)
    env = {"OPENAI_BASE_URL": stub.url, "OPENAI_API_KEY": "sk-test"}
    path = tmp_path / "run"
    done = symtrace(
        "record",
        "-o",
        str(path),
        "--task",
        "refund for February 2023",
        "--",
        sys.executable,
        PROGRAM,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return path, env, stub


def test_diagnose_a_recorded_run(recorded):
    path, env, _ = recorded
    done = symtrace("diagnose", str(path), "--json", env=env)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    types = [n["type"] for n in data["nodes"]]
    assert types == ["agent_action", "tool_call", "tool_result", "agent_action", "final_result"]
    by_id = {n["id"]: n for n in data["nodes"]}
    assert "C1" in by_id["tool_call_0000"]["confirmed"]  # the placeholder URL
    assert "C3" in by_id["tool_result_0000"]["confirmed"]  # ConnectionError
    # The placeholder URL was introduced by the decision that made the call: the trace-back
    # anchors there, not at the later decision that reads the failure.
    anchor = data["anchor"]
    assert anchor["symptom"] == "tool_call_0000"
    assert (anchor["target"], anchor["anchor"]) == ("agent_action_0000", "agent_action_0000")
    assert [s["rule"] for s in anchor["trace"]] == ["caused_by_call"]
    plain = symtrace("diagnose", str(path), env=env)
    assert "It shows at tool_call_0000" in plain.stdout
    assert "A repair resumes at agent_action_0000" in plain.stdout
    table = symtrace("diagnose", str(path), "--explain", env=env)
    assert "First eligible anchor: at agent_action_0000" in table.stdout
    assert "Traced back from symptom tool_call_0000" in table.stdout
    done = symtrace("diagnose", str(path), "--json", "--no-trace-back", env=env)
    anchor = json.loads(done.stdout)["anchor"]
    assert (anchor["target"], anchor["anchor"]) == ("tool_call_0000", "agent_action_0001")


def test_repair_replays_to_the_anchor_and_goes_live_with_guidance(recorded, tmp_path):
    path, env, stub = recorded
    served = stub.served
    child = tmp_path / "repaired"
    done = symtrace("repair", str(path), "-o", str(child), "--no-trace-back", env=env)
    assert done.returncode == 0, done.stderr
    plan = " ".join(done.stderr.split())  # the plan is on stderr, before the program's output
    assert ("Repair at agent_action_0001 (suspicious policy): the symptom shows at "
            "tool_call_0000") in plan
    assert stub.served == served + 1  # the prefix is replayed; only the anchor goes live
    bundle = load_bundle(child)
    lineage = bundle.lineage
    assert lineage["anchor"] == "agent_action_0001"
    assert lineage["replayed_events"] == ["agent_action_0000", "tool_call_0000", "tool_result_0000"]
    anchor = bundle.event(lineage["intervention"]["event_id"])  # the live, guided decision
    last_user = anchor.request["body"]["messages"][-1]["content"]
    assert "Revisit the step taken at tool_call_0000" in last_user
    assert "__SHOPPING__" in last_user
    assert bundle.final_result().response["value"] == "Final answer: 406.53"


@pytest.mark.parametrize("policy", ["last", "random"])
def test_controls_use_the_generic_template(recorded, tmp_path, policy):
    path, env, _ = recorded
    child = tmp_path / f"control-{policy}"
    done = symtrace(
        "repair",
        str(path),
        "-o",
        str(child),
        "--anchor-policy",
        policy,
        "--seed",
        "1",
        "--json",
        env=env,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["anchor"]["policy"] == policy and data["anchor"]["categories"] == []
    assert data["replay"]["child_bundle"] == str(child)
    bundle = load_bundle(child)
    assert bundle.lineage["anchor"] == data["anchor"]["anchor"]
    messages = bundle.event(bundle.lineage["intervention"]["event_id"]).request["body"]["messages"]
    assert "Check the task requirements" in messages[-1]["content"]
