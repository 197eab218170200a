"""End to end through the real openai SDK and httpx against the embedded stub endpoint.

Covers sync, async, streaming and concurrent clients; strict replay with zero endpoint
requests; every divergence kind; tools whose bodies are skipped on replay; selective replay
with guidance and a child bundle that itself replays strictly.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import openai
import pytest

import symtrace
from symtrace.errors import EgressBlocked, MissingCall, RequestMismatch, UnexpectedCall

TOOL_SCRIPT = {
    "rules": [
        {"match": {"tool_result_present": True}, "reply": {"content": "It is sunny. Done."}},
        {
            "match": {"has_tools": True},
            "reply": {
                "tool_calls": [
                    {"name": "weather", "arguments": {"city": "Lisbon"}},
                    {"name": "weather", "arguments": {"city": "Porto"}},
                ]
            },
        },
    ],
    "default": {"content": "A plain answer."},
}
WEATHER_TOOL = [
    {
        "type": "function",
        "function": {
            "name": "weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]

body_runs: list[str] = []


@symtrace.tool
def weather(city: str) -> str:
    body_runs.append(city)
    if city == "Atlantis":
        raise LookupError(f"no such city: {city}")
    return f"{city}: sunny"


def client(stub) -> openai.OpenAI:
    return openai.OpenAI(base_url=stub.url, api_key="sk-test", max_retries=0)


def agent_loop(stub, question: str = "Weather in Lisbon and Porto?") -> str:
    """A tiny agent: ask, run tool calls in parallel threads, answer."""
    c = client(stub)
    messages = [{"role": "user", "content": question}]
    for _ in range(3):
        msg = (
            c.chat.completions.create(model="m", messages=messages, tools=WEATHER_TOOL)
            .choices[0]
            .message
        )
        messages.append(msg.model_dump(exclude_none=True))
        if not msg.tool_calls:
            return msg.content or ""
        with ThreadPoolExecutor(max_workers=2) as pool:
            results = list(
                pool.map(
                    lambda call: weather(**__import__("json").loads(call.function.arguments)),
                    msg.tool_calls,
                )
            )
        for call, result in zip(msg.tool_calls, results, strict=True):
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return "gave up"


class TestRecordAndStrictReplay:
    def test_sync_run_replays_with_zero_requests_and_no_tool_bodies(
        self, tmp_path, stub_llm_factory
    ):
        stub = stub_llm_factory(script=TOOL_SCRIPT)
        body_runs.clear()
        with symtrace.record(tmp_path / "b", task="weather") as rec:
            rec.final_result(agent_loop(stub))
        assert sorted(body_runs) == ["Lisbon", "Porto"]
        served = stub.served
        body_runs.clear()
        with symtrace.replay(tmp_path / "b"):
            answer = agent_loop(stub)
        assert answer == "It is sunny. Done."
        assert stub.served == served  # zero requests during replay
        assert body_runs == []  # tool bodies skipped
        bundle = symtrace.load_bundle(tmp_path / "b")
        assert [e.type.value for e in bundle.events].count("tool_call") == 2

    def test_twenty_replays_of_parallel_tools_never_diverge(self, tmp_path, stub_llm_factory):
        stub = stub_llm_factory(script=TOOL_SCRIPT)
        with symtrace.record(tmp_path / "b"):
            agent_loop(stub)
        for _ in range(20):
            with symtrace.replay(tmp_path / "b"):
                agent_loop(stub)

    def test_streaming_is_replayed_chunk_for_chunk(self, tmp_path, stub_llm):
        def stream_once() -> list[str]:
            chunks = client(stub_llm).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "stream please"}], stream=True
            )
            return [c.choices[0].delta.content or "" for c in chunks if c.choices]

        with symtrace.record(tmp_path / "b"):
            recorded = stream_once()
        served = stub_llm.served
        with symtrace.replay(tmp_path / "b"):
            replayed = stream_once()
        assert replayed == recorded and len(recorded) > 2
        assert stub_llm.served == served
        event = symtrace.load_bundle(tmp_path / "b").events[0]
        assert event.response["stream"] is True
        assert event.response["chunks"][-1].strip().endswith("[DONE]")

    def test_async_and_concurrent_tasks(self, tmp_path, stub_llm):
        async def run() -> list[str]:
            c = openai.AsyncOpenAI(base_url=stub_llm.url, api_key="sk-test", max_retries=0)
            replies = await asyncio.gather(
                *[
                    c.chat.completions.create(
                        model="m", messages=[{"role": "user", "content": f"question {i}"}]
                    )
                    for i in range(6)
                ]
            )
            return [r.choices[0].message.content for r in replies]

        with symtrace.record(tmp_path / "b"):
            recorded = asyncio.run(run())
        served = stub_llm.served
        with symtrace.replay(tmp_path / "b"):
            assert asyncio.run(run()) == recorded
        assert stub_llm.served == served

    def test_threads_share_one_recording(self, tmp_path, stub_llm):
        def ask(i: int) -> str:
            return (
                client(stub_llm)
                .chat.completions.create(
                    model="m", messages=[{"role": "user", "content": f"thread {i}"}]
                )
                .choices[0]
                .message.content
            )

        def run() -> list[str]:
            out: dict[int, str] = {}
            threads = [
                threading.Thread(target=lambda i=i: out.__setitem__(i, ask(i))) for i in range(5)
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            return [out[i] for i in range(5)]

        with symtrace.record(tmp_path / "b"):
            recorded = run()
        with symtrace.replay(tmp_path / "b"):
            assert run() == recorded

    def test_a_live_rerun_differs_but_replay_does_not(self, tmp_path, stub_llm):
        def ask() -> str:
            return (
                client(stub_llm)
                .chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "tell me about Lisbon"}]
                )
                .choices[0]
                .message.content
            )

        with symtrace.record(tmp_path / "b"):
            recorded = ask()
        live = {ask() for _ in range(8)}
        assert live - {recorded}  # a sampling endpoint answers differently
        with symtrace.replay(tmp_path / "b"):
            assert ask() == recorded


class TestDivergence:
    @pytest.fixture
    def recorded(self, tmp_path, stub_llm_factory):
        stub = stub_llm_factory(script=TOOL_SCRIPT)
        with symtrace.record(tmp_path / "b"):
            agent_loop(stub)
        return stub, tmp_path / "b"

    def test_perturbed_prompt(self, recorded):
        stub, path = recorded
        with pytest.raises(RequestMismatch) as info, symtrace.replay(path):
            agent_loop(stub, "Weather in Faro?")
        report = info.value.report
        assert report.event_id == "agent_action_0000"
        assert report.differences[0].path == "/body/messages/0/content"

    def test_program_swallowing_the_divergence_still_fails(self, recorded):
        stub, path = recorded
        with pytest.raises(RequestMismatch), symtrace.replay(path):
            try:
                agent_loop(stub, "Weather in Faro?")
            except Exception:  # a framework's retry-and-continue
                pass

    def test_extra_call(self, recorded):
        stub, path = recorded
        with pytest.raises(UnexpectedCall), symtrace.replay(path):
            agent_loop(stub)
            client(stub).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "one more"}]
            )

    def test_missing_call(self, recorded):
        stub, path = recorded
        with pytest.raises(MissingCall) as info, symtrace.replay(path):
            client(stub).chat.completions.create(
                model="m",
                messages=[{"role": "user", "content": "Weather in Lisbon and Porto?"}],
                tools=WEATHER_TOOL,
            )
        assert (
            info.value.report.event_id == "tool_call_0000"
            or info.value.report.event_id.startswith("tool_call")
        )

    def test_changed_tool_output_is_caught_at_the_next_llm_call(self, recorded, monkeypatch):
        stub, path = recorded
        # the program now post-processes tool output differently: the tool call itself still
        # matches (and is served), but the next LLM request carries different content
        real = weather.__wrapped__

        @symtrace.tool(name="weather")
        def shouting_weather(city: str) -> str:
            return real(city)

        monkeypatch.setitem(globals(), "weather", lambda city: shouting_weather(city).upper())
        with pytest.raises(RequestMismatch) as info, symtrace.replay(path):
            agent_loop(stub)
        report = info.value.report
        assert report.event_id == "agent_action_0001"
        assert report.differences[0].path.startswith("/body/messages/")
        assert report.differences[0].path.endswith("/content")


class TestToolsAndErrors:
    def test_tool_exception_is_recorded_and_reraised(self, tmp_path):
        body_runs.clear()
        with symtrace.record(tmp_path / "b"), pytest.raises(LookupError):
            weather("Atlantis")
        body_runs.clear()
        with symtrace.replay(tmp_path / "b"), pytest.raises(LookupError, match="Atlantis"):
            weather("Atlantis")
        assert body_runs == []

    def test_transport_error_is_replayed(self, tmp_path):
        dead = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="sk-test", max_retries=0)

        def call():
            dead.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])

        with symtrace.record(tmp_path / "b"), pytest.raises(openai.APIConnectionError):
            call()
        with symtrace.replay(tmp_path / "b"), pytest.raises(openai.APIConnectionError):
            call()
        event = symtrace.load_bundle(tmp_path / "b").events[0]
        assert event.response["error"]["type"] == "ConnectError"

    def test_non_llm_http_is_a_tool_boundary(self, tmp_path, stub_llm):
        with symtrace.record(tmp_path / "b"):
            stats = httpx.get(stub_llm.root_url + "/_stub/stats").json()
        with symtrace.replay(tmp_path / "b"):
            assert httpx.get(stub_llm.root_url + "/_stub/stats").json() == stats
        events = symtrace.load_bundle(tmp_path / "b").events
        assert events[0].type.value == "tool_call" and events[0].request["tool"] == "http"


class TestSelectiveReplay:
    def test_anchor_goes_live_with_guidance_and_child_replays(self, tmp_path, stub_llm_factory):
        stub = stub_llm_factory(script=TOOL_SCRIPT)
        with symtrace.record(tmp_path / "parent"):
            agent_loop(stub)
        parent = symtrace.load_bundle(tmp_path / "parent")
        anchor = [e for e in parent.events if e.is_llm][1].id  # the answer after the tools
        before = stub.served
        with symtrace.replay(
            tmp_path / "parent", anchor=anchor, guidance="Mention the date.", out=tmp_path / "child"
        ):
            agent_loop(stub)
        child = symtrace.load_bundle(tmp_path / "child")
        lineage = child.lineage
        live_llm = [i for i in lineage["live_events"] if i.startswith("agent_action")]
        # the endpoint served exactly the anchor and the live calls after it
        assert stub.served - before == len(live_llm) >= 1
        assert stub.requests[before]["messages"][-1] == {
            "role": "user",
            "content": "Mention the date.",
        }
        assert (
            child.by_id[lineage["intervention"]["event_id"]].request["body"]["messages"][-1][
                "content"
            ]
            == "Mention the date."
        )
        assert lineage["anchor"] == anchor
        assert lineage["live_events"] and lineage["replayed_events"][0] == "agent_action_0000"
        served = stub.served
        with symtrace.replay(tmp_path / "child"):
            agent_loop(stub)
        assert stub.served == served

    def test_anchor_on_a_tool_result_moves_to_its_dependent_llm_call(
        self, tmp_path, stub_llm_factory
    ):
        stub = stub_llm_factory(script=TOOL_SCRIPT)
        with symtrace.record(tmp_path / "parent"):
            agent_loop(stub)
        with (
            pytest.warns(symtrace.SymtraceWarning, match="moved to agent_action_0001"),
            symtrace.replay(
                tmp_path / "parent", anchor="tool_result_0000", guidance="g", out=tmp_path / "child"
            ),
        ):
            agent_loop(stub)
        assert symtrace.load_bundle(tmp_path / "child").lineage["anchor"] == "agent_action_0001"

    def test_unknown_anchor_fails_before_anything_runs(self, tmp_path, stub_llm_factory):
        stub = stub_llm_factory(script=TOOL_SCRIPT)
        with symtrace.record(tmp_path / "parent"):
            agent_loop(stub)
        ran = []
        with (
            pytest.raises(symtrace.UnknownEvent),
            symtrace.replay(
                tmp_path / "parent",
                anchor="agent_action_0099",
                guidance="g",
                out=tmp_path / "child",
            ),
        ):
            ran.append(1)
        assert ran == [] and not (tmp_path / "child").exists()

    def test_divergent_prefix_writes_no_child(self, tmp_path, stub_llm_factory):
        stub = stub_llm_factory(script=TOOL_SCRIPT)
        with symtrace.record(tmp_path / "parent"):
            agent_loop(stub)
        with (
            pytest.raises(RequestMismatch),
            symtrace.replay(
                tmp_path / "parent",
                anchor="agent_action_0001",
                guidance="g",
                out=tmp_path / "child",
            ),
        ):
            agent_loop(stub, "a different question")
        assert not (tmp_path / "child").exists()
        assert not list(tmp_path.glob(".child.partial-*"))


class TestEgressGuard:
    def test_bypassing_httpx_to_a_recorded_endpoint_is_blocked_and_reported(self, tmp_path,
                                                                           stub_llm):
        import urllib.request

        with symtrace.record(tmp_path / "b"):
            client(stub_llm).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}])
        served = stub_llm.served
        with pytest.raises(EgressBlocked) as info, symtrace.replay(tmp_path / "b"):
            client(stub_llm).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}])
            try:  # the program swallows the refusal; the replay still fails
                urllib.request.urlopen(stub_llm.url + "/models", timeout=2)
            except OSError:
                pass
        assert info.value.report.boundary == "network"
        assert info.value.report.code == "SYM-R106"
        assert info.value.report.actual["connect"] == f"127.0.0.1:{stub_llm.port}"
        assert stub_llm.served == served


class TestEntropy:
    def test_random_draws_are_replayed_from_the_recorded_seed(self, tmp_path, stub_llm):
        import random

        def ask() -> str:
            topic = random.choice(["Lisbon", "Porto", "Faro", "Braga", "Evora", "Sintra"])
            number = random.randint(0, 10**9)
            return client(stub_llm).chat.completions.create(
                model="m", messages=[{"role": "user", "content": f"{topic} {number}"}]
            ).choices[0].message.content

        with symtrace.record(tmp_path / "b"):
            recorded = ask()
        random.seed(12345)  # the process state before replay must not matter
        with symtrace.replay(tmp_path / "b"):
            assert ask() == recorded
        seed = symtrace.load_bundle(tmp_path / "b").initial_state["random_seed"]
        assert isinstance(seed, int)


def test_an_abandoned_stream_is_still_recorded(tmp_path, stub_llm):
    def first_chunk() -> str:
        stream = client(stub_llm).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "stream"}], stream=True)
        for chunk in stream:  # read one chunk, never close the stream
            return chunk.id

    with symtrace.record(tmp_path / "b"):
        recorded = first_chunk()
    bundle = symtrace.load_bundle(tmp_path / "b")
    assert bundle.events[0].response["stream"] is True
    with symtrace.replay(tmp_path / "b"):
        assert first_chunk() == recorded


def test_calls_made_inside_a_tool_body_are_skipped_with_it(tmp_path, stub_llm):
    @symtrace.tool
    def summarise(text: str) -> str:  # a tool whose body asks the model itself
        return client(stub_llm).chat.completions.create(
            model="m", messages=[{"role": "user", "content": f"summarise {text}"}]
        ).choices[0].message.content

    def run() -> str:
        first = client(stub_llm).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "find facts"}]
        ).choices[0].message.content
        return summarise(first)

    with symtrace.record(tmp_path / "b"):
        recorded = run()
    events = symtrace.load_bundle(tmp_path / "b").events
    nested = [e for e in events if e.meta.get("within")]
    assert [e.type.value for e in nested] == ["agent_action"]
    served = stub_llm.served
    with symtrace.replay(tmp_path / "b"):
        assert run() == recorded
    assert stub_llm.served == served
    nested_id = nested[0].id
    with pytest.raises(symtrace.AnchorError, match="inside the body"), symtrace.replay(
            tmp_path / "b", anchor=nested_id, guidance="g"):
        pass
