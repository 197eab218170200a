"""Generated plain programs: the openai SDK under `symtrace.agent` blocks, no framework.

Every agent of the program serves two requests at once: each request is a turn of the
agent's lane (`with symtrace.agent(name)`), and the turns of all agents run together, then the
first agent combines the answers in a turn of its own (sequential, after them). A turn asks
the model, runs the agent's tools (`symtrace.tool`; a tool of kind `raise` fails and its error
becomes a fact, `slow` sleeps a random while: finish order varies run to run), and asks again
with the facts when there were any.

Topologies (the "one agent, concurrent turns" shape, issue 33):

* ``gather``: the turns are asyncio tasks under `asyncio.gather` (AsyncOpenAI).
* ``threads``: the turns run on a thread pool, one thread each (OpenAI; a pool does not copy
  the context, so each block is a top-level turn started on its worker thread). The turns
  meet at a barrier after they opened, so they always overlap: thread turns that happened not
  to overlap in the recording are an open finding (docs/generated-programs.md).

Streaming switches `stream=True` on every request (the transcript keeps the joined chunks).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import openai
from gen_spec import AgentSpec, Program, ToolFailure, tool_body

import symtrace

ADAPTER = ""  # none: the openai SDK's requests cross symtrace's own HTTP boundary
MODEL = "gpt-4o-mini"
REQUESTS = 2  # concurrent requests each agent serves
BARRIER_TIMEOUT = 60.0  # seconds: a thread that never reaches the barrier fails the run


def _task(program: Program, instance: int) -> str:
    return f"Plan a day in {program.task_topic} (request {instance})."


def _messages(program: Program, agent: AgentSpec, text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": program.prompt(agent)},
            {"role": "user", "content": text}]


def _tools(agent: AgentSpec) -> list[Callable[[str], str]]:
    return [symtrace.tool(tool_body(spec)) for spec in agent.tools]


def _facts(program: Program, agent: AgentSpec, instance: int) -> list[str]:
    # each request looks up its own subject (two customers, two orders): the same tool asked
    # the same thing by two concurrent turns of one lane is a known graph limit (identical
    # tool results of sibling turns get linked across them; see docs/replay-semantics.md)
    facts = []
    for run_tool in _tools(agent):
        try:
            facts.append(run_tool(f"{program.task_topic} #{instance}"))
        except ToolFailure as exc:
            facts.append(f"error: {exc}")
    return facts


def _followup(program: Program, agent: AgentSpec, instance: int, answer: str,
              facts: list[str]) -> list[dict[str, str]]:
    return [*_messages(program, agent, _task(program, instance)),
            {"role": "assistant", "content": answer},
            {"role": "user", "content": "Facts: " + "; ".join(facts)}]


def _combine(program: Program, answers: list[str]) -> list[dict[str, str]]:
    return _messages(program, program.agents[0], "Combine: " + " | ".join(answers))


# -- asyncio ------------------------------------------------------------------------------------
async def _ask_async(client: openai.AsyncOpenAI, program: Program,
                     messages: list[dict[str, str]]) -> str:
    if not program.streaming:
        reply = await client.chat.completions.create(model=MODEL, messages=messages)
        return reply.choices[0].message.content or ""
    stream = await client.chat.completions.create(model=MODEL, messages=messages, stream=True)
    return "".join([chunk.choices[0].delta.content or "" async for chunk in stream
                    if chunk.choices])


async def _turn_async(client: openai.AsyncOpenAI, program: Program, agent: AgentSpec,
                      instance: int) -> list[str]:
    with symtrace.agent(agent.name):
        answer = await _ask_async(client, program,
                                  _messages(program, agent, _task(program, instance)))
        lines = [f"{agent.name}[{instance}]: {answer}"]
        facts = _facts(program, agent, instance)
        if facts:
            again = await _ask_async(client, program,
                                     _followup(program, agent, instance, answer, facts))
            lines += [f"  facts: {facts}", f"{agent.name}[{instance}] again: {again}"]
        return lines


async def _gather(program: Program) -> list[str]:
    async with openai.AsyncOpenAI(base_url=os.environ["OPENAI_BASE_URL"],
                                  max_retries=0) as client:
        turns = await asyncio.gather(*(_turn_async(client, program, agent, i)
                                       for agent in program.agents for i in range(REQUESTS)))
        lines = [line for turn in turns for line in turn]
        with symtrace.agent(program.agents[0].name):
            combined = await _ask_async(client, program, _combine(program, lines))
    return [*lines, f"COMBINED: {combined}"]


# -- threads ------------------------------------------------------------------------------------
def _ask_sync(client: openai.OpenAI, program: Program, messages: list[dict[str, str]]) -> str:
    if not program.streaming:
        reply = client.chat.completions.create(model=MODEL, messages=messages)
        return reply.choices[0].message.content or ""
    stream = client.chat.completions.create(model=MODEL, messages=messages, stream=True)
    return "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)


def _turn_sync(client: openai.OpenAI, program: Program, agent: AgentSpec, instance: int,
               opened: threading.Barrier) -> list[str]:
    with symtrace.agent(agent.name):
        opened.wait(BARRIER_TIMEOUT)
        answer = _ask_sync(client, program, _messages(program, agent, _task(program, instance)))
        lines = [f"{agent.name}[{instance}]: {answer}"]
        facts = _facts(program, agent, instance)
        if facts:
            again = _ask_sync(client, program, _followup(program, agent, instance, answer, facts))
            lines += [f"  facts: {facts}", f"{agent.name}[{instance}] again: {again}"]
        return lines


def _threads(program: Program) -> list[str]:
    with openai.OpenAI(base_url=os.environ["OPENAI_BASE_URL"], max_retries=0) as client:
        return _threads_with(client, program)


def _threads_with(client: openai.OpenAI, program: Program) -> list[str]:
    work: list[tuple[AgentSpec, int]] = [(a, i) for a in program.agents for i in range(REQUESTS)]
    opened = threading.Barrier(len(work))
    with ThreadPoolExecutor(len(work)) as pool:
        turns = list(pool.map(lambda item: _turn_sync(client, program, *item, opened), work))
    lines = [line for turn in turns for line in turn]
    with symtrace.agent(program.agents[0].name):
        combined = _ask_sync(client, program, _combine(program, lines))
    return [*lines, f"COMBINED: {combined}"]


def run(program: Program) -> list[str]:
    if program.topology == "gather":
        return asyncio.run(_gather(program))
    if program.topology == "threads":
        return _threads(program)
    raise ValueError(f"unknown plain topology {program.topology!r}")
