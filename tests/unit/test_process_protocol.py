"""The runner ↔ child protocol (symtrace.process.protocol): launch and hand-back round-trip,
and every malformed or foreign message is refused with HandBackError (exit 94)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from symtrace.errors import EXIT_ADAPTER, HandBackError
from symtrace.model.divergence import DivergenceKind, DivergenceReport
from symtrace.process import protocol
from symtrace.process.protocol import (
    ENV_LAUNCH,
    PROTOCOL_VERSION,
    Diverged,
    HandBackStatus,
    Launch,
    Mode,
    Recorded,
    Replayed,
    Started,
    parse_hand_back,
    read_hand_back,
    take_launch,
    write_hand_back,
)

REPORT = DivergenceReport(
    kind=DivergenceKind.REQUEST_MISMATCH, bundle="b", bundle_digest="sha256:0", position=3,
    event_id="llm_call_0003", lane="Writer", agent="Writer", boundary="llm", matched_before=3,
    hint="the prompt changed",
)
COUNTS = {"has_final_value": True, "final_value": {"answer": [1, "x"]}, "served": 3,
          "live": 0, "allowed_connections": 1}
MESSAGES = [
    Started(),
    Recorded(adapters_used=("crewai",), has_final_value=False, final_value=None,
             unrecorded_egress=({"host": "db", "port": 5432, "count": 2, "library": "x"},)),
    Recorded(adapters_used=(), has_final_value=True, final_value="done", refused="ag2 2.0",
             redaction_refused=None, egress_refused=None),
    Replayed(**COUNTS),
    Replayed(**COUNTS, lineage={"replayed_events": ["a"], "live_events": ["b"]}),
    Diverged(**COUNTS, kind="RequestMismatch", report=REPORT),
]


def wire(**body) -> bytes:
    return orjson.dumps({"protocol": PROTOCOL_VERSION, **body})


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: m.status.value)
def test_every_hand_back_round_trips(message, tmp_path: Path):
    path = tmp_path / "hand-back.json"
    write_hand_back(path, message)
    back = read_hand_back(path)
    assert back == message and type(back) is type(message)
    if isinstance(message, Diverged):
        assert back.report.to_json() == REPORT.to_json()
    raw = orjson.loads(path.read_bytes())
    assert raw["protocol"] == PROTOCOL_VERSION and raw["status"] == message.status.value
    assert path.read_bytes() == orjson.dumps(raw, option=orjson.OPT_SORT_KEYS)  # canonical


def test_report_fields_are_the_documented_replay_report():
    """The replay report (--report-json) is the hand-back's body: no protocol key, lineage
    only when there is one, the rendered report beside the report."""
    replayed = protocol.hand_back_json(Replayed(**COUNTS))
    assert replayed == {"status": "replayed", **COUNTS}
    diverged = protocol.hand_back_json(Diverged(**COUNTS, kind="RequestMismatch", report=REPORT))
    assert diverged["rendered"] == REPORT.render() and diverged["report"] == REPORT.to_json()
    assert diverged["status"] == HandBackStatus.DIVERGED == "diverged"


def test_a_missing_hand_back_is_no_message(tmp_path: Path):
    assert read_hand_back(tmp_path / "none.json") is None


@pytest.mark.parametrize(("data", "says"), [
    (b"{not json", "not JSON"),
    (b"[1, 2]", "expected a JSON object"),
    (orjson.dumps({"status": "started"}), "protocol version None"),
    (orjson.dumps({"protocol": PROTOCOL_VERSION + 1, "status": "started"}),
     f"protocol version {PROTOCOL_VERSION + 1}"),
    (wire(status="finished"), "unknown status 'finished'"),
    (wire(), "unknown status None"),
    (wire(status="replayed", **{**COUNTS, "served": "3"}), "'served' should be int"),
    (wire(status="replayed", **{**COUNTS, "served": True}), "'served' should be int"),
    (wire(status="replayed", **{**COUNTS, "has_final_value": 1}), "should be bool"),
    (wire(status="replayed", **{k: v for k, v in COUNTS.items() if k != "live"}),
     "'live' is missing"),
    (wire(status="replayed", **{**COUNTS, "live": None}), "'live' is null"),
    (wire(status="replayed", **COUNTS, extra=1), "unknown fields ['extra']"),
    (wire(status="diverged", **COUNTS, kind="RequestMismatch", report={"kind": "x"}),
     "not a divergence report"),
    (wire(status="recorded", adapters_used=[1], has_final_value=False, final_value=None,
          refused=None, redaction_refused=None, unrecorded_egress=[], egress_refused=None),
     "list of strings"),
])
def test_malformed_or_foreign_hand_backs_are_refused(data, says):
    with pytest.raises(HandBackError) as caught:
        parse_hand_back(data)
    assert says in str(caught.value)
    assert caught.value.exit_code == EXIT_ADAPTER


def test_launch_round_trips_through_its_one_variable(tmp_path: Path):
    launch = Launch(mode=Mode.REPLAY, bundle="/b", adapters=("ag2", "crewai"),
                    hand_back="/t/h.json", secret_envs=("OPENAI_API_KEY",),
                    anchor="llm_call_0002", guidance="Check the rate.\nTwice.",
                    placement="system", allow_hosts=("127.0.0.1:5432",), child_bundle="/c",
                    order_timeout=2.5, infer_from_state=False,
                    declared=(("crewai", "symtrace_crewai:CrewAIAdapter", "crewai"),))
    path = tmp_path / "launch.json"
    launch.write(path)
    environ = {"OTHER": "1", **launch.environ(path)}
    assert environ[ENV_LAUNCH] == str(path)
    assert take_launch(environ) == launch
    assert ENV_LAUNCH not in environ  # a grandchild is not instrumented
    assert take_launch(environ) is None
    auto = Launch(mode=Mode.RECORD, bundle="/b", adapters=None, hand_back="/h")
    assert Launch.from_bytes(auto.to_bytes()) == auto


@pytest.mark.parametrize(("mutate", "says"), [
    (lambda body: body.update(mode="resample"), "unknown mode 'resample'"),
    (lambda body: body.update(protocol=0), "protocol version 0"),
    (lambda body: body.pop("bundle"), "'bundle' is missing"),
    (lambda body: body.update(hand_back=""), "'hand_back' is empty"),
    (lambda body: body.update(allow_hosts="127.0.0.1"), "should be list"),
    (lambda body: body.update(verbose=True), "unknown fields ['verbose']"),
    (lambda body: body.update(declared=[["crewai", "symtrace_crewai:A"]]), "[name, entry, module]"),
    (lambda body: body.update(order_timeout=-1.0), "order_timeout"),
    (lambda body: body.update(order_timeout="20"), "should be float"),
    (lambda body: body.update(infer_from_state="no"), "should be bool"),
])
def test_a_bad_launch_file_is_refused(mutate, says):
    body = orjson.loads(Launch(mode=Mode.RECORD, bundle="/b", adapters=None,
                               hand_back="/h").to_bytes())
    mutate(body)
    with pytest.raises(HandBackError) as caught:
        Launch.from_bytes(orjson.dumps(body))
    assert says in str(caught.value)


def test_an_unreadable_launch_file_is_refused(tmp_path: Path):
    with pytest.raises(HandBackError, match="cannot read the launch file"):
        take_launch({ENV_LAUNCH: str(tmp_path / "gone.json")})


def test_a_replay_hand_back_carries_a_refusal_and_omits_it_when_none():
    """A refusal raised during a replay (maybe caught by the program) reaches the parent,
    which fails with exit 94; a replay without one writes no `refused` key (the report)."""
    refused = Replayed(**COUNTS, refused="chats 1 and 2 run at the same time")
    assert parse_hand_back(wire(**protocol.hand_back_json(refused))) == refused
    assert "refused" not in protocol.hand_back_json(Replayed(**COUNTS))
