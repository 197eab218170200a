"""Every way AgentChat reaches outside the process is a boundary that replay serves.

Tool return values of every kind come back through the framework's own path; a
CodeExecutorAgent's code execution, a UserProxyAgent's input and a stream tool are boundaries
too; an AgentTool is not (the agent it runs makes the boundary calls).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import pytest
from pydantic import BaseModel

import symtrace
from symtrace.bundle import load_bundle
from symtrace.model.events import EventType

pytestmark = pytest.mark.framework("autogen_agentchat")


def tool_calls(*calls):
    return {"tool_calls": [{"name": name, "arguments": args} for name, args in calls]}


def round_trip(tmp_path, stub, program):
    """Record *program*, strictly replay it; both transcripts, and the bundle."""
    with symtrace.record(tmp_path / "run", adapters=["autogen_agentchat"]):
        recorded = asyncio.run(program())
    served = stub.served
    with symtrace.replay(tmp_path / "run"):
        replayed = asyncio.run(program())
    assert stub.served == served
    return recorded, replayed, load_bundle(tmp_path / "run")


class Forecast(BaseModel):
    city: str
    celsius: float


RAN: list[str] = []


def forecast(city: str) -> Forecast:
    """A forecast as a model."""
    RAN.append("forecast")
    return Forecast(city=city, celsius=21.0)


def coordinates(city: str) -> tuple:
    """Coordinates as a tuple."""
    RAN.append("coordinates")
    return (38.72, -9.14)


def ratio(city: str) -> float:
    """A float with an integral value."""
    RAN.append("ratio")
    return 1.0


def tagged(city: str) -> dict:
    """A dict that looks like the codec's own envelope."""
    RAN.append("tagged")
    return {"$agentchat": "text", "value": city}


def nothing(city: str) -> None:
    """No value at all."""
    RAN.append("nothing")


TOOLS = [forecast, coordinates, ratio, tagged, nothing]


def test_tool_values_of_every_kind_replay_through_the_native_path(
        stub_llm_factory, use_stub, tmp_path):
    from agentchat_common import model_client, transcript
    from autogen_agentchat.agents import AssistantAgent

    stub = use_stub(stub_llm_factory(script={"rules": [
        {"match": {"tool_result_present": False},
         "reply": tool_calls(*[(t.__name__, {"city": "Lisbon"}) for t in TOOLS])},
    ], "default": {"content": "All five looked up."}}))

    async def program():
        client = model_client()
        agent = AssistantAgent("kinds", model_client=client, tools=TOOLS)
        result = await agent.run(task="Look Lisbon up with every tool.")
        await client.close()
        return transcript([result])

    RAN.clear()
    recorded, replayed, bundle = round_trip(tmp_path, stub, program)
    # recorded once each, not run on replay (AgentChat runs sync tools on a thread pool under
    # asyncio.gather: they start in no promised order; 3.13 shows it)
    assert sorted(t.__name__ for t in TOOLS) == sorted(RAN)
    assert replayed == recorded
    results = {e.meta["tool"]: e.response for e in bundle.events
               if e.type is EventType.TOOL_RESULT}
    values = {tool: response["value"] for tool, response in results.items()}
    assert values["forecast"]["$agentchat"] == "pydantic"
    # plain data is stored as JSON, with the shape that serves it back as it was (issue 40)
    assert results["coordinates"] == {"ok": True, "value": [38.72, -9.14], "shape": {"t": 1}}
    assert results["ratio"] == {"ok": True, "value": 1, "shape": "f"}  # served as 1.0
    assert values["tagged"]["$agentchat"] == "text"
    assert values["nothing"] is None


@pytest.mark.filterwarnings("ignore:Using LocalCommandLineCodeExecutor", "ignore:No approval")
def test_code_execution_is_a_boundary(stub_llm_factory, use_stub, tmp_path):
    from agentchat_common import model_client, transcript
    from autogen_agentchat.agents import AssistantAgent, CodeExecutorAgent
    from autogen_agentchat.conditions import MaxMessageTermination
    from autogen_agentchat.teams import RoundRobinGroupChat
    from autogen_ext.code_executors.local import LocalCommandLineCodeExecutor

    marker = tmp_path / "side_effect.txt"
    code = f"open({str(marker)!r}, 'a').write('ran\\n'); print(6 * 7)"
    stub = use_stub(stub_llm_factory(script={"rules": [], "default": {
        "content": f"Run this:\n```python\n{code}\n```"}}))
    work = tmp_path / "work"
    work.mkdir()

    async def program():
        client = model_client()
        coder = AssistantAgent("coder", model_client=client)
        executor = CodeExecutorAgent(
            "executor", code_executor=LocalCommandLineCodeExecutor(work_dir=work))
        team = RoundRobinGroupChat([coder, executor],
                                   termination_condition=MaxMessageTermination(3))
        result = await team.run(task="Compute six times seven in Python.")
        await client.close()
        return transcript([result])

    recorded, replayed, bundle = round_trip(tmp_path, stub, program)
    assert replayed == recorded
    assert "executor: 42\n" in recorded
    assert marker.read_text() == "ran\n", "the code ran once, when recording"
    [call] = [e for e in bundle.events if e.type is EventType.TOOL_CALL]
    assert call.request["tool"] == "execute_code" and call.agent == "executor"
    assert call.meta["tool_type"] == "LocalCommandLineCodeExecutor"


def test_human_input_is_a_boundary(stub_llm_factory, use_stub, tmp_path):
    from agentchat_common import model_client, transcript
    from autogen_agentchat.agents import AssistantAgent, UserProxyAgent
    from autogen_agentchat.conditions import MaxMessageTermination
    from autogen_agentchat.teams import RoundRobinGroupChat

    stub = use_stub(stub_llm_factory(script={"rules": [], "default": {
        "content": "Shall I book the tram tour?"}}))
    answers = ["yes, for two"]

    def typed(prompt: str) -> str:
        return answers.pop(0)

    async def program():
        client = model_client()
        team = RoundRobinGroupChat(
            [AssistantAgent("guide", model_client=client),
             UserProxyAgent("traveller", input_func=typed)],
            termination_condition=MaxMessageTermination(3))
        result = await team.run(task="Plan my afternoon.")
        await client.close()
        return transcript([result])

    recorded, replayed, bundle = round_trip(tmp_path, stub, program)
    assert "traveller: yes, for two" in recorded
    assert replayed == recorded  # the second run had no answer left to pop
    [call] = [e for e in bundle.events if e.type is EventType.TOOL_CALL]
    assert (call.request["tool"], call.agent) == ("user_input", "traveller")


def test_an_agent_tool_is_not_a_boundary_its_agent_is_attributed(
        stub_llm_factory, use_stub, tmp_path):
    from agentchat_common import model_client, transcript
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.tools import AgentTool

    stub = use_stub(stub_llm_factory(script={"rules": [
        {"match": {"agent": "You are the expert"},
         "reply": {"content": "Take tram 28 from Martim Moniz."}},
        {"match": {"agent": "You are the manager", "tool_result_present": False},
         "reply": tool_calls(("expert", {"task": "Best tram in Lisbon?"}))},
    ], "default": {"content": "The expert says: tram 28."}}))

    async def program():
        client = model_client()
        expert = AssistantAgent("expert", model_client=client, description="Knows Lisbon.",
                                system_message="You are the expert.")
        manager = AssistantAgent("manager", model_client=client, tools=[AgentTool(expert)],
                                 reflect_on_tool_use=True,
                                 system_message="You are the manager.")
        result = await manager.run(task="Which tram should I take?")
        await client.close()
        return transcript([result])

    recorded, replayed, bundle = round_trip(tmp_path, stub, program)
    assert replayed == recorded
    assert [e.agent for e in bundle.events if e.is_llm] == ["manager", "expert", "manager"]
    assert not [e for e in bundle.events if e.type is EventType.TOOL_CALL]


def test_a_stream_tool_is_one_boundary(stub_llm_factory, use_stub, tmp_path):
    from agentchat_common import model_client, transcript
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.messages import TextMessage
    from autogen_core import CancellationToken
    from autogen_core.tools import BaseStreamTool

    class Args(BaseModel):
        city: str

    class Result(BaseModel):
        summary: str

    runs: list[str] = []

    class Survey(BaseStreamTool[Args, TextMessage, Result]):
        def __init__(self) -> None:
            super().__init__(Args, Result, "survey", "Survey a city, step by step.")

        async def run(self, args: Args, cancellation_token: CancellationToken) -> Result:
            raise AssertionError("run_stream is the path under test")

        async def run_stream(self, args: Args, cancellation_token: CancellationToken
                             ) -> AsyncGenerator[TextMessage | Result, None]:
            runs.append(args.city)
            yield TextMessage(source="survey", content=f"surveying {args.city}")
            yield Result(summary=f"{args.city}: hilly, sunny")

    stub = use_stub(stub_llm_factory(script={"rules": [
        {"match": {"tool_result_present": False},
         "reply": tool_calls(("survey", {"city": "Lisbon"}))},
    ], "default": {"content": "Hilly and sunny."}}))

    async def program():
        client = model_client()
        agent = AssistantAgent("scout", model_client=client, tools=[Survey()])
        result = await agent.run(task="Survey Lisbon.")
        await client.close()
        return transcript([result])

    recorded, replayed, bundle = round_trip(tmp_path, stub, program)
    assert runs == ["Lisbon"]
    assert replayed == recorded
    assert any("surveying Lisbon" in line for line in recorded)
    [result] = [e for e in bundle.events if e.type is EventType.TOOL_RESULT]
    assert [item["$agentchat"] for item in result.response["value"]] == ["pydantic"] * 2
