"""Generated classic-AG2 programs (module `autogen`): a `Program` becomes real agents and runs.

Topologies: a two-agent chat (user proxy executing the assistant's tools; sync or async, two
at once with `concurrent`), group chats with each speaker-selection mode, nested chats (a
reviewer's chat summarised back), `initiate_chats` sequences with carryover, and
`a_initiate_chats` with concurrent prerequisite chats; summaries by `last_msg` or
`reflection_with_llm`. ``shared_agent`` ("one agent, concurrent turns"): one assistant serving
two customers at once, each customer's user proxy in its own `a_initiate_chat` under
`asyncio.gather` (the assistant keeps one history per peer; both proxies run its tools).
"""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from autogen import (
    AssistantAgent,
    GroupChat,
    GroupChatManager,
    UserProxyAgent,
    register_function,
)
from gen_spec import AgentSpec, Program, tool_body

ADAPTER = "ag2"
CARRYOVER = "The traveller has one free afternoon."
SUMMARY_PROMPT = "Summarise the conversation above in one sentence."


def _llm_config(program: Program) -> dict[str, Any]:
    entry = {"model": "stub-model", "base_url": os.environ["OPENAI_BASE_URL"],
             "api_key": os.environ["OPENAI_API_KEY"], "price": [0.0, 0.0],
             **({"stream": True} if program.streaming else {})}
    return {"config_list": [entry], "cache_seed": None}


def _terminates(message: dict[str, Any]) -> bool:
    return "TERMINATE" in str(message.get("content") or "")


def _user(program: Program, name: str = "user_proxy") -> UserProxyAgent:
    return UserProxyAgent(name, human_input_mode="NEVER", code_execution_config=False,
                          is_termination_msg=_terminates,
                          max_consecutive_auto_reply=program.turns)


def _assistant(program: Program, spec: AgentSpec, executor: UserProxyAgent) -> AssistantAgent:
    agent = AssistantAgent(spec.name, system_message=program.prompt(spec),
                           llm_config=_llm_config(program), is_termination_msg=_terminates)
    for tool in spec.tools:
        register_function(tool_body(tool), caller=agent, executor=executor, name=tool.name,
                          description=f"Look up {tool.kind} facts about a topic.")
    return agent


def _summary(program: Program) -> dict[str, Any]:
    if program.option == "reflection_with_llm":
        return {"summary_method": "reflection_with_llm",
                "summary_args": {"summary_prompt": SUMMARY_PROMPT}}
    return {"summary_method": "last_msg"}


def _line(message: dict[str, Any]) -> str:
    calls = [(c["function"]["name"], c["function"]["arguments"])
             for c in message.get("tool_calls") or []]
    return f"{message.get('name')} {message.get('role')}: {message.get('content')} {calls}"


def _lines(results: list[Any]) -> list[str]:
    out = []
    for result in results:
        out.extend(_line(m) for m in result.chat_history)
        out.append(f"SUMMARY: {result.summary}")
    return out


def _task(program: Program, instance: int = 0) -> str:
    return f"Plan a day in {program.task_topic} (chat {instance})."


def _two_agents(program: Program) -> tuple[UserProxyAgent, AssistantAgent]:
    user = _user(program)
    return user, _assistant(program, program.agents[0], user)


def _two_agent_sync(program: Program, instance: int,
                    agents: tuple[UserProxyAgent, AssistantAgent]) -> list[Any]:
    user, assistant = agents
    return [user.initiate_chat(assistant, message=_task(program, instance),
                               max_turns=program.turns, summary_method="last_msg")]


async def _two_agent_async(program: Program, instance: int) -> list[Any]:
    user = _user(program)
    assistant = _assistant(program, program.agents[0], user)
    return [await user.a_initiate_chat(assistant, message=_task(program, instance),
                                       max_turns=program.turns, summary_method="last_msg")]


def _groupchat(program: Program) -> list[Any]:
    user = _user(program)
    agents = [_assistant(program, spec, user) for spec in program.agents]
    # random: no repeated speaker, so the first draw after the user's opening message is an
    # assistant (otherwise a short chat may draw only the user proxy and ask no model at all)
    chat = GroupChat([user, *agents], messages=[], max_round=program.turns + 1,
                     speaker_selection_method=program.option,
                     allow_repeat_speaker=program.option != "random")
    manager = GroupChatManager(chat, llm_config=_llm_config(program),
                               is_termination_msg=_terminates)
    return [user.initiate_chat(manager, message=_task(program), summary_method="last_msg")]


def _nested(program: Program) -> list[Any]:
    user = _user(program)
    writer_spec, reviewer_spec = program.agents
    writer = _assistant(program, writer_spec, user)
    reviewer = _assistant(program, reviewer_spec, user)

    def review(recipient: Any, messages: list[dict[str, Any]], sender: Any, config: Any
               ) -> str:
        return f"Review this draft:\n\n{messages[-1].get('content')}"

    user.register_nested_chats(
        [{"recipient": reviewer, "message": review, "max_turns": 1, **_summary(program)}],
        trigger=writer,
    )
    return [writer.initiate_chat(user, message=_task(program), max_turns=2,
                                 summary_method="last_msg")]


def _sequence(program: Program) -> list[Any]:
    user = _user(program)
    agents = [_assistant(program, spec, user) for spec in program.agents]
    chats = [
        {"recipient": agent, "message": f"Step {i + 1}: {_task(program)}", "max_turns": 2,
         **_summary(program), **({"carryover": CARRYOVER} if i == 0 else {})}
        for i, agent in enumerate(agents)
    ]
    return user.initiate_chats(chats)


async def _chats_async(program: Program) -> list[Any]:
    user = _user(program)
    *first, last = [_assistant(program, spec, user) for spec in program.agents]
    chats = [
        {"chat_id": i + 1, "recipient": agent, "message": f"Part {i + 1}: {_task(program)}",
         "max_turns": 2, **_summary(program)}
        for i, agent in enumerate(first)
    ]
    chats.append({"chat_id": len(first) + 1, "recipient": last, "max_turns": 1,
                  "message": "Combine the parts.", "carryover": CARRYOVER,
                  "prerequisites": [c["chat_id"] for c in chats], "summary_method": "last_msg"})
    results = await user.a_initiate_chats(chats)
    return [results[k] for k in sorted(results)]


async def _shared_agent(program: Program) -> list[Any]:
    customers = [_user(program, f"customer_{i}") for i in range(2)]
    assistant = _assistant(program, program.agents[0], customers[0])
    for tool in program.agents[0].tools:  # the second customer's proxy runs them too
        customers[1].register_for_execution(name=tool.name)(tool_body(tool))
    return list(await asyncio.gather(*(
        customer.a_initiate_chat(assistant, message=_task(program, i), max_turns=program.turns,
                                 summary_method="last_msg")
        for i, customer in enumerate(customers))))


def run(program: Program) -> list[str]:
    topology = program.topology
    if topology == "two_agent":
        instances = range(2 if program.concurrent else 1)
        if program.option == "async":
            async def both() -> list[list[Any]]:
                return await asyncio.gather(*(_two_agent_async(program, i) for i in instances))
            results = [r for rs in asyncio.run(both()) for r in rs]
        else:
            with ThreadPoolExecutor(len(instances)) as pool:
                # built here, in order: same-named agents are numbered (lanes planner,
                # planner@2) in construction order, which threads would make a race
                agents = [_two_agents(program) for _ in instances]
                results = [r for rs in pool.map(lambda i: _two_agent_sync(program, i, agents[i]),
                                                instances) for r in rs]
    elif topology == "groupchat":
        results = _groupchat(program)
    elif topology == "nested":
        results = _nested(program)
    elif topology == "sequence":
        results = _sequence(program)
    elif topology == "chats_async":
        results = asyncio.run(_chats_async(program))
    elif topology == "shared_agent":
        results = asyncio.run(_shared_agent(program))
    else:
        raise ValueError(f"unknown AG2 topology {topology!r}")
    return _lines(results)
