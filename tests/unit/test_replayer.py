"""The fail-closed matcher: strict lanes, pooled lanes, first divergence, selective replay."""

from __future__ import annotations

import threading
import time

import pytest

from symtrace.bundle import load_bundle
from symtrace.bundle.completion import complete_bundle
from symtrace.errors import MissingCall, RequestMismatch, UnexpectedCall
from symtrace.model.divergence import DivergenceKind
from symtrace.model.redaction import Redactor
from symtrace.replay.replayer import Replayer

from ._support import (
    chat_request,
    chat_response,
    llm_call,
    recorder,
    run,
    run_concurrently,
    tool_call,
)


def record_sequential(path):
    session, writer = recorder(path)
    run(session, llm_call(chat_request("plan the trip")), chat_response("step one please"))
    run(
        session,
        tool_call("lookup", {"city": "Lisbon"}, call_id="c1"),
        {"ok": True, "value": "Lisbon: sunny and warm"},
    )
    run(
        session,
        llm_call(chat_request("plan the trip", "Lisbon: sunny and warm")),
        chat_response("write it"),
    )
    run(session, llm_call(chat_request("final")), chat_response("done"))
    complete_bundle(writer, exit_code=0, status="ok")
    return load_bundle(path)


def replayer(bundle, **kwargs):
    return Replayer(bundle, Redactor(), **kwargs)


class TestStrict:
    def test_serves_recorded_results_in_order(self, tmp_path):
        bundle = record_sequential(tmp_path / "b")
        r = replayer(bundle)
        assert (
            run(r, llm_call(chat_request("plan the trip")), None)["body"]["choices"][0]["message"][
                "content"
            ]
            == "step one please"
        )
        assert run(r, tool_call("lookup", {"city": "Lisbon"}), None) == {
            "ok": True,
            "value": "Lisbon: sunny and warm",
        }
        run(r, llm_call(chat_request("plan the trip", "Lisbon: sunny and warm")), None)
        run(r, llm_call(chat_request("final")), None)
        r.close()

    def test_mismatch_names_event_and_first_differing_path(self, tmp_path):
        bundle = record_sequential(tmp_path / "b")
        r = replayer(bundle)
        run(r, llm_call(chat_request("plan the trip")), None)
        with pytest.raises(RequestMismatch) as info:
            run(r, tool_call("lookup", {"city": "Porto"}), None)
        report = info.value.report
        assert report.kind is DivergenceKind.REQUEST_MISMATCH
        assert report.event_id == "tool_call_0000"
        assert report.matched_before == 1
        assert [d.path for d in report.differences] == ["/arguments/city"]
        assert report.differences[0].expected == "Lisbon"
        assert report.differences[0].actual == "Porto"

    def test_stays_diverged_even_if_the_program_swallows_it(self, tmp_path):
        bundle = record_sequential(tmp_path / "b")
        r = replayer(bundle)
        with pytest.raises(RequestMismatch) as first:
            run(r, llm_call(chat_request("something else")), None)
        # the program catches it and retries the "right" call: still refused
        with pytest.raises(RequestMismatch) as again:
            run(r, llm_call(chat_request("plan the trip")), None)
        assert again.value.report is first.value.report
        with pytest.raises(RequestMismatch):
            r.close()

    def test_extra_call_is_unexpected(self, tmp_path):
        bundle = record_sequential(tmp_path / "b")
        r = replayer(bundle)
        run(r, llm_call(chat_request("plan the trip")), None)
        run(r, tool_call("lookup", {"city": "Lisbon"}), None)
        run(r, llm_call(chat_request("plan the trip", "Lisbon: sunny and warm")), None)
        run(r, llm_call(chat_request("final")), None)
        with pytest.raises(UnexpectedCall) as info:
            run(r, llm_call(chat_request("one more")), None)
        assert info.value.report.kind is DivergenceKind.UNEXPECTED_CALL

    def test_missing_call_at_end(self, tmp_path):
        bundle = record_sequential(tmp_path / "b")
        r = replayer(bundle)
        run(r, llm_call(chat_request("plan the trip")), None)
        with pytest.raises(MissingCall) as info:
            r.close()
        assert info.value.report.event_id == "tool_call_0000"
        assert info.value.report.boundary == "end"

    def test_reordering_within_a_strict_lane_diverges(self, tmp_path):
        session, writer = recorder(tmp_path / "b")
        run(session, llm_call(chat_request("a"), lane="alice"), chat_response("x"))
        run(session, llm_call(chat_request("b"), lane="alice"), chat_response("y"))
        complete_bundle(writer, exit_code=0, status="ok")
        r = replayer(load_bundle(tmp_path / "b"))
        with pytest.raises(RequestMismatch) as info:
            run(r, llm_call(chat_request("b"), lane="alice"), None)
        assert info.value.report.event_id == "agent_action_0000"


    def test_an_llm_call_where_a_tool_call_was_recorded_diverges(self, tmp_path):
        bundle = record_sequential(tmp_path / "b")
        r = replayer(bundle)
        run(r, llm_call(chat_request("plan the trip")), None)
        # skips the recorded tool call and makes the next LLM call directly
        with pytest.raises(RequestMismatch) as info:
            run(r, llm_call(chat_request("plan the trip", "Lisbon: sunny and warm")), None)
        assert info.value.report.event_id == "tool_call_0000"


class TestLanes:
    def _record_parallel(self, path):
        session, writer = recorder(path)
        run(session, llm_call(chat_request("go")), chat_response("fan out now"))
        for city in ("Lisbon", "Porto", "Faro"):
            run(
                session,
                tool_call("weather", {"city": city}, lane="thread:w0"),
                {"ok": True, "value": f"{city} is sunny today"},
            )
        complete_bundle(writer, exit_code=0, status="ok")
        return load_bundle(path)

    def test_pooled_calls_may_interleave_differently(self, tmp_path):
        # other workers issue them, in another order: matched by content, and each result is
        # delivered in its recorded completion order (Lisbon, Porto, Faro)
        bundle = self._record_parallel(tmp_path / "b")
        r = replayer(bundle)
        run(r, llm_call(chat_request("go")), None)
        calls = [
            tool_call("weather", {"city": city}, lane=lane)
            for city, lane in (
                ("Faro", "thread:w1"), ("Lisbon", "thread:w0"), ("Porto", "thread:w2")
            )
        ]
        delivered = run_concurrently(r, calls)
        assert sorted(d["value"] for d in delivered) == [
            f"{city} is sunny today" for city in ("Faro", "Lisbon", "Porto")
        ]
        served = [e.request["arguments"]["city"] for e in r.events if e.type.value == "tool_call"]
        assert served == ["Lisbon", "Porto", "Faro"]
        r.close()

    def test_pooled_call_nobody_recorded_diverges(self, tmp_path):
        bundle = self._record_parallel(tmp_path / "b")
        r = replayer(bundle)
        run(r, llm_call(chat_request("go")), None)
        with pytest.raises(RequestMismatch):
            run(r, tool_call("weather", {"city": "Braga"}, lane="thread:w3"), None)

    def test_concurrent_lanes_interleave(self, tmp_path):
        session, writer = recorder(tmp_path / "b")
        run(session, llm_call(chat_request("a1"), lane="alice"), chat_response("x1"))
        run(session, llm_call(chat_request("b1"), lane="bob"), chat_response("y1"))
        run(session, llm_call(chat_request("a2"), lane="alice"), chat_response("x2"))
        complete_bundle(writer, exit_code=0, status="ok")
        r = replayer(load_bundle(tmp_path / "b"))
        alice = threading.Thread(target=lambda: [
            run(r, llm_call(chat_request(t), lane="alice"), None) for t in ("a1", "a2")
        ])
        alice.start()  # a2 is held until bob's b1 (completed before it) was delivered
        time.sleep(0.05)
        run(r, llm_call(chat_request("b1"), lane="bob"), None)
        alice.join(5)
        assert [e.id for e in r.events] == [
            "agent_action_0000", "agent_action_0001", "agent_action_0002"
        ]
        r.close()


class TestSelective:
    def test_prefix_replayed_anchor_and_descendants_live(self, tmp_path):
        bundle = record_sequential(tmp_path / "b")
        r = replayer(bundle, anchor="agent_action_0001", guidance="Check the weather twice.")
        run(r, llm_call(chat_request("plan the trip")), None)
        run(r, tool_call("lookup", {"city": "Lisbon"}), None)
        ticket = r.begin(llm_call(chat_request("plan the trip", "Lisbon: sunny and warm")))
        assert ticket.live
        messages = ticket.request["body"]["messages"]
        assert messages[-1] == {"role": "user", "content": "Check the weather twice."}
        r.finish(ticket, chat_response("a different plan"))
        # the next call is on the same (now live) lane: live, even though it differs
        ticket = r.begin(llm_call(chat_request("a brand new question")))
        assert ticket.live
        r.finish(ticket, chat_response("ok"))
        r.close()
        lineage = r.lineage("parent")
        assert lineage["replayed_events"] == [
            "agent_action_0000",
            "tool_call_0000",
            "tool_result_0000",
        ]
        assert lineage["anchor"] == "agent_action_0001"
        assert lineage["intervention"]["event_id"] == "agent_action_0003"  # new id, not reused
        assert "agent_action_0002" in lineage["superseded_events"]

    def test_prefix_is_still_strict(self, tmp_path):
        bundle = record_sequential(tmp_path / "b")
        r = replayer(bundle, anchor="agent_action_0001", guidance="g")
        with pytest.raises(RequestMismatch):
            run(r, llm_call(chat_request("a changed first prompt")), None)

    def test_other_lanes_keep_replaying_strictly_after_the_anchor(self, tmp_path):
        session, writer = recorder(tmp_path / "b")
        run(session, llm_call(chat_request("a1"), lane="alice"), chat_response("x1"))
        run(session, llm_call(chat_request("b1"), lane="bob"), chat_response("y1"))
        run(session, llm_call(chat_request("a2"), lane="alice"), chat_response("x2"))
        run(session, llm_call(chat_request("b2"), lane="bob"), chat_response("y2"))
        complete_bundle(writer, exit_code=0, status="ok")
        r = replayer(load_bundle(tmp_path / "b"), anchor="agent_action_0002", guidance="g")
        run(r, llm_call(chat_request("a1"), lane="alice"), None)
        run(r, llm_call(chat_request("b1"), lane="bob"), None)
        assert r.begin(llm_call(chat_request("a2"), lane="alice")).live
        assert not r.begin(llm_call(chat_request("b2"), lane="bob")).live  # not causally after
        with pytest.raises(UnexpectedCall):
            r.begin(llm_call(chat_request("b3"), lane="bob"))
