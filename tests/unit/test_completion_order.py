"""Completion-order replay: recorded results are delivered in the order they completed.

Real HTTP through httpx to the embedded stub. While recording, the stub answers one request
slowly, so the request issued first completes last; on replay every result is instantly
available, and only the holding rule makes the program see them in the recorded order again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

import symtrace
from symtrace.bundle import load_bundle
from symtrace.bundle.completion import complete_bundle
from symtrace.errors import OrderUnreachable, UsageError
from symtrace.model.divergence import DivergenceKind, DivergenceReport
from symtrace.model.redaction import Redactor
from symtrace.replay.replayer import Replayer
from symtrace.session.core import instance_lane
from symtrace.session.scheduling import COMPLETED, completion_ranks
from symtrace.session.scheduling_options import SchedulingOptions

from ._support import chat_request, chat_response, llm_call, recorder, run, tool_call

SCRIPT = {
    "rules": [
        {"match": {"any_message_contains": "left"}, "reply": {"content": "L is done"}},
        {"match": {"any_message_contains": "right"}, "reply": {"content": "R is done"}},
        {"match": {"any_message_contains": "middle"}, "reply": {"content": "M is done"}},
    ],
    "default": {"content": "summary written"},
}
REPLAYS = 20  # the headline cases; variants replay fewer times (each replay ~0.3 s)
FEW = 5


@pytest.fixture
def stub(stub_llm_factory):
    return stub_llm_factory(script=SCRIPT)


def slowed(stub, delays: dict[str, float]) -> None:
    """Make the stub answer requests whose last message contains a key that much later."""
    answer = stub.answer

    def delayed(body, call_index):
        text = str(body["messages"][-1]["content"])
        time.sleep(sum(s for key, s in delays.items() if key in text))
        return answer(body, call_index)

    stub.answer = delayed


def body(text: str) -> dict:
    return {"model": "m", "messages": [{"role": "user", "content": text}]}


def reply(response: httpx.Response) -> str:
    return response.json()["choices"][0]["message"]["content"]


async def fan_out(url: str, words=("left", "right"), sequential: bool = False) -> list[str]:
    """Ask concurrently; the follow-up request lists the answers in the order they came."""
    seen: list[str] = []
    async with httpx.AsyncClient() as client:

        async def ask(word: str) -> None:
            seen.append(reply(await client.post(f"{url}/chat/completions", json=body(word))))

        if sequential:
            for word in words:
                await ask(word)
        else:
            await asyncio.gather(*(ask(w) for w in words))
        summary = await client.post(
            f"{url}/chat/completions", json=body("summarise: " + "; ".join(seen))
        )
    return [*seen, reply(summary)]


def threaded_fan_out(url: str, words=("left", "right")) -> list[str]:
    seen: list[str] = []
    with httpx.Client() as client:

        def ask(word: str) -> None:
            seen.append(reply(client.post(f"{url}/chat/completions", json=body(word))))

        threads = [threading.Thread(target=ask, args=(w,)) for w in words]
        for thread in threads:
            thread.start()
            time.sleep(0.01)
        for thread in threads:
            thread.join(10)
        summary = client.post(f"{url}/chat/completions", json=body("summarise: " + "; ".join(seen)))
    return [*seen, reply(summary)]


def pooled_fan_out(url: str, first: str, workers: int = 1) -> list[str]:
    """Each word asked by a sync call on a ThreadPoolExecutor, in the order *first* says."""
    words = ("left", "right") if first == "left" else ("right", "left")
    seen: list[str] = []
    with httpx.Client() as client:

        def ask(word: str) -> None:
            seen.append(reply(client.post(f"{url}/chat/completions", json=body(word))))

        async def main() -> None:
            loop = asyncio.get_running_loop()
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="pool") as pool:
                await asyncio.gather(*(loop.run_in_executor(pool, ask, w) for w in words))

        asyncio.run(main())
        summary = client.post(f"{url}/chat/completions", json=body("summarise: " + "; ".join(seen)))
    return [*seen, reply(summary)]


def record(path, program):
    with symtrace.record(path, task="fan-out", adapters=[]):
        return program()


def replay(path, program, **options):
    with symtrace.replay(path, adapters=[], **options):
        return program()


class TestAsyncGather:
    def test_first_issued_completing_last_replays_in_recorded_order(self, stub, tmp_path):
        slowed(stub, {"left": 0.3})
        program = lambda: asyncio.run(fan_out(stub.url))  # noqa: E731
        recorded = record(tmp_path / "b", program)
        assert recorded[:2] == ["R is done", "L is done"]  # right finished first
        served = stub.served
        for _ in range(REPLAYS):
            assert replay(tmp_path / "b", program) == recorded
        assert stub.served == served  # 0 endpoint requests

    def test_first_issued_completing_first_replays_too(self, stub, tmp_path):
        slowed(stub, {"right": 0.3})
        program = lambda: asyncio.run(fan_out(stub.url))  # noqa: E731
        recorded = record(tmp_path / "b", program)
        assert recorded[:2] == ["L is done", "R is done"]
        for _ in range(FEW):
            assert replay(tmp_path / "b", program) == recorded

    def test_three_way_fan_out(self, stub, tmp_path):
        slowed(stub, {"left": 0.4, "middle": 0.2})
        words = ("left", "middle", "right")
        program = lambda: asyncio.run(fan_out(stub.url, words))  # noqa: E731
        recorded = record(tmp_path / "b", program)
        assert recorded[:3] == ["R is done", "M is done", "L is done"]
        for _ in range(FEW):
            assert replay(tmp_path / "b", program) == recorded

    def test_without_the_holding_rule_the_summary_diverges(self, stub, tmp_path):
        # what a replayer that serves each call at once does: the failure issue 11 reports
        slowed(stub, {"left": 0.3})
        program = lambda: asyncio.run(fan_out(stub.url))  # noqa: E731
        record(tmp_path / "b", program)
        bundle = load_bundle(tmp_path / "b")
        assert completion_ranks(bundle.events) is not None
        with (
            pytest.raises(symtrace.RequestMismatch) as info,
            symtrace.replay(tmp_path / "b", adapters=[]) as handle,
        ):
            handle.session.order.disable()
            program()
        assert info.value.report.event_id == "agent_action_0002"  # the summary request


class TestThreads:
    def test_threads_replay_in_recorded_order(self, stub, tmp_path):
        slowed(stub, {"left": 0.3})
        program = lambda: threaded_fan_out(stub.url)  # noqa: E731
        recorded = record(tmp_path / "b", program)
        assert recorded[:2] == ["R is done", "L is done"]
        served = stub.served
        for _ in range(REPLAYS):
            assert replay(tmp_path / "b", program) == recorded
        assert stub.served == served


class TestUnreachable:
    def test_waiting_on_the_held_result_is_a_typed_divergence(
        self, stub, tmp_path
    ):
        slowed(stub, {"left": 0.3})
        record(tmp_path / "b", lambda: asyncio.run(fan_out(stub.url)))
        # the program now awaits "left" before it asks "right", which completed first
        started = time.monotonic()
        with pytest.raises(OrderUnreachable) as info:
            replay(tmp_path / "b", lambda: asyncio.run(fan_out(stub.url, sequential=True)),
                   order_timeout=0.3)
        assert time.monotonic() - started < 5
        report = info.value.report
        assert report.kind is DivergenceKind.ORDER_UNREACHABLE
        assert report.code == "SYM-R105"
        events = {e.id: e for e in load_bundle(tmp_path / "b").events}
        left, right = (e for e in events.values() if e.is_llm and e.position < 2)
        assert report.event_id == left.id
        assert report.lane == left.lane
        assert [c.id for c in report.waiting_for] == [right.id]
        assert "SYM-R105" in str(info.value) and right.id in str(info.value)
        assert DivergenceReport.from_json(report.to_json()) == report

    def test_a_lone_thread_fails_at_once(self, tmp_path):
        """A held call whose turn can only come from a call the one thread of the process
        would make after it fails at once, not after the 60 s stall timeout. Run in a fresh
        interpreter: in this one, the suite's session-scoped stub servers are other threads
        (which once made this test skip itself whenever the suite ran whole)."""
        session, writer = recorder(tmp_path / "b")
        run(session, llm_call(chat_request("a"), lane="alice"), chat_response("x"))
        run(session, llm_call(chat_request("b"), lane="bob"), chat_response("y"))
        complete_bundle(writer, exit_code=0, status="ok")
        script = (
            "import threading, time\n"
            "from symtrace.bundle import load_bundle\n"
            "from symtrace.errors import OrderUnreachable\n"
            "from symtrace.model.redaction import Redactor\n"
            "from symtrace.replay.replayer import Replayer\n"
            "from symtrace.session.scheduling_options import SchedulingOptions\n"
            "from tests.unit._support import chat_request, llm_call, run\n"
            "assert threading.active_count() == 1, threading.enumerate()\n"
            f"replayer = Replayer(load_bundle({str(tmp_path / 'b')!r}), Redactor(),\n"
            "                    scheduling=SchedulingOptions(60))\n"
            "started = time.monotonic()\n"
            "try:\n"
            "    run(replayer, llm_call(chat_request('b'), lane='bob'), None)\n"
            "except OrderUnreachable:\n"
            "    print('unreachable after', time.monotonic() - started)\n"
        )
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=120, cwd=Path(__file__).resolve().parents[2])
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("unreachable after"), done.stdout
        assert float(done.stdout.split()[-1]) < 30  # at once, not at the 60 s stall timeout

    @pytest.mark.parametrize("bad", ["soon", "0", "-1", "nan", "inf", 0, -2.5, True])
    def test_bad_timeout_value_is_refused_before_anything_runs(self, stub, tmp_path, bad):
        record(tmp_path / "b", lambda: asyncio.run(fan_out(stub.url)))
        ran = []
        with pytest.raises(UsageError, match="order timeout"):
            replay(tmp_path / "b", lambda: ran.append(1), order_timeout=bad)
        assert ran == []


class TestStarvedPool:
    """A hold blocks the thread it runs on. On a one-worker pool the held call occupies the
    only worker, and the call whose result completed first in the recording waits in the
    pool's queue behind it: it can never run. Nothing can release that hold (the held call
    must return its value on that very thread, and running the queued work inside it would
    break the serial execution the pool promises), so replay fails closed, naming the pool.
    It fails after the order timeout, not at once: a blocker might still come from another
    thread or the event loop, which symtrace cannot rule out."""

    def test_the_recorded_submission_order_replays(self, stub, tmp_path):
        recorded = record(tmp_path / "b", lambda: pooled_fan_out(stub.url, "right"))
        assert recorded[:2] == ["R is done", "L is done"]
        for _ in range(FEW):
            assert replay(tmp_path / "b", lambda: pooled_fan_out(stub.url, "right")) == recorded

    def test_the_other_submission_order_fails_naming_the_pool(self, stub, tmp_path):
        record(tmp_path / "b", lambda: pooled_fan_out(stub.url, "right"))
        with pytest.raises(OrderUnreachable) as info:
            replay(tmp_path / "b", lambda: pooled_fan_out(stub.url, "left"), order_timeout=1)
        report = info.value.report
        assert report.code == "SYM-R105"
        assert "ThreadPoolExecutor" in report.hint and "max_workers=1" in report.hint
        assert "1 queued" in report.hint
        assert [c.id for c in report.waiting_for] == ["agent_action_0000"]

    def test_a_wider_pool_replays_the_other_submission_order(self, stub, tmp_path):
        recorded = record(tmp_path / "b", lambda: pooled_fan_out(stub.url, "right"))
        for _ in range(FEW):  # the held call takes one worker; the other runs the blocker
            replayed = replay(tmp_path / "b", lambda: pooled_fan_out(stub.url, "left", 2))
            assert replayed == recorded


class TestCancelled:
    def test_a_cancelled_held_call_does_not_hold_back_later_ones(self, stub, tmp_path):
        slowed(stub, {"middle": 0.15, "right": 0.3})
        words = ("left", "middle", "right")
        record(tmp_path / "b", lambda: asyncio.run(fan_out(stub.url, words)))

        async def program() -> list[str]:
            got: list[str] = []
            async with httpx.AsyncClient() as client:

                async def ask(word: str) -> None:
                    response = await client.post(f"{stub.url}/chat/completions", json=body(word))
                    got.append(reply(response))

                middle = asyncio.create_task(ask("middle"))  # held: left completed first
                await asyncio.sleep(0.05)
                middle.cancel()
                right = asyncio.create_task(ask("right"))  # held for left only now
                await asyncio.sleep(0.05)
                assert got == []
                await ask("left")
                await right
            return got

        with (
            pytest.raises(symtrace.MissingCall) as info,  # it never sends the summary
            symtrace.replay(tmp_path / "b", adapters=[]),
        ):
            assert asyncio.run(program()) == ["L is done", "R is done"]
        assert info.value.report.event_id == "agent_action_0003"


class TestBundleFormat:
    def test_results_carry_their_completion_rank(self, stub, tmp_path):
        slowed(stub, {"left": 0.3})
        record(tmp_path / "b", lambda: asyncio.run(fan_out(stub.url)))
        events = load_bundle(tmp_path / "b").events
        ranks = {
            e.request["body"]["messages"][0]["content"]: e.meta[COMPLETED]
            for e in events if e.is_llm
        }
        assert ranks["right"] < ranks["left"] < ranks["summarise: R is done; L is done"]

    def test_unstamped_bundles_replay_without_holding(self, stub, tmp_path):
        program = lambda: asyncio.run(fan_out(stub.url, sequential=True))  # noqa: E731
        record(tmp_path / "b", program)
        events = load_bundle(tmp_path / "b").events
        stripped = [e.__class__.from_json({**e.to_json(), "meta": {}}) for e in events]
        assert completion_ranks(stripped) is None
        assert completion_ranks(events) is not None


class TestLaneIdentity:
    def test_instances_sharing_a_name_get_their_own_lane(self, tmp_path):
        first, second = object(), object()
        assert instance_lane(first, "writer") == "writer"  # no session: the name
        for _ in range(2):  # the same lanes in every session: creation order decides
            with symtrace.record(tmp_path / "b", adapters=[], overwrite=True):
                assert instance_lane(first, "writer") == "writer"
                assert instance_lane(second, "writer") == "writer@2"
                assert instance_lane(first, "writer") == "writer"
                assert instance_lane(second, "critic") == "critic"


async def race(url: str, wait_for_loser: bool = False) -> list[str]:
    """The first answer wins; the other call is cancelled before its response arrives."""
    async with httpx.AsyncClient() as client:

        async def ask(word: str) -> str:
            return reply(await client.post(f"{url}/chat/completions", json=body(word)))

        tasks = [asyncio.create_task(ask(w)) for w in ("left", "right")]
        if wait_for_loser:
            await tasks[1]
        done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        winner = done.pop().result()
        return [winner, await ask(f"summarise: {winner}")]


class TestAbandoned:
    def test_a_cancelled_call_is_recorded_and_replays_as_cancelled(self, stub, tmp_path):
        slowed(stub, {"right": 0.5})
        program = lambda: asyncio.run(race(stub.url))  # noqa: E731
        recorded = record(tmp_path / "b", program)
        assert recorded == ["L is done", "summary written"]
        (loser,) = [e for e in load_bundle(tmp_path / "b").events if e.meta.get("abandoned")]
        assert loser.response is None and COMPLETED not in loser.meta
        assert loser.request["body"]["messages"][0]["content"] == "right"
        served = stub.served
        for _ in range(FEW):  # the loser is held until the program cancels it again
            assert replay(tmp_path / "b", program) == recorded
        assert stub.served == served

    def test_a_selective_run_failing_with_a_call_in_flight_keeps_it_and_ends_the_session(
        self, stub, tmp_path
    ):
        """The child is sealed while its live anchor call is still open: the call goes into
        the child before the seal, and the session ends (the next one is not refused)."""
        slowed(stub, {"check the figures": 0.8})  # the guidance: only the live call is slow

        def ask() -> None:
            # when the program failed first, the call is still waiting as the test ends and
            # the stub stops: that is the thread's own business, not an unhandled error
            with contextlib.suppress(httpx.TransportError):
                httpx.post(f"{stub.url}/chat/completions", json=body("right"))

        def program(fail: bool) -> None:
            asking = threading.Thread(
                target=ask,
                name="background",
                daemon=True,
            )
            asking.start()
            if fail:  # fails while the call is still waiting for its answer (the endpoint
                # has it: a state, not a time; a loaded machine may take long to send it)
                deadline = time.monotonic() + 30
                while len(stub.requests) < 2 and time.monotonic() < deadline:  # 1: recording
                    time.sleep(0.01)
                raise RuntimeError("the program failed")
            asking.join()

        record(tmp_path / "b", lambda: program(fail=False))
        anchor = load_bundle(tmp_path / "b").events[0].id
        with pytest.raises(RuntimeError), symtrace.replay(
            tmp_path / "b", anchor=anchor, guidance="check the figures", out=tmp_path / "child",
            adapters=[],
        ):
            program(fail=True)
        child = load_bundle(tmp_path / "child")
        assert child.manifest["outcome"]["status"] == "error"
        (open_call,) = [e for e in child.events if e.meta.get("abandoned")]
        assert open_call.response is None and "check the figures" in str(open_call.request)
        record(tmp_path / "again", lambda: None)  # no session left active

    def test_waiting_for_a_result_that_never_came_is_unreachable(
        self, stub, tmp_path
    ):
        slowed(stub, {"right": 0.5})
        record(tmp_path / "b", lambda: asyncio.run(race(stub.url)))
        with pytest.raises(OrderUnreachable) as info:
            replay(tmp_path / "b", lambda: asyncio.run(race(stub.url, wait_for_loser=True)),
                   order_timeout=0.3)
        report = info.value.report
        assert report.waiting_for == ()
        assert "never came in the recording" in report.hint


class TestAbandonedStream:
    def test_a_stream_left_open_completes_where_it_reached_the_program(
        self, stub_llm_factory, tmp_path
    ):
        stub = stub_llm_factory(script=SCRIPT, chunk_delay=0.01)

        def program() -> list[str]:
            with httpx.Client() as client:
                request = client.build_request(
                    "POST", f"{stub.url}/chat/completions", json={**body("left"), "stream": True}
                )
                stream = client.send(request, stream=True)
                first = next(stream.iter_bytes())  # read a little, never close it
                after = reply(client.post(f"{stub.url}/chat/completions", json=body("right")))
                return [first.decode()[:5], after]

        recorded = record(tmp_path / "b", program)
        ranks = {
            e.request["body"]["messages"][0]["content"]: e.meta[COMPLETED]
            for e in load_bundle(tmp_path / "b").events if e.is_llm
        }
        assert ranks["left"] < ranks["right"]  # not at the end of the session
        for _ in range(FEW):
            assert replay(tmp_path / "b", program, order_timeout=2) == recorded


PROGRAM = '''
import asyncio, os, sys
sys.path.insert(0, os.environ["FAN_OUT_ROOT"])
from tests.unit.test_completion_order import fan_out
print(asyncio.run(fan_out(os.environ["FAN_OUT_URL"], sequential="SEQUENTIAL" in os.environ)))
'''


class TestCli:
    def test_unreachable_order_exits_90_with_a_structured_report(self, stub, tmp_path):
        slowed(stub, {"left": 0.3})
        program = tmp_path / "fan_out.py"
        program.write_text(PROGRAM)
        root = str(Path(__file__).parents[2])
        env = {**os.environ, "FAN_OUT_URL": stub.url, "FAN_OUT_ROOT": root}

        def cli(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([sys.executable, "-m", "symtrace", *args],
                                  env={**env, **extra}, capture_output=True, text=True,
                                  timeout=120)

        recorded = cli("record", "-o", str(tmp_path / "b"), "--", sys.executable, str(program))
        assert recorded.returncode == 0, recorded.stderr
        # releases from facts only (no state inference) reach the child and replay the order
        replayed = cli("replay", str(tmp_path / "b"), "--no-state-inference", "--quiet")
        assert replayed.returncode == 0, replayed.stderr
        report = tmp_path / "report.json"
        for bad in ("soon", "0"):  # refused before the program starts: nothing written
            refused = cli("replay", str(tmp_path / "b"), "--order-timeout", bad,
                          "--report-json", str(report), SEQUENTIAL="1")
            assert refused.returncode == 2 and "order-timeout" in refused.stderr
            assert not report.exists()
        started = time.monotonic()
        diverged = cli("replay", str(tmp_path / "b"), "--report-json", str(report),
                       "--order-timeout", "0.5", SEQUENTIAL="1")
        assert time.monotonic() - started < 15  # the 0.5 s reached the child, not the 20 s
        assert diverged.returncode == 90
        found = json.loads(report.read_text())["report"]
        assert (found["code"], found["kind"]) == ("SYM-R105", "order_unreachable")
        assert [c["id"] for c in found["waiting_for"]] == ["agent_action_0001"]
        assert "SYM-R105" in diverged.stderr


class TestHandOff:
    def test_a_tool_whose_body_replays_is_not_held_behind_its_own_calls(self, tmp_path):
        # A hand-off (CrewAI delegation): the tool body runs the coworker on the tool's lane,
        # when recording and again on replay. Its result completes after the coworker's call.
        session, writer = recorder(tmp_path / "b")
        lane = "manager/tool#0"
        handoff = session.begin(tool_call("delegate", {"to": "coworker"}, lane=lane))
        run(session, llm_call(chat_request("coworker task"), lane=lane), chat_response("done"))
        session.finish(handoff, {"ok": True, "value": "coworker says done"})
        run(session, llm_call(chat_request("wrap up")), chat_response("bye"))
        complete_bundle(writer, exit_code=0, status="ok")
        bundle = load_bundle(tmp_path / "b")
        ranks = completion_ranks(bundle.events)
        assert ranks is not None and "tool_call_0000" not in ranks
        assert set(ranks) == {"agent_action_0000", "agent_action_0001"}

        replayer = Replayer(bundle, Redactor(), scheduling=SchedulingOptions(1))
        replayer.begin(tool_call("delegate", {"to": "coworker"}, lane=lane))  # not held
        # its begin hands the program nothing (the body runs): this thread is no receiver a
        # coworker on another thread would wait for (CrewAI hierarchical, without inference)
        assert replayer.handoff.receiver is None
        run(replayer, llm_call(chat_request("coworker task"), lane=lane), None)
        run(replayer, llm_call(chat_request("wrap up")), None)
        replayer.close()
