"""The CLI end to end: a real child process, real HTTP to the stub, documented exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from symtrace.bundle import load_bundle

PROGRAM = str(Path(__file__).parent / "programs" / "two_calls.py")
pytestmark = pytest.mark.slow


def symtrace(*args: str, env: dict | None = None, cwd: Path | None = None
             ) -> subprocess.CompletedProcess:
    import os

    return subprocess.run([sys.executable, "-m", "symtrace", *args], capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, cwd=cwd, timeout=120)


@pytest.fixture
def stub(stub_llm):
    return stub_llm


@pytest.fixture
def env(stub):
    return {"OPENAI_BASE_URL": stub.url, "OPENAI_API_KEY": "sk-test"}


@pytest.fixture
def recorded(tmp_path, stub, env):
    result = symtrace("record", "-o", str(tmp_path / "run"), "--task", "lisbon", "--",
                      "python", PROGRAM, "Tell me about Lisbon", env=env)
    assert result.returncode == 0, result.stderr
    return tmp_path / "run", result


def test_record_captures_the_run_and_its_outcome(recorded, stub):
    path, result = recorded
    bundle = load_bundle(path)
    assert [e.type.value for e in bundle.events] == [
        "agent_action", "tool_call", "tool_result", "agent_action", "final_result"]
    final = bundle.final_result().response
    assert final["exit_code"] == 0
    assert final["value"] in result.stdout
    assert bundle.config["command"]["argv"][-1] == "Tell me about Lisbon"
    assert bundle.initial_state["random_seed"] is not None
    assert bundle.config["adapters"] == []  # no framework imported: replay needs none
    assert bundle.stdout().decode() == result.stdout


def test_strict_replay_is_identical_and_offline(recorded, stub, env):
    path, result = recorded
    served = stub.served
    replay = symtrace("replay", str(path), env=env)
    assert replay.returncode == 0, replay.stderr
    assert replay.stdout == result.stdout
    assert stub.served == served
    assert "matched every recorded boundary call" in replay.stderr


def test_live_rerun_differs(recorded, stub, env):
    import os

    _path, result = recorded
    outputs = {
        subprocess.run([sys.executable, PROGRAM, "Tell me about Lisbon"], capture_output=True,
                       text=True, env={**os.environ, **env}).stdout
        for _ in range(3)
    }
    assert outputs - {result.stdout}


def test_failing_program_fails_again_the_same_way(tmp_path, stub, env):
    rec = symtrace("record", "-o", str(tmp_path / "b"), "--", "python", PROGRAM, "Hi there",
                   "--exit", "3", env=env)
    assert rec.returncode == 3
    assert load_bundle(tmp_path / "b").manifest["outcome"]["status"] == "error"
    rep = symtrace("replay", str(tmp_path / "b"), env=env)
    assert rep.returncode == 3, rep.stderr


def test_divergence_exits_90_with_a_json_report(recorded, stub, env, tmp_path):
    path, _ = recorded
    report = tmp_path / "report.json"
    rep = symtrace("replay", str(path), "--report-json", str(report), "--",
                   "python", PROGRAM, "Tell me about Porto", env=env)
    assert rep.returncode == 90
    assert "SYM-R101" in rep.stderr and "agent_action_0000" in rep.stderr
    data = orjson.loads(report.read_bytes())
    assert data["status"] == "diverged"
    assert data["report"]["kind"] == "request_mismatch"
    assert data["report"]["event_id"] == "agent_action_0000"
    assert data["report"]["differences"][0]["path"] == "/body/messages/0/content"


def test_extra_call_is_reported_even_when_swallowed(recorded, stub, env, tmp_path):
    path, _ = recorded
    rep = symtrace("replay", str(path), "--", "python", PROGRAM, "Tell me about Lisbon",
                   "--extra-call", env=env)
    assert rep.returncode == 90
    assert "SYM-R102" in rep.stderr


def test_selective_replay_writes_a_child_that_replays(recorded, stub, env, tmp_path):
    path, _ = recorded
    served = stub.served
    child = tmp_path / "child"
    rep = symtrace("replay", str(path), "--anchor", "agent_action_0001", "--guidance",
                   "Use exactly three bullet points.", "-o", str(child), env=env)
    assert rep.returncode == 0, rep.stderr
    assert stub.served - served == 1
    assert stub.requests[-1]["messages"][-1]["content"] == "Use exactly three bullet points."
    bundle = load_bundle(child)
    assert bundle.lineage["replayed_events"] == ["agent_action_0000", "tool_call_0000",
                                                 "tool_result_0000"]
    assert bundle.manifest["kind"] == "selective_replay"
    served = stub.served
    again = symtrace("replay", str(child), env=env)
    assert again.returncode == 0, again.stderr
    assert stub.served == served
    diff = symtrace("diff", str(path), str(child))
    assert diff.returncode == 1
    assert "A: agent_action_0001 at position 3" in diff.stdout  # the anchor
    assert "differs in its request" in diff.stdout and "/:" not in diff.stdout


def test_set_env_points_the_live_suffix_at_another_endpoint(recorded, stub, env, tmp_path,
                                                           stub_llm_factory):
    path, _ = recorded
    other = stub_llm_factory(mode="stochastic")
    served = stub.served
    rep = symtrace("replay", str(path), "--anchor", "agent_action_0001", "--guidance", "g",
                   "-o", str(tmp_path / "c"), "--set-env", f"OPENAI_BASE_URL={other.url}",
                   env=env)
    assert rep.returncode == 0, rep.stderr
    assert other.served == 1 and stub.served == served
    bad = symtrace("replay", str(path), "--set-env", "NO_EQUALS_SIGN", env=env)
    assert bad.returncode == 2


def test_anchor_on_tool_result_moves_and_says_so(recorded, env, tmp_path):
    path, _ = recorded
    rep = symtrace("replay", str(path), "--anchor", "tool_result_0000", "--guidance", "g",
                   "-o", str(tmp_path / "c"), env=env)
    assert rep.returncode == 0, rep.stderr
    assert "moved to agent_action_0001" in rep.stderr


def test_bad_anchors_fail_before_anything_runs(recorded, stub, env, tmp_path):
    path, _ = recorded
    served = stub.served
    unknown = symtrace("replay", str(path), "--anchor", "agent_action_0042", "--guidance", "g",
                       "-o", str(tmp_path / "c"), env=env)
    assert unknown.returncode == 92 and "agent_action_0042" in unknown.stderr
    assert unknown.stdout == "" and stub.served == served
    final = symtrace("replay", str(path), "--anchor", "final_result_0000", "--guidance", "g",
                     "-o", str(tmp_path / "c"), env=env)
    assert final.returncode == 92 and "no LLM request depends" in final.stderr
    assert not (tmp_path / "c").exists()


def test_killed_run_leaves_a_readable_incomplete_bundle(tmp_path, stub, env):
    rec = symtrace("record", "-o", str(tmp_path / "b"), "--", "python", PROGRAM, "Hi there",
                   "--die-after-first", env=env)
    assert rec.returncode == 137
    bundle = load_bundle(tmp_path / "b")
    assert not bundle.complete
    assert [e.id for e in bundle.events] == ["agent_action_0000"]
    assert symtrace("verify", str(tmp_path / "b")).returncode == 0


def test_show_verify_and_graph(recorded, tmp_path):
    path, _ = recorded
    show = symtrace("show", str(path), "--json")
    data = json.loads(show.stdout)
    assert data["schema"] == "symtrace.show/1"
    assert [e["id"] for e in data["events"]][:2] == ["agent_action_0000", "tool_call_0000"]
    assert {"id", "type", "agent", "lane", "parents", "request", "response"} <= set(
        data["events"][0])
    table = symtrace("show", str(path), "--graph", str(tmp_path / "g.svg"), "--width", "200")
    assert "agent_action_0001" in table.stdout and "tool_result_0000" in table.stdout
    assert (tmp_path / "g.svg").read_text().startswith("<svg")
    assert symtrace("verify", str(path)).returncode == 0


@pytest.mark.parametrize("damage, code", [
    ("missing", 91), ("version", 91), ("tamper", 91), ("truncate", 91),
])
def test_bad_bundles_have_typed_exit_codes(recorded, tmp_path, damage, code):
    path, _ = recorded
    if damage == "missing":
        target = tmp_path / "nothing-here"
    else:
        target = path
        if damage == "version":
            m = orjson.loads((path / "manifest.json").read_bytes())
            m["format_version"] = 7
            (path / "manifest.json").write_bytes(orjson.dumps(m))
        elif damage == "tamper":
            events = path / "events.jsonl"
            events.write_bytes(events.read_bytes().replace(b"lovely", b"lonely"))
        else:
            events = path / "events.jsonl"
            events.write_bytes(events.read_bytes()[:-30])
    for command in (["verify", str(target)], ["replay", str(target)], ["show", str(target)]):
        result = symtrace(*command)
        assert result.returncode == code, (command, result.stderr)
        assert "symtrace: error:" in result.stderr


def test_unwritable_output_writes_nothing(tmp_path, env):
    (tmp_path / "file").write_text("x")
    rec = symtrace("record", "-o", str(tmp_path / "file" / "b"), "--", "python", PROGRAM,
                   env=env)
    assert rec.returncode == 93
    assert rec.stdout == ""
