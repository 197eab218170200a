"""AG2 state outside the boundaries: its response cache, Python's random, tool exceptions."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, ClassVar

import pytest

import symtrace
from symtrace import EventType, load_bundle
from symtrace.errors import CanonicalizationError

from ._support import Runner, load_example

pytestmark = pytest.mark.framework("ag2")


def _tool_events(path: Path, name: str) -> list[symtrace.Event]:
    return [e for e in load_bundle(path).events
            if e.type is EventType.TOOL_CALL and e.request["tool"] == name]


class SharedStore:
    """A persistent cache backend (an AbstractCache): it outlives each run, like a disk cache."""

    data: ClassVar[dict[str, Any]] = {}
    writes: ClassVar[int] = 0

    def __init__(self) -> None:
        pass

    def get(self, key: Any, default: Any = None) -> Any:
        return self.data.get(str(key), default)

    def set(self, key: Any, value: Any) -> None:
        SharedStore.writes += 1
        self.data[str(key)] = value

    def close(self) -> None:
        pass

    def __enter__(self) -> SharedStore:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


def _guide_program(cache: Any = None, **config: Any) -> Any:
    ag2_common = load_example("ag2_common")
    from autogen import AssistantAgent, UserProxyAgent

    def program() -> None:
        assistant = AssistantAgent(
            "assistant", system_message="You are the guide. Answer in one line, then TERMINATE.",
            llm_config=ag2_common.llm_config(**config))
        user = UserProxyAgent("user_proxy", human_input_mode="NEVER",
                              code_execution_config=False, max_consecutive_auto_reply=1,
                              is_termination_msg=ag2_common.is_termination)
        result = user.initiate_chat(assistant, message="Name one sight in Lisbon.", cache=cache)
        print(f"ANSWER: {result.summary}")

    return program


class TestResponseCache:
    def test_a_cache_hit_is_recorded_and_served_not_sent(
        self, runner: Runner, endpoint, tmp_path: Path
    ) -> None:
        stub = endpoint("cache")
        recorded = runner.record(tmp_path / "b", "cache")
        assert stub.served == 1  # the second chat was answered by AG2's cache
        lookups = _tool_events(tmp_path / "b", "ag2.cache.get")
        events = {e.id: e for e in load_bundle(tmp_path / "b").events}
        answers = [events[f"tool_result_{e.id.rsplit('_', 1)[1]}"].response["value"]
                   for e in lookups]
        assert answers[0] is None and answers[1]["class"].endswith("ChatCompletion")
        assert [e.meta["backend"] for e in lookups] == ["InMemoryCache"] * 2
        assert "SAME ANSWER: True" in recorded.stdout

        replayed = runner.replay(tmp_path / "b", "cache")
        assert replayed.stdout == recorded.stdout
        assert stub.served == 1

    def test_replay_ignores_what_a_persistent_cache_holds_now(
        self, runner: Runner, endpoint, monkeypatch, tmp_path: Path
    ) -> None:
        """Recorded cold, replayed warm (and the reverse): the recorded hits and misses are
        served, nothing is sent, nothing is written to the cache."""
        monkeypatch.setattr(SharedStore, "data", {})
        stub = endpoint("cache")
        with symtrace.record(tmp_path / "cold", adapters=["ag2"]):
            cold = runner.call(_guide_program(SharedStore()))
        assert stub.served == 1 and SharedStore.data  # a miss, then stored
        with symtrace.record(tmp_path / "warm", adapters=["ag2"]):
            warm = runner.call(_guide_program(SharedStore()))
        assert stub.served == 1  # a hit
        assert not [e for e in load_bundle(tmp_path / "warm").events if e.is_llm]

        writes = SharedStore.writes
        with symtrace.replay(tmp_path / "cold", adapters=["ag2"]):  # the cache is warm now
            assert runner.call(_guide_program(SharedStore())) == cold
        monkeypatch.setattr(SharedStore, "data", {})
        with symtrace.replay(tmp_path / "warm", adapters=["ag2"]):  # the cache is empty now
            assert runner.call(_guide_program(SharedStore())) == warm
        assert stub.served == 1
        assert SharedStore.writes == writes and SharedStore.data == {}

    def test_legacy_cache_seed_lookups_are_boundaries(
        self, runner: Runner, endpoint, tmp_path: Path
    ) -> None:
        """`cache_seed` makes create() build Cache.disk(seed) itself."""
        stub = endpoint("cache")
        with symtrace.record(tmp_path / "b", adapters=["ag2"]):
            recorded = runner.call(_guide_program(cache_seed=41))
        assert _tool_events(tmp_path / "b", "ag2.cache.get")
        assert _tool_events(tmp_path / "b", "ag2.cache.set")
        served = stub.served
        with symtrace.replay(tmp_path / "b", adapters=["ag2"]):
            assert runner.call(_guide_program(cache_seed=41)) == recorded
        assert stub.served == served


class TestRandomSpeakerSelection:
    def test_draws_are_recorded_as_the_managers_decisions(
        self, runner: Runner, endpoint, tmp_path: Path
    ) -> None:
        endpoint("groupchat_random")
        runner.record(tmp_path / "b", "groupchat_random")
        draws = _tool_events(tmp_path / "b", "ag2.random_select_speaker")
        assert len(draws) >= 3
        assert {(e.agent, e.lane, e.reason) for e in draws} == \
            {("chat_manager", "chat_manager", "speaker_selection")}
        assert draws[0].request["arguments"]["candidates"] == \
            ["user_proxy", "poet", "critic", "marketer"]

    def test_replay_keeps_the_recorded_speakers_when_pythons_random_moved(
        self, runner: Runner, endpoint, tmp_path: Path
    ) -> None:
        """A skipped tool body that drew from `random` would shift every later draw; the
        recorded choices are served anyway."""
        stub = endpoint("groupchat_random")
        module, _ = runner.example("groupchat_random")
        with symtrace.record(tmp_path / "b", adapters=["ag2"], seed=3):
            recorded = runner.call(module.main)

        def shifted() -> None:
            random.random()  # consumed only on replay
            module.main()

        served = stub.served
        with symtrace.replay(tmp_path / "b", adapters=["ag2"]):
            replayed = runner.call(shifted)
        transcript = recorded[recorded.index("TRANSCRIPT:"):]
        assert replayed[replayed.index("TRANSCRIPT:"):] == transcript
        assert stub.served == served


def _local_tool_program(result: Any = None) -> Any:
    """The tool_error scenario with a tool whose exception class is local to a function."""
    ag2_common = load_example("ag2_common")
    from autogen import AssistantAgent, UserProxyAgent

    def program() -> None:
        class NoRate(Exception):  # not importable by name: rebuilt on replay by message
            pass

        assistant = AssistantAgent("assistant", system_message="You convert currencies.",
                                   llm_config=ag2_common.llm_config())
        user = UserProxyAgent("user_proxy", human_input_mode="NEVER",
                              code_execution_config=False, max_consecutive_auto_reply=2,
                              is_termination_msg=ag2_common.is_termination)

        @user.register_for_execution(serialize=result is None)
        @assistant.register_for_llm(description="Convert EUR")
        def convert_currency(amount: float, currency: str) -> Any:
            if result is not None:
                return result
            raise NoRate(f"no exchange rate for {currency!r}")

        chat = user.initiate_chat(assistant, message="How much is 250 EUR in Bitcoin?")
        print([m.get("content") for m in chat.chat_history])

    return program


class TestToolExceptions:
    def test_an_unimportable_exception_class_still_replays_the_same_observation(
        self, runner: Runner, endpoint, tmp_path: Path
    ) -> None:
        stub = endpoint("tool_error")
        with symtrace.record(tmp_path / "b", adapters=["ag2"]):
            recorded = runner.call(_local_tool_program())
        assert "Error: no exchange rate for 'BTC'" in recorded
        served = stub.served
        with symtrace.replay(tmp_path / "b", adapters=["ag2"]):
            assert runner.call(_local_tool_program()) == recorded
        assert stub.served == served

    def test_a_symtrace_error_at_the_boundary_is_not_swallowed_by_ag2(
        self, runner: Runner, endpoint, tmp_path: Path
    ) -> None:
        """AG2 turns tool exceptions into "Error: ..." text; a result symtrace cannot record
        must stop the run instead of becoming an observation."""
        endpoint("tool_error")
        with pytest.raises(CanonicalizationError), \
                symtrace.record(tmp_path / "b", adapters=["ag2"]):
            runner.call(_local_tool_program(result={1, 2}))


class TestHumanInput:
    def test_what_the_human_typed_is_served_and_nobody_is_asked_again(
        self, runner: Runner, endpoint, monkeypatch, tmp_path: Path
    ) -> None:
        stub = endpoint("two_agent")
        module, _ = runner.example("two_agent")
        answers = iter(["Use Celsius, please.", "", ""])
        monkeypatch.setattr("builtins.input", lambda prompt="": next(answers, "exit"))

        def program() -> None:
            user, assistant = module.build()
            user.human_input_mode = "ALWAYS"
            chat = user.initiate_chat(assistant, message=module.TASK)
            print([m.get("content") for m in chat.chat_history])

        with symtrace.record(tmp_path / "b", adapters=["ag2"]):
            recorded = runner.call(program)
        asked = _tool_events(tmp_path / "b", "ag2.human_input")
        assert len(asked) >= 3
        assert {(e.agent, e.lane) for e in asked} == {("user_proxy", "user_proxy")}
        assert "Use Celsius, please." in recorded

        def nobody_there(prompt: str = "") -> str:
            raise AssertionError("replay asked the human")

        monkeypatch.setattr("builtins.input", nobody_there)
        served = stub.served
        with symtrace.replay(tmp_path / "b", adapters=["ag2"]):
            replayed = runner.call(program)
        assert replayed == recorded
        assert stub.served == served

    def test_a_manual_speaker_choice_is_the_humans_input(
        self, runner: Runner, endpoint, monkeypatch, tmp_path: Path
    ) -> None:
        stub = endpoint("groupchat_random")
        module, _ = runner.example("groupchat_random")
        from autogen import GroupChat

        class ManualGroupChat(GroupChat):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **{**kwargs, "speaker_selection_method": "manual"})

        monkeypatch.setattr(module, "GroupChat", ManualGroupChat)
        choices = iter(["2", "3", "4", "2"])
        monkeypatch.setattr("builtins.input", lambda prompt="": next(choices, "q"))
        with symtrace.record(tmp_path / "b", adapters=["ag2"]):
            recorded = runner.call(module.main)
        asked = _tool_events(tmp_path / "b", "ag2.human_input")
        assert len(asked) >= 4
        assert {(e.agent, e.reason) for e in asked} == {("chat_manager", "speaker_selection")}

        def nobody_there(prompt: str = "") -> str:
            raise AssertionError("replay asked the human")

        monkeypatch.setattr("builtins.input", nobody_there)
        served = stub.served
        with symtrace.replay(tmp_path / "b", adapters=["ag2"]):
            assert runner.call(module.main) == recorded
        assert stub.served == served
