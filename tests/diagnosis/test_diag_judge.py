"""The semantic judge: confirm/reject only (L^f ⊆ L^r), no evaluator data in what it sees,
rationale kept for audit, typed errors for bad answers. Driven through httpx.MockTransport."""

from __future__ import annotations

import json

import httpx
import pytest

from symtrace.diagnosis import Category, JudgeError, OpenAIJudge, diagnose
from symtrace.diagnosis.judge import parse_verdict

from ._support import gold_c3, gold_c4


def completion(content: str) -> dict:
    return {
        "id": "j",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
    }


class FakeJudgeServer:
    """Answers every judge call with *answer(request_json)*; keeps the requests."""

    def __init__(self, answer):
        self.answer = answer
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        body = json.loads(request.content)
        shown = json.loads(body["messages"][1]["content"])
        return httpx.Response(200, json=completion(self.answer(shown)))

    def judge(self, **kwargs) -> OpenAIJudge:
        client = httpx.Client(transport=httpx.MockTransport(self))
        return OpenAIJudge("http://judge.local/v1/", "judge-model", client=client, **kwargs)


def confirm_all(confidence=0.8, extra=()):
    def answer(shown):
        cats = [c["category"] for c in shown["proposed_categories"]] + list(extra)
        return json.dumps({"confirmed": cats, "confidence": confidence, "rationale": "ok"})

    return answer


class TestProtocol:
    def test_request_shape(self):
        server = FakeJudgeServer(confirm_all())
        diagnose(gold_c4(), judge=server.judge(api_key="k-123", json_mode=True))
        request = server.requests[0]
        assert request.url == "http://judge.local/v1/chat/completions"
        assert request.headers["authorization"] == "Bearer k-123"
        body = json.loads(request.content)
        assert body["model"] == "judge-model" and body["temperature"] == 0
        assert body["response_format"] == {"type": "json_object"}
        assert "never add another one" in body["messages"][0]["content"]

    def test_only_triggered_nodes_are_judged(self):
        server = FakeJudgeServer(confirm_all())
        d = diagnose(gold_c3(), judge=server.judge())
        assert len(server.requests) == sum(1 for n in d.nodes if n.evidence)

    def test_evaluator_information_is_stripped(self):
        """GOLD-C4's task carries the evaluator's expected products; the judge never sees it."""
        server = FakeJudgeServer(confirm_all())
        diagnose(gold_c4(), judge=server.judge())
        for request in server.requests:
            assert b"Ida Workout" not in request.content
            assert b"evaluator" not in request.content.lower()

    def test_judge_confidence_is_c_llm(self):
        server = FakeJudgeServer(confirm_all(confidence=0.3))
        d = diagnose(gold_c4(), judge=server.judge())
        node = d.node("agent_action_0000")
        assert node.features.c_llm == 0.3
        assert node.verdict.model == "judge-model" and node.verdict.rationale == "ok"
        assert d.judge == "judge-model @ http://judge.local/v1"


class TestSubsetConstraint:
    def test_judge_cannot_add_categories(self):
        """A category the rules did not propose is dropped (L^f ⊆ L^r)."""
        server = FakeJudgeServer(confirm_all(extra=("C2", "C3")))
        d = diagnose(gold_c4(), judge=server.judge())
        assert d.node("agent_action_0000").confirmed == (Category.C4,)

    def test_rejected_node_gets_zero_suspiciousness(self):
        """Rejecting every category removes the node from C; the anchor moves on."""

        def answer(shown):
            reject = shown["node"]["id"] == "agent_action_0000"
            cats = [] if reject else [c["category"] for c in shown["proposed_categories"]]
            return json.dumps({"confirmed": cats, "confidence": 0.9, "rationale": "r"})

        d = diagnose(gold_c3(), judge=FakeJudgeServer(answer).judge())
        node = d.node("agent_action_0000")
        assert node.proposed and not node.confirmed and node.scores is None and node.c_f == 0
        assert d.anchor.symptom == "tool_call_0000"

    def test_partial_confirmation_keeps_only_supporting_evidence(self):
        def answer(shown):
            return json.dumps({"confirmed": ["C4"], "confidence": 0.9})

        d = diagnose(gold_c3(), judge=FakeJudgeServer(answer).judge())
        node = d.node("agent_action_0000")
        assert node.confirmed == (Category.C4,)
        assert {e.category for e in node.confirmed_evidence} == {Category.C4}
        assert {e.category for e in d.anchor.evidence} <= {Category.C4}


class TestBadAnswers:
    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("I think it is C3.", "no JSON object"),
            ('{"confidence": 0.5}', "'confirmed' list"),
            ('{"confirmed": ["C3"]}', "numeric 'confidence'"),
            ('{"confirmed": ["C9"], "confidence": 1}', "unknown category"),
        ],
    )
    def test_malformed_verdicts(self, text, message):
        with pytest.raises(JudgeError, match=message):
            parse_verdict(text, (Category.C3,), "m")

    def test_lenient_where_it_is_safe(self):
        """Prose around the JSON, 'C3: …' labels and out-of-range confidences are handled."""
        verdict = parse_verdict(
            'Sure! {"confirmed": ["c3: error"], "confidence": 7}', (Category.C3,), "m"
        )
        assert verdict.confirmed == (Category.C3,) and verdict.confidence == 1.0

    def test_http_error(self):
        transport = httpx.MockTransport(lambda r: httpx.Response(503, text="overloaded"))
        judge = OpenAIJudge("http://j/v1", "m", client=httpx.Client(transport=transport))
        with pytest.raises(JudgeError, match="HTTP 503"):
            diagnose(gold_c4(), judge=judge)

    def test_not_a_completion(self):
        transport = httpx.MockTransport(lambda r: httpx.Response(200, json={"nope": 1}))
        judge = OpenAIJudge("http://j/v1", "m", client=httpx.Client(transport=transport))
        with pytest.raises(JudgeError, match="chat completion"):
            diagnose(gold_c4(), judge=judge)

    def test_connection_error(self):
        def fail(request):
            raise httpx.ConnectError("refused", request=request)

        judge = OpenAIJudge(
            "http://j/v1", "m", client=httpx.Client(transport=httpx.MockTransport(fail))
        )
        with pytest.raises(JudgeError, match="failed"):
            diagnose(gold_c4(), judge=judge)

    def test_owned_client_is_closed(self):
        judge = OpenAIJudge("http://j/v1", "m")
        client = judge.client
        with judge:
            pass
        assert client.is_closed
