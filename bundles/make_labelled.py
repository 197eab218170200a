"""Record the labelled diagnosis set: real framework runs with faults injected at known steps.

    python bundles/make_labelled.py                 # every framework × scenario, then labels
    python bundles/make_labelled.py ag2 crewai      # some frameworks only (labels rewritten)

The same small team runs in AG2 (a GroupChat with a deterministic speaker order and a tool
executor), CrewAI (a sequential crew) and AutoGen AgentChat (a RoundRobinGroupChat): a
Planner hands the task to a Researcher with three tools (weather, currency, hotel rates), who
hands its findings to a Writer. The LLM is symtrace's scripted stub endpoint; each scenario's
script injects one fault at a known decision:

- a wrong tool argument (the Researcher's call names a city or currency the tool rejects),
- a wrong fact handed to the next agent (the Planner names a city or currency that does not
  exist; the Researcher's call fails on it later),
- an ignored tool result (the hotel service times out and the next decision invents a price —
  the Researcher's, or the Writer's after the Researcher reported the timeout correctly),
- a repeated tool call, an answer given without using the tools, a placeholder argument.

Each run is recorded in-process with `symtrace.record` into `bundles/labelled/<fw>-<name>/`.
The label is computed from the recording, not written by hand: the decision that carries the
injected fault is found by its agent and its position among that agent's decisions, and its
event id, step (position among the trace's agent decisions) and agent go into
`bundles/labelled/labels.json`, the input of `symtrace diagnose --eval`.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "bundles" / "labelled"
FRAMEWORKS = ("ag2", "crewai", "autogen_agentchat", "magentic_one")
ADAPTER = {"magentic_one": "autogen_agentchat"}  # the rest are their own adapter's name
# In Magentic-One the Planner's part is the orchestrator's plan, its second planning call
# (the first is the facts survey): the label moves there.
ORCHESTRATOR = "MagenticOneOrchestrator"
SEED = 1
TASK = (
    "Plan a day in Lisbon for a traveller: check the weather in Lisbon, convert 100 EUR to USD "
    "and, when asked, the hotel rate, then write a short plan."
)
QUIET_ENV = {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "OTEL_SDK_DISABLED": "true",
    "CREWAI_DISABLE_TRACKING": "1",
    "CREWAI_DISABLE_VERSION_CHECK": "true",
    "CREWAI_TRACING_ENABLED": "false",
    "OPENAI_API_KEY": "sk-test",
}
PLANNER = "You are Planner. Split the task between the Researcher and the Writer."
RESEARCHER = "You are Researcher. Use your tools to gather the facts the plan needs."
WRITER = "You are Writer. Write the final plan from the research, then say TERMINATE."

# ------------------------------------------------------------------------------ the tools
WEATHER = {"Lisbon": "21°C, sunny", "Porto": "17°C, light rain"}
RATES = {"USD": 1.08, "GBP": 0.85}
READINGS: list[str] = []  # how often the weather service answered in this run


def lookup_weather(city: str) -> str:
    """Current weather for a city."""
    if city not in WEATHER:
        raise ValueError(f"unknown city {city!r}")
    READINGS.append(city)
    return f"{city}: {WEATHER[city]} (reading #{len(READINGS)})"


def convert_currency(amount: float, currency: str) -> str:
    """Convert an amount of EUR into another currency."""
    if currency not in RATES:
        raise ValueError(f"no exchange rate for {currency!r}")
    return f"{amount} EUR = {round(float(amount) * RATES[currency], 2)} {currency}"


def hotel_rate(city: str) -> str:
    """Nightly hotel rate in a city."""
    raise TimeoutError("the hotel rates service did not answer within 10 s")


TOOLS: tuple[Callable[..., str], ...] = (lookup_weather, convert_currency, hotel_rate)


# ------------------------------------------------------------------------------ scenarios
def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


@dataclass(frozen=True)
class Scenario:
    """One injected fault. `researcher` is the Researcher's replies in order (a list of tool
    calls, or text); `after[k]` is text that is in its conversation once the tool round before
    reply k+1 has answered; `mistake` is (agent, n): the agent's n-th decision is the fault."""

    name: str
    fault: str
    planner: str
    researcher: tuple[Any, ...]
    writer: str
    mistake: tuple[str, int]
    after: tuple[str, ...] = ("reading #1",)

    def script(self, framework: str = "ag2") -> dict[str, Any]:
        """A stub script keyed on the agent's system prompt and on what its conversation
        already holds, so every framework gets the same replies in the same order. In
        Magentic-One the orchestrator plays the Planner (facts, plan, ledgers, final answer);
        the workers' texts carry markers the ledger keys on."""
        magentic = framework == "magentic_one"
        if magentic:
            rules = _orchestrator_rules(self.planner)
            writer = f"WRITER DONE: {self.writer}"
        else:
            rules = [{"match": {"agent": "You are Planner"}, "reply": {"content": self.planner}}]
            writer = self.writer
        rules.append({"match": {"agent": "You are Writer"}, "reply": {"content": writer}})
        replies = [_reply(r, magentic) for r in self.researcher]
        for k in range(len(replies) - 1, 0, -1):  # latest state first
            rules.append(
                {"match": {"agent": "You are Researcher",
                           "any_message_contains": self.after[k - 1]},
                 "reply": replies[k]}
            )  # fmt: skip
        rules.append({"match": {"agent": "You are Researcher"}, "reply": replies[0]})
        return {"rules": rules, "default": {"content": "No script rule matched. TERMINATE"}}

    def mistake_in(self, framework: str) -> tuple[str, int]:
        agent, nth = self.mistake
        if framework == "magentic_one" and agent == "Planner":
            return ORCHESTRATOR, nth + 1
        return agent, nth


def _reply(item: Any, magentic: bool = False) -> dict[str, Any]:
    if isinstance(item, list):
        return {"tool_calls": list(item)}
    return {"content": f"RESEARCH: {item}" if magentic else item}


def _ledger(satisfied: bool, speaker: str, instruction: str) -> dict[str, Any]:
    def answer(value: Any) -> dict[str, Any]:
        return {"reason": "judged from the conversation", "answer": value}

    ledger = {
        "is_request_satisfied": answer(satisfied),
        "is_in_loop": answer(False),
        "is_progress_being_made": answer(True),
        "next_speaker": answer(speaker),
        "instruction_or_question": answer(instruction),
    }
    return {"content": json.dumps(ledger)}


def _orchestrator_rules(plan: str) -> list[dict[str, Any]]:
    """Magentic-One's orchestrator: facts survey, the plan (the scenario's Planner text),
    progress ledgers handing over Researcher → Writer → done, then the final answer."""
    ledger = "Recall we are working on the following request"
    facts = (
        "1. GIVEN OR VERIFIED FACTS\n- A day trip is planned.\n2. FACTS TO LOOK UP\n- Weather "
        "and prices.\n3. FACTS TO DERIVE\n- None.\n4. EDUCATED GUESSES\n- Mild weather."
    )
    return [
        {"match": {"last_user_contains": "pre-survey"}, "reply": {"content": facts}},
        {"match": {"last_user_contains": "devise a short bullet-point plan"},
         "reply": {"content": plan}},
        {"match": {"last_user_contains": "provide the final answer to the original request"},
         "reply": {"content": "The plan is in the Writer's last message."}},
        {"match": {"last_user_contains": ledger, "any_message_contains": "WRITER DONE"},
         "reply": _ledger(True, "Writer", "Nothing left to do.")},
        {"match": {"last_user_contains": ledger, "any_message_contains": "RESEARCH:"},
         "reply": _ledger(False, "Writer", "Write the plan from the research.")},
        {"match": {"last_user_contains": ledger},
         "reply": _ledger(False, "Researcher", "Do your part of the plan.")},
    ]  # fmt: skip


DEFAULT_PLAN = (
    "Researcher: look up the weather in Lisbon and convert 100 EUR to USD. Writer: turn the "
    "findings into a one-paragraph plan."
)
HOTEL_PLAN = (
    "Researcher: look up the weather in Lisbon and the hotel rate in Lisbon. Writer: turn the "
    "findings into a one-paragraph plan."
)
GOOD_WRITE = "Plan: morning in Alfama, lunch by the river, sunset at Miradouro. TERMINATE"

SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "wrong_argument_currency", "wrong tool argument", DEFAULT_PLAN,
        ([call("lookup_weather", city="Lisbon"), call("convert_currency", amount=100,
                                                      currency="USDX")],
         "Lisbon is 21°C and sunny. The currency conversion did not work."),
        "Plan: a sunny day in Lisbon; the budget in USD is unknown. TERMINATE",
        ("Researcher", 0), ("no exchange rate",),
    ),
    Scenario(
        "wrong_argument_city", "wrong tool argument", DEFAULT_PLAN,
        ([call("lookup_weather", city="Lisbn"), call("convert_currency", amount=100,
                                                     currency="USD")],
         "The weather lookup failed; 100 EUR = 108.0 USD."),
        "Plan: a day in Lisbon on 108 USD, weather unknown. TERMINATE",
        ("Researcher", 0), ("unknown city",),
    ),
    Scenario(
        "wrong_fact_city", "wrong fact handed to the next agent",
        "Researcher: the trip is to Lisboa-Norte, so look up the weather in Lisboa-Norte and "
        "convert 100 EUR to USD. Writer: write the plan.",
        ([call("lookup_weather", city="Lisboa-Norte"), call("convert_currency", amount=100,
                                                            currency="USD")],
         "No weather for Lisboa-Norte; 100 EUR = 108.0 USD."),
        "Plan: a day in Lisboa-Norte on 108 USD. TERMINATE",
        ("Planner", 0), ("unknown city",),
    ),
    Scenario(
        "wrong_fact_currency", "wrong fact handed to the next agent",
        "Researcher: look up the weather in Lisbon and convert 100 EUR to US dollars (currency "
        "code USN). Writer: write the plan.",
        ([call("lookup_weather", city="Lisbon"), call("convert_currency", amount=100,
                                                      currency="USN")],
         "Lisbon is 21°C and sunny; the USN conversion failed."),
        "Plan: a sunny day in Lisbon, budget unknown. TERMINATE",
        ("Planner", 0), ("no exchange rate",),
    ),
    Scenario(
        "ignored_error_researcher", "ignored tool result", HOTEL_PLAN,
        ([call("lookup_weather", city="Lisbon"), call("hotel_rate", city="Lisbon")],
         "Lisbon is 21°C and sunny, and a hotel costs 80 EUR per night."),
        "Plan: a sunny day in Lisbon with a hotel at 80 EUR per night. TERMINATE",
        ("Researcher", 1), ("within 10 s",),
    ),
    Scenario(
        "ignored_error_writer", "ignored tool result", HOTEL_PLAN,
        ([call("lookup_weather", city="Lisbon"), call("hotel_rate", city="Lisbon")],
         "Lisbon is 21°C and sunny. The hotel service timed out, so there is no hotel rate."),
        "Plan: a sunny day in Lisbon with a hotel at 80 EUR per night. TERMINATE",
        ("Writer", 0), ("within 10 s",),
    ),
    Scenario(
        "repeated_call", "repeated tool call", DEFAULT_PLAN,
        ([call("lookup_weather", city="Lisbon")], [call("lookup_weather", city="Lisbon")],
         "Lisbon is 21°C and sunny."),
        "Plan: a sunny day in Lisbon. TERMINATE",
        ("Researcher", 1), ("reading #1", "reading #2"),
    ),
    Scenario(
        "answer_without_tools", "answer without tool evidence", DEFAULT_PLAN,
        ("Final answer: Lisbon is 25°C and 100 EUR is 110 USD.",),
        "Plan: a warm day in Lisbon on 110 USD. TERMINATE",
        ("Researcher", 0),
    ),
    Scenario(
        "placeholder_argument", "placeholder argument", DEFAULT_PLAN,
        ([call("lookup_weather", city="{{city}}"), call("convert_currency", amount=100,
                                                        currency="USD")],
         "The weather lookup failed; 100 EUR = 108.0 USD."),
        "Plan: a day in Lisbon on 108 USD. TERMINATE",
        ("Researcher", 0), ("unknown city",),
    ),
)  # fmt: skip
BY_NAME = {s.name: s for s in SCENARIOS}


# ------------------------------------------------------------------------------ the teams
def run_ag2() -> None:
    from autogen import AssistantAgent, GroupChat, GroupChatManager, UserProxyAgent
    from autogen import register_function as register

    config = {
        "config_list": [{"model": "stub-model", "base_url": os.environ["OPENAI_BASE_URL"],
                         "api_key": os.environ["OPENAI_API_KEY"], "price": [0.0, 0.0]}],
        "cache_seed": None,
    }  # fmt: skip
    planner = AssistantAgent("Planner", system_message=PLANNER, llm_config=config)
    researcher = AssistantAgent("Researcher", system_message=RESEARCHER, llm_config=config)
    writer = AssistantAgent("Writer", system_message=WRITER, llm_config=config)
    executor = UserProxyAgent(
        "executor", human_input_mode="NEVER", code_execution_config=False,
        default_auto_reply="",
    )  # fmt: skip
    for tool in TOOLS:
        register(tool, caller=researcher, executor=executor, description=tool.__doc__ or "")
    user = UserProxyAgent("user", human_input_mode="NEVER", code_execution_config=False)

    def next_speaker(last: Any, group: GroupChat) -> Any:
        # A fixed hand-over order (no speaker-selection LLM call): the user's task goes to the
        # Planner, then the Researcher (with its executor) until it answers in text, then the
        # Writer, then the chat ends.
        message = group.messages[-1]
        if last is user:
            return planner
        if last is planner or last is executor:
            return researcher
        if last is researcher:
            return executor if message.get("tool_calls") else writer
        return None

    group = GroupChat(
        agents=[user, planner, researcher, executor, writer], messages=[], max_round=12,
        speaker_selection_method=next_speaker,
    )  # fmt: skip
    manager = GroupChatManager(group, llm_config=config)
    user.initiate_chat(manager, message=TASK)


def run_crewai() -> None:
    from crewai import LLM, Agent, Crew, Process, Task
    from crewai.tools import tool

    model = LLM(model="gpt-4o-mini", max_retries=0)
    tools = [tool(t.__name__)(t) for t in TOOLS]
    planner = Agent(
        role="Planner",
        goal="Split the task between the Researcher and the Writer",
        backstory="You plan trips.",
        llm=model,
    )
    researcher = Agent(
        role="Researcher",
        goal="Gather the facts the plan needs",
        backstory="You use your tools.",
        llm=model,
        tools=tools,
    )
    writer = Agent(
        role="Writer",
        goal="Write the final plan from the research",
        backstory="You write short plans.",
        llm=model,
    )
    tasks = [
        Task(name="plan", agent=planner, description=TASK, expected_output="Instructions."),
        Task(name="research", agent=researcher, description="Do the research the plan asks for.",
             expected_output="The facts."),
        Task(name="write", agent=writer, description="Write the plan from the research.",
             expected_output="A short plan."),
    ]  # fmt: skip
    Crew(agents=[planner, researcher, writer], tasks=tasks, process=Process.sequential).kickoff()


def run_autogen_agentchat() -> None:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
    from autogen_agentchat.teams import RoundRobinGroupChat
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    async def main() -> None:
        client = OpenAIChatCompletionClient(model="gpt-4o-mini-2024-07-18", max_retries=0)
        team = RoundRobinGroupChat(
            [
                AssistantAgent("Planner", model_client=client, system_message=PLANNER),
                AssistantAgent("Researcher", model_client=client, system_message=RESEARCHER,
                               tools=list(TOOLS), reflect_on_tool_use=True,
                               max_tool_iterations=3),
                AssistantAgent("Writer", model_client=client, system_message=WRITER),
            ],
            termination_condition=TextMentionTermination("TERMINATE", sources=["Writer"])
            | MaxMessageTermination(12),
        )  # fmt: skip
        await team.run(task=TASK)
        await client.close()

    asyncio.run(main())


def run_magentic_one() -> None:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.teams import MagenticOneGroupChat
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    async def main() -> None:
        client = OpenAIChatCompletionClient(model="gpt-4o-mini-2024-07-18", max_retries=0)
        researcher = AssistantAgent(
            "Researcher", model_client=client, system_message=RESEARCHER,
            description="Looks facts up with tools.", tools=list(TOOLS),
            reflect_on_tool_use=True, max_tool_iterations=3,
        )  # fmt: skip
        writer = AssistantAgent(
            "Writer", model_client=client, system_message=WRITER,
            description="Writes the final plan.",
        )  # fmt: skip
        team = MagenticOneGroupChat([researcher, writer], model_client=client, max_turns=12)
        await team.run(task=TASK)
        await client.close()

    asyncio.run(main())


TEAMS: dict[str, Callable[[], None]] = {
    "ag2": run_ag2,
    "crewai": run_crewai,
    "autogen_agentchat": run_autogen_agentchat,
    "magentic_one": run_magentic_one,
}


# ------------------------------------------------------------------------------ recording
def record(framework: str, scenario: Scenario, out: Path) -> dict[str, Any]:
    """Record one run into *out* and return its label (computed from the recording)."""
    import symtrace
    from symtrace.stub import StubLLM

    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)
    READINGS.clear()
    if out.exists():
        shutil.rmtree(out)
    with StubLLM(script=scenario.script(framework)) as stub:
        saved = os.environ.get("OPENAI_BASE_URL")
        os.environ["OPENAI_BASE_URL"] = stub.url
        try:
            with symtrace.record(
                out, task=TASK, adapters=[ADAPTER.get(framework, framework)], seed=SEED,
                overwrite=True,
                config={"labelled_set": scenario.name, "fault": scenario.fault},
            ):  # fmt: skip
                TEAMS[framework]()
        finally:
            if saved is None:
                os.environ.pop("OPENAI_BASE_URL", None)
            else:
                os.environ["OPENAI_BASE_URL"] = saved
    return label_of(framework, scenario, out)


def label_of(framework: str, scenario: Scenario, bundle_dir: Path) -> dict[str, Any]:
    """Find the decision that carries the fault in the recording (see the module docstring)."""
    from symtrace import load_bundle
    from symtrace.diagnosis.anchors import decisions
    from symtrace.diagnosis.view import build_context

    ctx = build_context(load_bundle(bundle_dir))
    steps = decisions(ctx)
    agent, nth = scenario.mistake_in(framework)
    own = [v for v in steps if (v.agent or "").casefold() == agent.casefold()]
    if len(own) <= nth:
        raise SystemExit(
            f"{bundle_dir}: expected at least {nth + 1} decision(s) of {agent}, found "
            f"{[v.agent for v in steps]}"
        )
    event = own[nth]
    return {
        "trace": bundle_dir.name,
        "framework": framework,
        "scenario": scenario.name,
        "fault": scenario.fault,
        "mistake_event": event.id,
        "mistake_step": steps.index(event),
        "mistake_agent": agent,
        "decisions": len(steps),
    }


def main(argv: list[str]) -> int:
    frameworks = argv or list(FRAMEWORKS)
    unknown = [f for f in frameworks if f not in FRAMEWORKS]
    if unknown:
        raise SystemExit(f"unknown framework(s) {unknown} (known: {', '.join(FRAMEWORKS)})")
    OUT.mkdir(parents=True, exist_ok=True)
    labels_path = OUT / "labels.json"
    labels = json.loads(labels_path.read_text())["traces"] if labels_path.exists() else []
    labels = [entry for entry in labels if entry["framework"] not in frameworks]
    for framework in frameworks:
        for scenario in SCENARIOS:
            label = record(framework, scenario, OUT / f"{framework}-{scenario.name}")
            labels.append(label)
            sys.stdout.write(
                f"{framework}-{scenario.name}: mistake at step {label['mistake_step']} "
                f"({label['mistake_event']}, {label['mistake_agent']}) of {label['decisions']}\n"
            )
    labels.sort(key=lambda entry: entry["trace"])
    labels_path.write_text(json.dumps({"traces": labels}, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
