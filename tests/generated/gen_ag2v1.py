"""Generated AG2 1.x programs (module `ag2`): a `Program` becomes real `ag2.Agent`s and runs.

Runs in the second environment only (`nox -s next`: AG2 1.x needs openai 3 over httpx2);
the test is tests/next_stack/generated/test_generated_ag2v1.py.

Topologies, each a pattern AG2 1.x's own docs and examples show:

* ``ask``: one agent with its tools (``once``: one question; ``followup``: a second question in
  the same conversation, ``AgentReply.ask``); `concurrent` asks two agents at once.
* ``delegation``: agents asking each other through ``Agent.as_tool`` (``star``: the first agent
  can ask every other one; ``chain``: each agent can ask the next); `concurrent` runs two
  teams at once.
* ``subtasks``: an agent with ``tasks=TaskConfig(...)`` whose model may fan work out to
  short-lived agents (``run_subtask`` / ``run_subtasks``, in parallel or not, as the model's
  arguments say); the sub-task agents inherit its tools (``bounded``: at most one sub-task at
  a time, ``TaskConfig.max_concurrency=1``).
* ``hub_consulting``: agents registered on an in-process Network hub; the first opens a
  ``consulting`` channel to the second (the second's turn is started by the hub).
* ``shared_agent`` ("one agent, concurrent turns"): one agent serving two requests at once,
  two ``ask()`` (``ask``) or two ``Agent.run`` turns driven with ``start()`` / ``result()``
  (``run``) under ``asyncio.gather``: each is a turn of the agent's one lane.
* ``hub_delegate``: the program asks the first agent, which may consult the others over the
  hub with the Network plugin's ``delegate`` tool (and its other network tools: ``peers``,
  ``channels``, ``say``, ...).

A consulted agent may post a note (``say``) before its reply, so its turn can still be running
when the program has the reply; the program waits for every agent's turns to end before it
closes the hub (otherwise whether that turn's last model call is made would be a race in the
program, not in the replay).

Tools come from the draw (0-3 per agent: returning, raising, slow); the model's tool choices,
arguments and texts come from the unseeded stochastic stub. Streaming switches
``OpenAIConfig(streaming=...)`` for every agent; streamed chunks are part of the transcript.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ag2 import Agent, MemoryStream, TaskConfig, tool
from ag2.config import OpenAIConfig
from ag2.events import ModelMessageChunk
from ag2.knowledge import MemoryKnowledgeStore
from ag2.middleware import BaseMiddleware
from ag2.network import EV_TEXT, Hub
from gen_spec import AgentSpec, Program, tool_body

ADAPTER = "ag2v1"
MODEL = "gpt-4o-mini"
TASK_PROMPT = "You are a task agent of the travel team. Report what you found."
FOLLOWUP = "Now list the two most important points."
WAL_POLLS = 400  # x 25 ms: how long the program waits for the hub's reply before failing


def _config(program: Program) -> OpenAIConfig:
    # max_retries=0: a failed request is the program's failure, not a hidden second request
    return OpenAIConfig(model=MODEL, streaming=program.streaming, max_retries=0)


def _tools(spec: AgentSpec) -> list[Any]:
    return [tool(tool_body(t), name=t.name, description=f"Look up {t.kind} facts about a topic.")
            for t in spec.tools]


def _agent(program: Program, spec: AgentSpec, *, extra: list[Any] | None = None,
           **kwargs: Any) -> Agent:
    return Agent(spec.name, program.prompt(spec), config=_config(program),
                 tools=[*_tools(spec), *(extra or [])], **kwargs)


class Turns:
    """Middleware factory counting the turns of the agents it is given to: the hub programs
    wait until none is running before they close the hub."""

    def __init__(self) -> None:
        self.running = 0
        self.ended = 0

    def __call__(self, event: Any, context: Any) -> BaseMiddleware:
        return _Counted(self, event, context)


class _Counted(BaseMiddleware):
    def __init__(self, turns: Turns, event: Any, context: Any) -> None:
        super().__init__(event, context)
        self.turns = turns

    async def on_turn(self, call_next: Any, event: Any, context: Any) -> Any:
        self.turns.running += 1
        try:
            return await call_next(event, context)
        finally:
            self.turns.running -= 1
            self.turns.ended += 1


def _task(program: Program, instance: int = 0) -> str:
    return f"Plan a day in {program.task_topic} (request {instance})."


def describe(event: Any) -> str | None:
    """One transcript line for the events that say what happened; None for the rest.

    Event, task and stream ids are uuid4 (differ run to run) and are left out, as are the
    TaskStarted/TaskCompleted events of sub-tasks: concurrent sub-tasks enter the shared
    history in the order they finish, which is timing (the model sees their results joined
    in task order)."""
    kind = type(event).__name__
    if kind == "ModelResponse":
        message = getattr(event, "message", None)
        calls = [f"{c.name}({c.arguments})"
                 for c in getattr(getattr(event, "tool_calls", None), "calls", None) or ()]
        return f"{kind}: {getattr(message, 'content', None)} {calls}"
    if kind in ("ToolResultEvent", "ToolErrorEvent"):
        text = " ".join(getattr(part, "content", "") for part in event.result.parts)
        return f"{kind} {event.name}: {text.splitlines()[-1] if text else ''}"
    return None


def in_call_order(events: list[Any]) -> list[Any]:
    """The history with the tool results of each model response in the order of the calls
    that asked for them, placed before the next model response: AG2 appends a batch's results
    as they complete (with other events in between), and the tools that run on replay too (the
    Network plugin's, `as_tool` delegations, sub-tasks) complete in scheduling order. The model
    is shown them in call order, which is what the transcript keeps."""
    out: list[Any] = []
    position: dict[str, int] = {}
    results: list[Any] = []
    for event in events:
        if type(event).__name__ in ("ToolResultEvent", "ToolErrorEvent"):
            results.append(event)
            continue
        if type(event).__name__ == "ModelResponse":
            out.extend(sorted(results, key=lambda e: position.get(e.parent_id, len(position))))
            results = []
            calls = getattr(getattr(event, "tool_calls", None), "calls", None) or ()
            position = {call.id: index for index, call in enumerate(calls)}
        out.append(event)
    out.extend(sorted(results, key=lambda e: position.get(e.parent_id, len(position))))
    return out


async def _lines(reply: Any, chunks: list[str]) -> list[str]:
    events = in_call_order(await reply.history.get_events())
    lines = [line for line in map(describe, events) if line is not None]
    streamed = "".join(chunks)
    return [*lines, f"STREAMED: {streamed}" if streamed else "STREAMED: -",
            f"FINAL: {reply.body}"]


async def _ask(program: Program, agent: Agent, instance: int) -> list[str]:
    chunks: list[str] = []
    stream = MemoryStream()
    stream.where(ModelMessageChunk).subscribe(lambda chunk: chunks.append(chunk.content))
    reply = await agent.ask(_task(program, instance), stream=stream)
    lines = await _lines(reply, chunks)
    if program.option == "followup":
        chunks.clear()
        reply = await reply.ask(FOLLOWUP)
        lines += ["-- followup --", *await _lines(reply, chunks)]
    return lines


async def _shared_turn(program: Program, agent: Agent, instance: int) -> list[str]:
    if program.option == "ask":
        return await _ask(program, agent, instance)
    chunks: list[str] = []
    async with agent.run(_task(program, instance)) as turn:
        turn.stream.where(ModelMessageChunk).subscribe(lambda chunk: chunks.append(chunk.content))
        turn.start()
        reply = await turn.result()
    return await _lines(reply, chunks)


def _team(program: Program) -> Agent:
    """The agents of a delegation program, wired by `as_tool`; returns the one asked."""
    specs = program.agents
    built: dict[str, Agent] = {}
    if program.option == "chain":  # each agent can ask the next one
        for spec, following in zip(reversed(specs), [None, *reversed(specs)], strict=False):
            extra = [built[following.name].as_tool(
                description=f"Ask the {following.name} for help.")] if following else []
            built[spec.name] = _agent(program, spec, extra=extra)
        return built[specs[0].name]
    helpers = [_agent(program, spec) for spec in specs[1:]]  # star: the first asks any other
    return _agent(program, specs[0], extra=[
        helper.as_tool(description=f"Ask the {helper.name} for help.") for helper in helpers])


async def _hub_consulting(program: Program) -> list[str]:
    hub = await Hub.open(MemoryKnowledgeStore(), ttl_sweep_interval=0)
    try:
        turns = Turns()
        asker, *others = [await hub.register(_agent(program, spec, middleware=[turns]))
                          for spec in program.agents]
        names = {asker.agent_id: program.agents[0].name}
        names |= {c.agent_id: s.name for c, s in zip(others, program.agents[1:], strict=True)}
        channel = await asker.open(type="consulting", target=program.agents[1].name)
        await channel.send(_task(program), audience=[others[0].agent_id])
        for _ in range(WAL_POLLS):
            texts = [e for e in await hub.read_wal(channel.channel_id) if e.event_type == EV_TEXT]
            if len(texts) >= 2 and turns.ended and not turns.running:
                return [f"{names.get(e.sender_id, '?')}: {e.event_data['text']}" for e in texts]
            await asyncio.sleep(0.025)
        raise TimeoutError("the consulted agent did not answer on the channel")
    finally:
        await hub.close()


async def _hub_delegate(program: Program) -> list[str]:
    hub = await Hub.open(MemoryKnowledgeStore(), ttl_sweep_interval=0)
    try:
        turns = Turns()
        clients = [await hub.register(_agent(program, spec, middleware=[turns]))
                   for spec in program.agents]
        peers = ", ".join(spec.name for spec in program.agents[1:])
        reply = await clients[0].agent.ask(f"{_task(program)} Consult: {peers}.")
        for _ in range(WAL_POLLS):  # consulted agents' turns still running after their reply
            if not turns.running:
                return await _lines(reply, [])
            await asyncio.sleep(0.025)
        raise TimeoutError("a consulted agent's turn did not end")
    finally:
        await hub.close()


async def _run(program: Program) -> list[str]:
    topology = program.topology
    instances = range(2 if program.concurrent else 1)
    if topology == "ask":
        agents = [_agent(program, program.agents[0]) for _ in instances]
        runs = await asyncio.gather(*(_ask(program, a, i) for i, a in zip(instances, agents,
                                                                          strict=True)))
        return [line for lines in runs for line in lines]
    if topology == "delegation":
        roots = [_team(program) for _ in instances]
        runs = await asyncio.gather(*(_ask(program, r, i) for i, r in zip(instances, roots,
                                                                          strict=True)))
        return [line for lines in runs for line in lines]
    if topology == "subtasks":
        tasks = TaskConfig(prompt=TASK_PROMPT,
                           max_concurrency=1 if program.option == "bounded" else None)
        return await _ask(program, _agent(program, program.agents[0], tasks=tasks), 0)
    if topology == "shared_agent":
        agent = _agent(program, program.agents[0])
        runs = await asyncio.gather(*(_shared_turn(program, agent, i) for i in range(2)))
        return [line for lines in runs for line in lines]
    if topology == "hub_consulting":
        return await _hub_consulting(program)
    if topology == "hub_delegate":
        return await _hub_delegate(program)
    raise ValueError(f"unknown AG2 1.x topology {topology!r}")


def run(program: Program) -> list[str]:
    return asyncio.run(_run(program))
