"""An AgentChat team on today's stack (autogen-ext 0.7.5 resolved onto openai 3 over httpx2):
the `selector` example (a SelectorGroupChat of three agents, the researcher calling two tools
in one message) records every LLM request, replays strictly 20 times with no request and no
tool body run, diverges at the writer when the writer's prompt changes, and replays
selectively from the writer's first call with a strict replay of the child."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

import symtrace
from symtrace import load_bundle

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "autogen_agentchat"
SCENARIO = "selector"
PERTURBED = "writer"
ADAPTERS = ["autogen_agentchat"]
GUIDANCE = "Mention the currency rate."


def example() -> ModuleType:
    if str(EXAMPLES) not in sys.path:  # the example's `from agentchat_common import ...`
        sys.path.insert(0, str(EXAMPLES))
    spec = importlib.util.spec_from_file_location(f"next_stack_agentchat_{SCENARIO}",
                                                  EXAMPLES / f"{SCENARIO}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def team(stub_llm_factory, monkeypatch, tmp_path):
    """(example module, stub, recorded transcript, bundle path)."""
    monkeypatch.delenv("AGENTCHAT_EXAMPLE_PERTURB", raising=False)
    script = json.loads((EXAMPLES / "scripts" / f"{SCENARIO}.json").read_text())
    stub = stub_llm_factory(script=script)
    monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    module = example()
    bundle = tmp_path / "b"
    with symtrace.record(bundle, task=SCENARIO, adapters=ADAPTERS):
        transcript = asyncio.run(module.run())
    return module, stub, transcript, bundle


def _run(module: ModuleType) -> list[str]:
    module.TOOL_RUNS.clear()
    return asyncio.run(module.run())


def test_twenty_strict_replays_without_any_request(team) -> None:
    module, stub, transcript, bundle = team
    served = stub.served
    assert served == len([e for e in load_bundle(bundle).events if e.is_llm]) > 0
    for attempt in range(20):
        with symtrace.replay(bundle, adapters=ADAPTERS):
            assert _run(module) == transcript, f"replay {attempt}"
        assert module.TOOL_RUNS == []
    assert stub.served == served


def test_an_edit_diverges_at_that_agent(team, monkeypatch) -> None:
    module, stub, _, bundle = team
    target = next(e for e in load_bundle(bundle).events if e.is_llm and e.agent == PERTURBED)
    monkeypatch.setenv("AGENTCHAT_EXAMPLE_PERTURB", PERTURBED)
    served = stub.served
    with pytest.raises(symtrace.RequestMismatch) as caught, \
            symtrace.replay(bundle, adapters=ADAPTERS):
        _run(module)
    assert (caught.value.report.event_id, caught.value.report.agent) == (target.id, PERTURBED)
    assert stub.served == served


def test_selective_replay_and_child_replay(team, tmp_path) -> None:
    module, stub, _, bundle = team
    anchor = next(e for e in load_bundle(bundle).events if e.is_llm and e.agent == PERTURBED)
    stub.reset()
    with symtrace.replay(bundle, anchor=anchor.id, guidance=GUIDANCE, out=tmp_path / "child",
                         adapters=ADAPTERS):
        repaired = _run(module)
    assert stub.served >= 1
    assert stub.requests[0]["messages"][-1] == {"role": "user", "content": GUIDANCE}
    child = load_bundle(tmp_path / "child")
    assert child.lineage["anchor"] == anchor.id
    served = stub.served
    with symtrace.replay(tmp_path / "child", adapters=ADAPTERS):
        assert _run(module) == repaired
    assert stub.served == served and module.TOOL_RUNS == []
