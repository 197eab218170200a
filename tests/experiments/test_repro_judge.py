"""RQ1's method-blinded reproduction judge: strict replies, blinding, stored verdicts that are
never asked again, agreement with the rule-based check. Fast: scripted stub, fake bundles."""

from __future__ import annotations

import orjson
import pytest
from symtrace_study import repro_judge
from symtrace_study.config import JudgeSpec
from symtrace_study.errors import JudgeReplyMalformed, JudgeUnavailable, StudyConfigError
from symtrace_study.repro_judge import (
    JUDGE_LOG,
    ReproductionJudge,
    ReproductionVerdict,
    agreement,
    judge_reproductions,
    parse_reply,
    verdict_log,
)

from symtrace.stub.server import StubLLM
from tests.experiments._support import config_for

VERDICT = '{"reproduced": true, "rationale": "the same empty query"}'


@pytest.mark.parametrize("text, reproduced", [
    (VERDICT, True),
    ('```json\n{"reproduced": false, "rationale": "another call"}\n```', False),
    ('My verdict: {"rationale": "same wrong total", "reproduced": true}', True),
])
def test_a_verdict_is_read_from_the_reply(text, reproduced):
    verdict = parse_reply(text)
    assert verdict.reproduced is reproduced and verdict.rationale


@pytest.mark.parametrize("text, needle", [
    ("yes, it reproduces", "no JSON object"),
    ('{"reproduced": "yes", "rationale": "x"}', "boolean 'reproduced'"),
    ('{"reproduced": 1, "rationale": "x"}', "boolean 'reproduced'"),
    ('{"reproduced": true}', "rationale"),
    ('{"reproduced": true, "rationale": "  "}', "rationale"),
])
def test_a_malformed_reply_is_a_typed_error_never_a_default(text, needle):
    with pytest.raises(JudgeReplyMalformed, match=needle) as caught:
        parse_reply(text)
    assert caught.value.exit_code == 94


def _rows():
    """One case, two replays and two reruns; the second replay diverged, one rerun passed."""
    base = {"phase": "rq1", "case": "plain/shop-001/s0", "task": "shop-001", "error": None,
            "signature": [{"category": "C1", "rules": ["c1_placeholder"],
                           "role": {"type": "agent_action", "agent": "assistant"},
                           "evidence": ["q"], "event": "agent_action_0003",
                           "facets": ["call:shop_get_order({})"]}]}
    return [
        {**base, "arm": "replay", "attempt": 1, "status": "reproduced", "passed": False,
         "bundle": "attempts/r1", "bundle_digest": "sha256:r1", "answer": 1, "reason": "wrong",
         "anchor": "agent_action_0003", "prefix_events": 3, "diverged": False},
        {**base, "arm": "replay", "attempt": 2, "status": "not_reproduced", "diverged": True},
        {**base, "arm": "rerun", "attempt": 1, "status": "not_reproduced", "passed": False,
         "bundle": "attempts/u1", "bundle_digest": "sha256:u1", "answer": 1, "reason": "wrong"},
        {**base, "arm": "rerun", "attempt": 2, "status": "not_reproduced", "passed": True,
         "bundle": "attempts/u2", "bundle_digest": "sha256:u2", "answer": 7, "reason": "ok"},
    ]


CASES = [{"case": "plain/shop-001/s0", "answer": 2, "reason": "wrong",
          "categories": ["C1"]}]


@pytest.fixture
def same_evidence(monkeypatch):
    """Every attempt bundle shows the same live evidence (whatever its method)."""
    monkeypatch.setattr(repro_judge.symtrace, "load_bundle", lambda path: path)
    monkeypatch.setattr(repro_judge, "attempt_evidence", lambda bundle, row, **kw: {
        "final_answer": row["answer"], "evaluator_reason": row["reason"], "symptoms": []})


def _config(tmp_path, **judge):
    return config_for(tmp_path, rq1={"k": 2, "judge": {"base_url": "http://127.0.0.1:9/v1",
                                                       "model": "j", **judge}})


def test_the_judge_cannot_tell_a_replay_from_a_rerun(tmp_path, same_evidence):
    config = _config(tmp_path)
    asked = []

    def judge(request):
        asked.append(request)
        return ReproductionVerdict(True, "same")

    assert judge_reproductions(config, _rows(), CASES, {}, judge=judge) == 2
    # the passing rerun and the diverged replay are not asked; the two asked are identical
    assert len(asked) == 2 and asked[0] == asked[1]
    text = orjson.dumps(asked[0]).decode()
    for leak in ("replay", "rerun", "attempts/", "prefix", "agent_action_0003", "seed"):
        assert leak not in text, leak
    assert asked[0]["task"]["text"] and "expected" not in text  # evaluator data stripped
    stored = [orjson.loads(line) for line in (config.out / JUDGE_LOG).read_bytes().splitlines()]
    assert {(v["arm"], v["attempt"]) for v in stored} == {("replay", 1), ("rerun", 1)}
    assert all(v["rationale"] == "same" and v["judge"]["model"] == "j" for v in stored)


def test_a_stored_verdict_is_never_asked_again_and_a_new_judge_asks_afresh(tmp_path,
                                                                           same_evidence):
    config = _config(tmp_path)
    answers = iter([ReproductionVerdict(True, "a")])

    def one_then_malformed(request):
        try:
            return next(answers)
        except StopIteration:
            raise JudgeReplyMalformed("the RQ1 judge's reply has no JSON object") from None

    with pytest.raises(JudgeReplyMalformed):
        judge_reproductions(config, _rows(), CASES, {}, judge=one_then_malformed)
    assert len(verdict_log(config.out).load()) == 1  # the first verdict is kept, no default
    asked = []
    judge_reproductions(config, _rows(), CASES, {},
                        judge=lambda r: asked.append(r) or ReproductionVerdict(False, "b"))
    assert len(asked) == 1  # only the attempt still unjudged
    assert judge_reproductions(config, _rows(), CASES, {}, judge=None) == 0  # nothing left
    other = _config(tmp_path, model="j2")
    assert judge_reproductions(other, _rows(), CASES, {},
                               judge=lambda r: ReproductionVerdict(True, "c")) == 2


def test_agreement_with_the_rule_based_check():
    rows = _rows()
    who = {"base_url": "http://x/v1", "model": "j"}
    verdicts = [
        {"case": rows[0]["case"], "arm": "replay", "attempt": 1, "bundle_digest": "sha256:r1",
         "judge": who, "reproduced": True, "rationale": "same"},
        {"case": rows[0]["case"], "arm": "rerun", "attempt": 1, "bundle_digest": "sha256:u1",
         "judge": who, "reproduced": True, "rationale": "same call"},
    ]
    result = agreement(rows, verdicts, {**who, "api_key_env": None})
    pooled = result["methods"]["all"]
    assert (pooled["both"], pooled["rule_only"], pooled["judge_only"], pooled["neither"]) == (
        1, 0, 1, 2)
    assert pooled["n"] == 4 and pooled["agreement"] == 0.75
    # κ = (0.75 - 0.5) / (1 - 0.5) with rule 1/4 and judge 2/4 yes
    assert pooled["kappa"] == 0.5
    assert result["methods"]["replay"]["both"] == 1 and result["methods"]["rerun"][
        "judge_only"] == 1
    assert result["disagreements"] == [{"case": rows[0]["case"], "arm": "rerun", "attempt": 1,
                                        "rule": False, "judge": True,
                                        "rationale": "same call"}]
    unjudged = agreement(rows, verdicts[:1], who)["methods"]["all"]
    assert unjudged["unjudged"] == 1 and unjudged["n"] == 3


def test_the_judge_at_an_openai_compatible_endpoint(tmp_path):
    script = {"rules": [{"match": {"any_message_contains": "shop-total"},
                         "reply": {"content": VERDICT}}],
              "default": {"content": "I think so."}}
    with StubLLM(script=script) as stub:
        judge = ReproductionJudge(JudgeSpec(stub.env()["OPENAI_BASE_URL"], "judge-model"))
        assert judge({"task": {"text": "shop-total"}}) == ReproductionVerdict(
            True, "the same empty query")
        body = stub.requests[-1]
        assert body["model"] == "judge-model" and body["temperature"] == 0
        assert "method" not in orjson.dumps(body["messages"][1]).decode()
        with pytest.raises(JudgeReplyMalformed):
            judge({"task": {"text": "other"}})
    down = ReproductionJudge(JudgeSpec("http://127.0.0.1:9/v1", "j"))
    with pytest.raises(JudgeUnavailable):
        down({"task": {}})


def test_the_preflight_checks_the_rq1_judge(tmp_path):
    from symtrace_study.judging import preflight

    with pytest.raises(JudgeUnavailable):
        preflight(_config(tmp_path))
    script = {"rules": [], "default": {"content": "not a verdict"}}
    with StubLLM(script=script) as stub:
        config = config_for(tmp_path, rq1={"k": 1, "judge": {
            "base_url": stub.env()["OPENAI_BASE_URL"], "model": "j"}})
        with pytest.raises(JudgeReplyMalformed):
            preflight(config)


def test_rq1_judge_config_is_checked(tmp_path):
    with pytest.raises(StudyConfigError, match=r"rq1\.judge needs base_url"):
        config_for(tmp_path, rq1={"k": 1, "judge": {"model": "m"}})
