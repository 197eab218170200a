"""Who makes a call: CrewAI agents become symtrace agents, lanes and reasons.

Every agent works on its own strict lane, named by its role; a second agent with the same
role in one crew works on `f"{role}@2"`, and so on, and the agents of the n-th crew kicked off
in a run (n ≥ 2) on `f"crew@{n}/{role}"` (see `lane_of`). Three refinements:

* a native tool call runs on the lane `f"{agent lane}/tool#{index}"`, `index` being its
  position in the LLM response, because CrewAI runs the calls of one response in parallel on
  a thread pool (each worker gets a copy of the context, so the lane follows it);
* a coworker that does delegated work (`Delegate work to coworker`, `Ask question to
  coworker`) continues on the lane of the delegating tool call, so its first request follows
  the hand-off in lane order and a live hand-off makes the coworker's calls live too;
* framework-internal calls say why they are made (`reason`): the hierarchical manager's
  calls, crew planning, agent reasoning, output conversion, guardrails, context summaries,
  input-token preflights, the injected date.

Everything lives in ContextVars, which CrewAI copies into its worker threads.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from symtrace.frameworks.contract import active, context, instance_lane

_delegated: ContextVar[bool] = ContextVar("symtrace_crewai_delegated", default=False)
_native_call_id: ContextVar[str | None] = ContextVar("symtrace_crewai_call_id", default=None)
_in_tool: ContextVar[bool] = ContextVar("symtrace_crewai_in_tool", default=False)
_flow_step: ContextVar[str | None] = ContextVar("symtrace_crewai_flow_step", default=None)

MANAGER = "manager"


def role_of(agent: Any) -> str:
    """The name an agent is known by in a crew (its role), or its class name."""
    role = getattr(agent, "role", None)
    role = role.strip() if isinstance(role, str) else None  # YAML `role: >` ends in "\n"
    return role or type(agent).__name__


def lane_of(agent: Any) -> str:
    """The agent's strict lane: its role, or `f"{role}@{n}"` for the n-th same-role agent.

    Two agent objects with one role (a factory building one researcher per async task) are
    two sequential actors: sharing a lane would make their concurrent calls a spurious
    reordering. The ordinal is the agent's place among its crew's same-role agents (crew
    agents, then task agents, then the manager), fixed by how the program builds the crew,
    never by which thread runs first. Outside a crew the role alone is the lane. Inside a
    Flow step the lane is prefixed with the step (`flow_step`), since steps run concurrently.
    """
    role = lane = role_of(agent)
    crew = getattr(agent, "crew", None)
    step = _flow_step.get()
    if crew is not None and not isinstance(crew, str):
        same_role = [a for a in _crew_members(crew) if role_of(a) == role]
        ordinal = next((i for i, member in enumerate(same_role) if member is agent), 0)
        lane = role if ordinal == 0 else f"{role}@{ordinal + 1}"
        if step is None:
            lane = crew_prefix(crew) + lane
    return lane if step is None else f"{step}/{lane}"


def crew_prefix(crew: Any) -> str:
    """`""` for the first crew kicked off in the run, `"crew@n/"` for the n-th: crews that
    run at once (`gather` of two `kickoff_async`) each with a `researcher` keep their agents
    on distinct lanes. Registered when the crew is kicked off (`register_crew`), in program
    order, never by which of its threads asks first."""
    known = _crews.get(id(crew))
    if known is None or known[0] is not crew or known[2] is not active():
        return ""  # not kicked off in this session (a copy CrewAI made): no place of its own
    return "" if known[1] == "crew" else f"{known[1]}/"


# id(crew) -> (crew, its name among the session's crews, the session): the crew is held, so
# its id is not reused while the entry lives
_crews: dict[int, tuple[Any, str, Any]] = {}


def register_crew(crew: Any) -> None:
    """Give *crew* its place among the run's crews (called where it is kicked off, before
    CrewAI hands it to a worker thread)."""
    session = active()
    for key in [k for k, v in _crews.items() if v[2] is not session]:
        del _crews[key]  # entries of an ended session
    known = _crews.get(id(crew))
    if known is None or known[0] is not crew:
        _crews[id(crew)] = (crew, instance_lane(crew, "crew"), session)


def _crew_members(crew: Any) -> list[Any]:
    members: list[Any] = []
    candidates = [*(getattr(crew, "agents", None) or ()),
                  *(getattr(task, "agent", None) for task in getattr(crew, "tasks", None) or ()),
                  getattr(crew, "manager_agent", None)]
    for agent in candidates:
        if agent is not None and not any(agent is known for known in members):
            members.append(agent)
    return members


def is_manager(agent: Any) -> bool:
    crew = getattr(agent, "crew", None)
    return crew is not None and getattr(crew, "manager_agent", None) is agent


@contextmanager
def agent_scope(agent: Any, *, reason: str | None = None) -> Iterator[None]:
    """Attribute the calls made inside the block to *agent*.

    The lane is the agent's role, or the delegating tool call's lane for delegated work.
    Without an explicit *reason* the enclosing one is kept (a planning or guardrail agent
    works for that purpose), except across a delegation, where the coworker works for itself.
    """
    current = context.current()
    delegated = _delegated.get()
    lane = current.lane if delegated else lane_of(agent)
    if reason is None and not delegated:
        reason = current.reason
    token = _delegated.set(False)
    try:
        with context.agent(role_of(agent), lane=lane, reason=reason):
            yield
    finally:
        _delegated.reset(token)


@contextmanager
def flow_step(flow: Any, method_name: str) -> Iterator[None]:
    """One step of a user Flow: its own strict lane `f"{Flow class}.{method}"`.

    CrewAI runs the listeners of one trigger concurrently, so each step is a sequential actor
    of its own: LLM calls made in the step body go on the step's lane, and agents of crews
    started in it work on `f"{step lane}/{agent lane}"`.
    """
    lane = f"{type(flow).__name__}.{method_name}"
    token = _flow_step.set(lane)
    try:
        with context.agent(type(flow).__name__, lane=lane):
            yield
    finally:
        _flow_step.reset(token)


@contextmanager
def reason_scope(text: str) -> Iterator[None]:
    """Say why the calls in the block are made, keeping agent and lane."""
    with context.reason(text):
        yield


@contextmanager
def native_tool_lane(call_id: str | None, index: int) -> Iterator[None]:
    """Run one native tool call of an LLM response on its own lane, remembering its id."""
    lane = f"{context.current().lane}/tool#{index}"
    token = _native_call_id.set(call_id)
    try:
        with context.lane(lane):
            yield
    finally:
        _native_call_id.reset(token)


@contextmanager
def delegation() -> Iterator[None]:
    """The coworker started inside the block continues on the current lane."""
    token = _delegated.set(True)
    call_token = _native_call_id.set(None)  # the coworker's own tool calls have their own ids
    try:
        yield
    finally:
        _native_call_id.reset(call_token)
        _delegated.reset(token)


@contextmanager
def inside_tool() -> Iterator[None]:
    """Tool calls a tool body makes itself are part of that body, not boundaries of their own."""
    token = _in_tool.set(True)
    try:
        yield
    finally:
        _in_tool.reset(token)


def is_inside_tool() -> bool:
    return _in_tool.get()


def native_call_id() -> str | None:
    return _native_call_id.get()
