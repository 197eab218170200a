"""RecordOptions / ReplayOptions: built once from loose input, typed, immutable; a bad value is
a UsageError (exit 2) before anything runs; the keyword API builds the same options."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from symtrace.boundaries.egress import HostPort
from symtrace.errors import EXIT_USAGE, UsageError
from symtrace.options import RecordOptions, ReplayOptions, given, in_child_process, in_process


def test_replay_options_are_typed_from_loose_input(tmp_path: Path):
    options = ReplayOptions.build(
        anchor="llm_call_0002", guidance="Check the date.", out=str(tmp_path / "child"),
        allow_hosts=["localhost:5432"], volatile_stdout=[r"took \d+ ms"],
        set_env={"B": "2", "A": "1"}, command=["python", "x.py"], cwd=str(tmp_path),
        adapters=["crewai"], overwrite=True)
    assert options.out == tmp_path / "child" and options.cwd == tmp_path
    assert options.allow_hosts == (HostPort("localhost", 5432),)
    assert options.volatile_stdout == (re.compile(r"took \d+ ms"),)
    assert options.set_env == (("A", "1"), ("B", "2"))
    assert options.command == ("python", "x.py") and options.adapters == ("crewai",)
    assert options.force is True and options.selective
    assert options.scheduling.stall_timeout == 20.0  # the default
    assert ReplayOptions.build(order_timeout="2.5").scheduling.stall_timeout == 2.5
    assert options.scheduling.infer_from_state  # the fallback is on unless turned off
    off = ReplayOptions.build(infer_from_state=False).scheduling
    assert not off.infer_from_state and off.stall_timeout == 20.0
    with pytest.raises(AttributeError):
        options.anchor = "other"  # type: ignore[misc]


@pytest.mark.parametrize(("values", "says"), [
    ({"placement": "footer"}, "unknown guidance placement 'footer'"),
    ({"guidance": "Check."}, "guidance needs an anchor"),
    ({"allow_hosts": ["host:99999"]}, "port must be 1-65535"),
    ({"allow_hosts": "localhost"}, "not one string"),
    ({"volatile_stdout": ["("]}, "not a valid regex"),
    ({"endpoint": "localhost:8000"}, "give an http:// or https:// URL"),
    ({"cwd": "/no/such/dir"}, "not a directory"),
    ({"set_env": {"A B": "1"}}, "not an environment variable name"),
    ({"adapters": [""]}, "not a non-empty string"),
    ({"order_timeout": "soon"}, "order timeout (--order-timeout, order_timeout=) 'soon'"),
    ({"order_timeout": -1}, "give a number of seconds > 0"),
    ({"order_timeout": float("inf")}, "give a number of seconds > 0"),
])
def test_a_bad_replay_option_is_a_usage_error(values, says):
    with pytest.raises(UsageError, match=re.escape(says)) as caught:
        ReplayOptions.build(**values)
    assert caught.value.exit_code == EXIT_USAGE


@pytest.mark.parametrize(("values", "says"), [
    ({"seed": -1}, "non-negative integer"),
    ({"seed": True}, "non-negative integer"),
    ({"seed": "7"}, "non-negative integer"),
    ({"secret_envs": ["MY-KEY"]}, "not an environment variable name"),
    ({"env_keep": "HOME"}, "not one string"),
])
def test_a_bad_record_option_is_a_usage_error(values, says):
    with pytest.raises(UsageError, match=re.escape(says)):
        RecordOptions.build(**values)


def test_json_fields_take_any_json_and_sequences_must_be_tuples():
    options = RecordOptions.build(task={"goal": ["a", "b"]}, config=[1, 2], seed=0)
    assert options.task == {"goal": ["a", "b"]} and options.seed == 0
    with pytest.raises(TypeError, match="give a tuple"):
        RecordOptions(secret_envs=["KEY"])  # type: ignore[arg-type]


def test_options_or_keywords_not_both_and_no_unknown_keyword():
    built = ReplayOptions.build(anchor="a", guidance="g")
    assert given(ReplayOptions, built, {}) is built
    assert given(ReplayOptions, None, {"anchor": "a"}) == ReplayOptions(anchor="a")
    with pytest.raises(TypeError, match="not both"):
        given(ReplayOptions, built, {"quiet": True})
    with pytest.raises(TypeError, match="unknown option"):
        given(ReplayOptions, None, {"anchr": "a"})
    with pytest.raises(TypeError, match="expected ReplayOptions"):
        given(ReplayOptions, RecordOptions(), {})  # type: ignore[type-var]


def test_each_mode_refuses_the_other_mode_s_options():
    in_process(ReplayOptions(anchor="a"))
    with pytest.raises(UsageError, match="command, quiet: only for"):
        in_process(ReplayOptions.build(command=["python"], quiet=True))
    with pytest.raises(UsageError, match="secrets: only for the in-process"):
        in_child_process(RecordOptions.build(secrets=["sk-123"]))
    in_child_process(RecordOptions.build(secret_envs=["OPENAI_API_KEY"]))


def test_the_in_process_api_takes_options_or_its_documented_keywords(tmp_path: Path):
    import symtrace
    from symtrace.bundle.reader import load_bundle

    with symtrace.record(tmp_path / "a", RecordOptions.build(task="t", seed=11)) as rec:
        rec.final_result("done")
    with symtrace.record(tmp_path / "b", task="t", seed=11) as rec:
        rec.final_result("done")
    a, b = load_bundle(tmp_path / "a"), load_bundle(tmp_path / "b")
    assert a.initial_state["random_seed"] == b.initial_state["random_seed"] == 11
    with symtrace.replay(tmp_path / "a", ReplayOptions()):
        symtrace.final_result("done")
    with pytest.raises(UsageError, match="only for"), symtrace.replay(tmp_path / "a",
                                                                     quiet=True):
        pass
    with pytest.raises(UsageError, match="guidance needs an anchor"), symtrace.replay(
            tmp_path / "a", guidance="Check."):
        pass
