"""Zero-code wrapping through the CLI, and the committed reference bundles.

`symtrace record -o B -- python app.py` runs an unmodified AgentChat program in a child
process; the adapter arms itself there when the program imports autogen_agentchat.
"""

from __future__ import annotations

import os

import orjson
import pytest

from symtrace.bundle import load_bundle
from symtrace.model.events import EventType

from ._support import IN_PROCESS, ROOT, SCRIPTS, symtrace_cli

pytestmark = [pytest.mark.slow, pytest.mark.framework("autogen_agentchat")]

REFERENCE = sorted(p.parent for p in ROOT.glob("bundles/autogen_agentchat-*/manifest.json"))
CLI_REPLAYED = [b for b in REFERENCE if b.name.removeprefix("autogen_agentchat-") not in IN_PROCESS]
DIVERGENT = sorted(
    p.parent for p in ROOT.glob("bundles/divergent/autogen_agentchat-*/manifest.json"))


def without_endpoint() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}


@pytest.mark.parametrize("adapter_args", [[], ["--adapter", "autogen_agentchat"]],
                         ids=["auto", "named"])
def test_record_and_replay_an_unmodified_program(adapter_args, stub_llm_factory, tmp_path):
    stub = stub_llm_factory(script=SCRIPTS / "selector.json")
    env = {"OPENAI_BASE_URL": stub.url, "OPENAI_API_KEY": "sk-test"}
    bundle = tmp_path / "run"
    recorded = symtrace_cli("record", "-o", str(bundle), *adapter_args, "--",
                            "python", "examples/autogen_agentchat/selector.py", env=env)
    assert recorded.returncode == 0, recorded.stderr[-3000:]
    loaded = load_bundle(bundle)
    assert "autogen_agentchat" in loaded.config["adapters"]
    reasons = [e.reason for e in loaded.events if e.is_llm]
    assert reasons.count("speaker_selection") == 3
    assert [e.lane for e in loaded.events if e.type is EventType.TOOL_CALL] == [
        "researcher/tool#0", "researcher/tool#1"]

    served = stub.served
    replayed = symtrace_cli("replay", str(bundle), env=env)
    assert replayed.returncode == 0, replayed.stderr[-3000:]
    assert replayed.stdout == recorded.stdout
    assert stub.served == served


def test_there_are_reference_bundles():
    assert len(REFERENCE) == 11 and DIVERGENT


@pytest.mark.parametrize("bundle", CLI_REPLAYED, ids=lambda p: p.name)
def test_reference_bundle_replays_strictly_with_no_endpoint(bundle, tmp_path):
    report = tmp_path / "report.json"
    done = symtrace_cli("replay", str(bundle.relative_to(ROOT)), "--cwd", ".", "--trust", "--quiet",
                        "--report-json", str(report), env=without_endpoint())
    assert done.returncode == 0, done.stderr[-3000:]
    assert orjson.loads(report.read_bytes())["status"] == "replayed"


@pytest.mark.parametrize("bundle", DIVERGENT, ids=lambda p: p.name)
def test_divergent_bundle_fails_at_the_stated_event(bundle, tmp_path):
    expected = orjson.loads((bundle / "expected_divergence.json").read_bytes())
    report = tmp_path / "report.json"
    done = symtrace_cli("replay", str(bundle.relative_to(ROOT)), "--cwd", ".", "--trust", "--quiet",
                        "--report-json", str(report), env=without_endpoint())
    assert done.returncode == 90, done.stderr[-3000:]
    found = orjson.loads(report.read_bytes())["report"]
    assert (found["kind"], found["event_id"], found["lane"]) == (
        expected["kind"], expected["event_id"], expected["lane"])
    assert found["differences"][0]["path"] == expected["path"]
