"""Held tool outputs (a controlled live suffix): a live tool call identical to a recorded one
gets the recorded outcome and its body does not run; a new call runs; the child bundle, held
calls included, replays strictly. The tool body counts its runs."""

from __future__ import annotations

import json

import openai

import symtrace

SCRIPT = {
    "rules": [
        {"match": {"tool_result_present": True}, "reply": {"content": "Done."}},
        {"match": {"any_message_contains": "Faro too"},
         "reply": {"tool_calls": [{"name": "weather", "arguments": {"city": "Lisbon"}},
                                  {"name": "weather", "arguments": {"city": "Faro"}}]}},
        {"match": {"has_tools": True},
         "reply": {"tool_calls": [{"name": "weather", "arguments": {"city": "Lisbon"}},
                                  {"name": "weather", "arguments": {"city": "Atlantis"}}]}},
    ],
    "default": {"content": "A plain answer."},
}
TOOLS = [{"type": "function", "function": {
    "name": "weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]
runs: list[str] = []


@symtrace.tool
def weather(city: str) -> str:
    runs.append(city)  # the body ran: a held call never gets here
    if city == "Atlantis":
        raise LookupError(f"no such city: {city}")
    return f"{city}: sunny, reading #{len(runs)}"  # differs on every run: held is visible


def agent(stub) -> list[str]:
    client = openai.OpenAI(base_url=stub.url, api_key="sk-test", max_retries=0)
    messages = [{"role": "user", "content": "Weather for the trip?"}]
    seen = []
    for _ in range(3):
        msg = client.chat.completions.create(model="m", messages=messages,
                                             tools=TOOLS).choices[0].message
        messages.append(msg.model_dump(exclude_none=True))
        if not msg.tool_calls:
            return seen
        for call in msg.tool_calls:
            try:
                result = weather(**json.loads(call.function.arguments))
            except LookupError as exc:
                result = f"Error: {exc}"
            seen.append(result)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return seen


def _recorded(tmp_path, stub):
    runs.clear()
    with symtrace.record(tmp_path / "run", task="weather") as rec:
        rec.final_result(agent(stub))
    assert runs == ["Lisbon", "Atlantis"]
    bundle = symtrace.load_bundle(tmp_path / "run")
    anchor = next(e for e in bundle.events if e.is_llm)
    return bundle, anchor


def test_identical_calls_are_held_new_ones_run_and_the_child_replays(tmp_path,
                                                                       stub_llm_factory):
    stub = stub_llm_factory(script=SCRIPT)
    _, anchor = _recorded(tmp_path, stub)
    with symtrace.replay(tmp_path / "run", anchor=anchor.id, guidance="Check Faro too.",
                         out=tmp_path / "repair", hold_tools=True) as handle:
        seen = agent(stub)
        handle.final_result(seen)
    # Lisbon is identical to a recorded call: held (the recorded reading, body not run)
    assert runs == ["Lisbon", "Atlantis", "Faro"]
    assert seen == ["Lisbon: sunny, reading #1", "Faro: sunny, reading #3"]
    child = symtrace.load_bundle(tmp_path / "repair")
    held = child.lineage["held_tool_events"]
    assert len(held) == 1 and held[0] in child.lineage["live_events"]

    runs.clear()  # resample: the same request, so every tool call is held, errors included
    with symtrace.replay(tmp_path / "run", anchor=anchor.id, out=tmp_path / "resample",
                         hold_tools=True) as handle:
        seen = agent(stub)
        handle.final_result(seen)
    assert runs == []
    assert seen == ["Lisbon: sunny, reading #1", "Error: no such city: Atlantis"]
    assert len(symtrace.load_bundle(tmp_path / "resample").lineage["held_tool_events"]) == 2

    served = stub.served
    for name in ("repair", "resample"):  # held calls are events of the child: strict replay
        runs.clear()
        with symtrace.replay(tmp_path / name):
            agent(stub)
        assert runs == [] and stub.served == served


def test_without_holding_the_live_suffix_runs_every_tool(tmp_path, stub_llm_factory):
    stub = stub_llm_factory(script=SCRIPT)
    _, anchor = _recorded(tmp_path, stub)
    with symtrace.replay(tmp_path / "run", anchor=anchor.id, out=tmp_path / "plain") as h:
        seen = agent(stub)
        h.final_result(seen)
    assert runs == ["Lisbon", "Atlantis", "Lisbon", "Atlantis"]
    assert seen[0] == "Lisbon: sunny, reading #3"  # the body ran again
    assert "held_tool_events" not in symtrace.load_bundle(tmp_path / "plain").lineage


def test_the_kth_identical_call_gets_the_kth_recorded_outcome(tmp_path, stub_llm_factory):
    from symtrace.model.canonical import canonical_tool_call
    from symtrace.replay.held_tools import HeldToolOutputs

    stub = stub_llm_factory(script=SCRIPT)
    bundle, _ = _recorded(tmp_path, stub)
    lisbon = next(e for e in bundle.events if e.type.value == "tool_call"
                  and e.request == canonical_tool_call("weather", {"city": "Lisbon"}))
    held = HeldToolOutputs(bundle.events)
    # served in the prefix: the recorded Lisbon call was that call's, a new one runs live
    assert held.take(lisbon.request, {lisbon.id}) is None
    fresh = HeldToolOutputs(bundle.events)
    assert fresh.take(lisbon.request, set()) == {"ok": True, "value": "Lisbon: sunny, reading #1"}
    assert fresh.take(lisbon.request, set()) is None  # recorded once: the second runs live
