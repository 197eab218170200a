"""OpenTelemetry export of recorded framework bundles, checked with the SDK's in-memory exporter."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

pytest.importorskip("opentelemetry.sdk", reason="needs the otel extra")

from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes
from opentelemetry.trace import SpanKind, StatusCode

from symtrace.bundle import Bundle, load_bundle
from symtrace.export.otel import export_spans, otlp_json, otlp_request
from symtrace.export.spans import STEP_NS, plan_trace
from symtrace.model.events import Edge, EdgeKind, Event, EventType

BUNDLES = Path(__file__).resolve().parents[2] / "bundles"
REAL = ["autogen_agentchat-magentic_one", "crewai-sequential", "ag2-groupchat_auto"]


def finished(bundle: Bundle, **options: object) -> list:
    exporter = InMemorySpanExporter()
    export_spans(bundle, exporter, **options)
    return list(exporter.get_finished_spans())


def by_event(spans: list) -> dict[str, object]:
    return {s.attributes["symtrace.event_id"]: s for s in spans
            if "symtrace.event_id" in s.attributes}


@pytest.fixture(scope="module", params=REAL)
def real(request: pytest.FixtureRequest) -> Bundle:
    return load_bundle(BUNDLES / request.param)


class TestTreeOfARealRecording:
    def test_one_span_per_event_plus_agents_and_root(self, real: Bundle) -> None:
        spans = finished(real)
        events = by_event(spans)
        agents = {e.agent for e in real.events if e.agent}
        assert sorted(events) == sorted(e.id for e in real.events)
        assert len(spans) == len(real.events) + len(agents) + 1
        assert len({s.context.trace_id for s in spans}) == 1
        assert [s.name for s in spans if s.parent is None] == [f"invoke_workflow {real.path.name}"]

    def test_agents_parent_their_llm_and_tool_spans(self, real: Bundle) -> None:
        spans = finished(real)
        events = by_event(spans)
        agent_span = {s.attributes["gen_ai.agent.name"]: s for s in spans
                      if s.name.startswith("invoke_agent ")}
        root = next(s for s in spans if s.parent is None)
        assert {a.parent.span_id for a in agent_span.values()} == {root.context.span_id}
        for event in real.events:
            span = events[event.id]
            if event.type is EventType.TOOL_RESULT:
                call = next(p for p in event.parent_ids
                            if real.by_id[p].type is EventType.TOOL_CALL)
                assert span.parent.span_id == events[call].context.span_id
            elif event.meta.get("within"):
                assert span.parent.span_id == events[event.meta["within"]].context.span_id
            elif event.agent:
                assert span.parent.span_id == agent_span[event.agent].context.span_id
            else:
                assert span.parent.span_id == root.context.span_id

    def test_every_data_edge_not_the_parent_is_a_link(self, real: Bundle) -> None:
        spans = finished(real)
        events = by_event(spans)
        event_of = {s.context.span_id: eid for eid, s in events.items()}
        links = 0
        for event in real.events:
            span = events[event.id]
            parent = event_of.get(span.parent.span_id)
            expected = {e.source for e in event.parents
                        if e.kind is EdgeKind.DATA and e.source != parent}
            assert {event_of[link.context.span_id] for link in span.links} == expected
            assert all(link.attributes["symtrace.edge.kind"] == "data" for link in span.links)
            links += len(expected)
        assert links > 0  # these recordings hand data between agents

    def test_children_lie_inside_their_parents_in_observed_order(self, real: Bundle) -> None:
        spans = finished(real)
        by_id = {s.context.span_id: s for s in spans}
        for span in spans:
            assert span.start_time < span.end_time
            if span.parent is not None:
                parent = by_id[span.parent.span_id]
                assert parent.start_time <= span.start_time <= span.end_time <= parent.end_time
        events = by_event(spans)
        starts = [events[e.id].start_time for e in real.events]
        assert starts == sorted(starts)
        assert starts[1] - starts[0] == STEP_NS

    def test_genai_attributes_follow_the_conventions(self, real: Bundle) -> None:
        spans = finished(real)
        events = by_event(spans)
        registry = {v for k, v in vars(gen_ai_attributes).items() if k.startswith("GEN_AI_")}
        for span in spans:
            unknown = {k for k in span.attributes if k.startswith("gen_ai.")} - registry
            assert not unknown, f"{span.name}: not in the GenAI registry: {unknown}"
        for event in real.events:
            span = events[event.id]
            assert span.attributes["symtrace.lane"] == event.lane
            assert span.attributes["symtrace.bundle"] == real.path.name
            if event.type is EventType.AGENT_ACTION:
                body = event.request["body"]
                reply = event.response["body"]
                assert span.name == f"chat {body['model']}"
                assert span.kind is SpanKind.CLIENT
                assert span.attributes["gen_ai.operation.name"] == "chat"
                assert span.attributes["gen_ai.provider.name"] == "openai"
                assert span.attributes["gen_ai.request.model"] == body["model"]
                assert span.attributes["gen_ai.usage.input_tokens"] == reply["usage"][
                    "prompt_tokens"]
                assert span.attributes["gen_ai.usage.output_tokens"] == reply["usage"][
                    "completion_tokens"]
                assert span.attributes["gen_ai.agent.name"] == event.agent
                messages = orjson.loads(span.attributes["gen_ai.input.messages"])
                assert len(messages) == len(body["messages"])
            elif event.type is EventType.TOOL_CALL:
                tool = event.request["tool"]
                assert span.name == f"execute_tool {tool}"
                assert span.kind is SpanKind.INTERNAL
                assert span.attributes["gen_ai.operation.name"] == "execute_tool"
                assert span.attributes["gen_ai.tool.name"] == tool
                if event.meta.get("call_id"):
                    assert span.attributes["gen_ai.tool.call.id"] == event.meta["call_id"]
        for agent in {e.agent for e in real.events if e.agent}:
            span = next(s for s in spans if s.name == f"invoke_agent {agent}")
            assert span.attributes["gen_ai.operation.name"] == "invoke_agent"
            assert span.attributes["gen_ai.agent.name"] == agent


class TestDeterminism:
    def test_two_exports_have_the_same_ids_and_bytes(self) -> None:
        bundle = load_bundle(BUNDLES / "crewai-sequential")
        again = load_bundle(BUNDLES / "crewai-sequential")
        first, second = finished(bundle), finished(again)
        assert [(s.context.trace_id, s.context.span_id, s.name) for s in first] == [
            (s.context.trace_id, s.context.span_id, s.name) for s in second]
        assert otlp_json(otlp_request(bundle)) == otlp_json(otlp_request(again))

    def test_each_bundle_is_its_own_trace(self) -> None:
        one = plan_trace(load_bundle(BUNDLES / "crewai-sequential"))
        other = plan_trace(load_bundle(BUNDLES / "crewai-tool_error"))
        assert one.trace_id != other.trace_id
        first = {s.event_id: s.span_id for s in one.spans}
        second = {s.event_id: s.span_id for s in other.spans}
        assert first["tool_call_0000"] != second["tool_call_0000"]


class TestErrors:
    def test_a_failed_tool_marks_its_result_and_execution(self) -> None:
        bundle = load_bundle(BUNDLES / "autogen_agentchat-streaming_tool_error")
        spans = by_event(finished(bundle))
        failed = [e for e in bundle.events
                  if e.type is EventType.TOOL_RESULT and e.response.get("ok") is False]
        assert failed
        for result in failed:
            span = spans[result.id]
            assert span.status.status_code is StatusCode.ERROR
            assert span.attributes["error.type"] == result.response["error"]["type"]
            execution = next(s for s in spans.values()
                             if s.context.span_id == span.parent.span_id)
            assert execution.name.startswith("execute_tool ")
            assert execution.status.status_code is StatusCode.ERROR
        ok = [s for s in spans.values() if s.name.startswith("chat ")]
        assert all(s.status.status_code is StatusCode.UNSET for s in ok)

    def test_an_http_error_of_the_llm_is_an_error_span(self, tmp_path: Path) -> None:
        bundle = synthetic(tmp_path, status=500)
        span = by_event(finished(bundle))["agent_action_0000"]
        assert span.status.status_code is StatusCode.ERROR
        assert span.attributes["error.type"] == "500"
        assert span.status.description == "overloaded"

    def test_a_failed_run_is_an_error_at_the_root(self, tmp_path: Path) -> None:
        bundle = synthetic(tmp_path, status=200, exit_code=3)
        spans = finished(bundle)
        root = next(s for s in spans if s.parent is None)
        assert root.status.status_code is StatusCode.ERROR
        assert by_event(spans)["final_result_0000"].attributes["symtrace.exit_code"] == 3


def test_a_child_bundle_links_to_its_parent_run(tmp_path: Path) -> None:
    parent = synthetic(tmp_path, status=200)
    child = synthetic(tmp_path, status=200, reply="repaired", lineage={
        "parent": str(parent.path), "parent_digest": parent.digest,
        "anchor": "agent_action_0000", "live_events": ["agent_action_0000"]})
    parent_spans, child_spans = finished(parent), finished(child)
    parent_root = next(s for s in parent_spans if s.parent is None)
    child_root = next(s for s in child_spans if s.parent is None)
    assert child_root.context.trace_id != parent_root.context.trace_id
    (link,) = child_root.links
    assert (link.context.trace_id, link.context.span_id) == (
        parent_root.context.trace_id, parent_root.context.span_id)
    assert link.attributes["symtrace.anchor"] == "agent_action_0000"
    events = by_event(child_spans)
    assert events["agent_action_0000"].attributes["symtrace.live"] is True
    assert events["final_result_0000"].attributes["symtrace.live"] is False
    assert "symtrace.live" not in by_event(parent_spans)["agent_action_0000"].attributes


def test_a_crashed_run_still_exports_what_was_recorded(tmp_path: Path) -> None:
    call = Event("tool_call_0000", 0, EventType.TOOL_CALL, "worker", agent="worker",
                 request={"tool": "fetch", "arguments": {"url": "x"}}).with_hashes()
    manifest = {"format_version": 1, "kind": "recording", "complete": False, "task": None,
                "initial_state": {}, "config": {}, "outcome": {"status": "killed"}}
    spans = finished(Bundle(tmp_path / "crashed", manifest, (call,)))
    assert [s.name for s in spans] == ["invoke_workflow crashed", "invoke_agent worker",
                                       "execute_tool fetch"]
    assert spans[2].attributes["symtrace.unfinished"] is True
    assert spans[0].status.status_code is StatusCode.ERROR
    empty = finished(Bundle(tmp_path / "empty", manifest, ()))
    assert [s.name for s in empty] == ["invoke_workflow empty"]


def test_no_content_leaves_out_prompts_and_values() -> None:
    bundle = load_bundle(BUNDLES / "crewai-sequential")
    spans = finished(bundle, content=False)
    private = {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments",
               "gen_ai.tool.call.result", "symtrace.final_result"}
    assert not private & {k for s in spans for k in s.attributes}
    assert private & {k for s in finished(bundle) for k in s.attributes}


def test_otlp_json_is_the_otlp_mapping_and_round_trips() -> None:
    bundle = load_bundle(BUNDLES / "autogen_agentchat-magentic_one")
    request = otlp_request(bundle)
    data = orjson.loads(otlp_json(request))
    spans = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert len(spans) == len(request.resource_spans[0].scope_spans[0].spans)
    assert all(len(s["traceId"]) == 32 and len(s["spanId"]) == 16 for s in spans)
    assert {s["kind"] for s in spans} == {1, 3}  # INTERNAL, CLIENT as integers
    linked = [link for s in spans for link in s.get("links", [])]
    assert linked and all(len(link["spanId"]) == 16 for link in linked)
    # hex ids back to the protobuf JSON mapping's base64 gives the same message
    import base64

    for span in spans:
        for item in [span, *span.get("links", [])]:
            for key in ("traceId", "spanId", "parentSpanId"):
                if key in item:
                    item[key] = base64.b64encode(bytes.fromhex(item[key])).decode()
    assert ParseDict(data, ExportTraceServiceRequest()) == request


def synthetic(
    root: Path, *, status: int, exit_code: int = 0, reply: str = "hi",
    lineage: dict | None = None,
) -> Bundle:
    """A two-event bundle built in memory: one LLM call and the final result."""
    body = {"error": {"message": "overloaded"}} if status >= 400 else {
        "choices": [{"message": {"role": "assistant", "content": reply},
                     "finish_reason": "stop"}]}
    call = Event("agent_action_0000", 0, EventType.AGENT_ACTION, "main", agent="solo",
                 request={"method": "POST", "path": "/v1/chat/completions", "query": "",
                          "body": {"model": "m", "messages": [{"role": "user", "content": "x"}]}},
                 response={"status": status, "headers": {}, "body": body}).with_hashes()
    final = Event("final_result_0000", 1, EventType.FINAL_RESULT, "main",
                  parents=(Edge(call.id, EdgeKind.CONTROL),),
                  response={"exit_code": exit_code, "value": None, "stdout_tail": ""}
                  ).with_hashes()
    manifest = {"format_version": 1, "kind": "recording", "complete": True, "task": None,
                "initial_state": {}, "config": {},
                "outcome": {"status": "ok" if exit_code == 0 else "error",
                            "exit_code": exit_code}}
    if lineage is not None:
        manifest.update(kind="selective_replay", lineage=lineage)
    return Bundle(root / ("child" if lineage else "synthetic"), manifest, (call, final))
