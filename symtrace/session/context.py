"""Attribution: which agent made a boundary call, on which lane, and why.

Adapters (and users) set attribution with `symtrace.agent(...)` / `symtrace.lane(...)`; it
lives in ContextVars so it follows asyncio tasks and context-copying thread pools.

A *lane* is a sequential actor. Explicit lanes (set by an adapter or the user) and the
implicit `main` lane (the main thread outside asyncio) are **strict**: their calls must come in
recorded order. Calls from other threads and asyncio tasks without explicit attribution fall
into **pooled** lanes (`thread:<name>`, `task:<name>`): which worker runs which call varies from
run to run, so replay matches them by content among the causally enabled records instead.

A *turn* is one activation of an explicit lane: each `agent(...)` / `lane(...)` block opens one
(`Turn`), unless it re-enters the turn already running on that lane in the same task or thread.
A turn is identified by its cause, not by when its calls arrive: the turn that opened it (its
parent; the root for a top-level block), its lane and its ordinal among its parent's turns on
that lane; boundary calls made in a turn by another task or thread than the one that opened it
(a `gather` inside the block, a thread pool) form a *fork* of it, one per task or thread. Strict
order holds within a turn; which recorded turn a replayed one is is decided at its first call
(replay/matching.py, docs/replay-semantics.md).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from symtrace.model import events

_agent: ContextVar[str | None] = ContextVar("symtrace_agent", default=None)
_lane: ContextVar[str | None] = ContextVar("symtrace_lane", default=None)
_reason: ContextVar[str | None] = ContextVar("symtrace_reason", default=None)
# The lanes whose latest calls decided that this turn happens (a team manager that selected this
# speaker; the agents whose messages or chat results triggered it): the turn is causally after
# those calls even when its request does not quote them (a tool-call message has no content).
_dispatched_by: ContextVar[tuple[str, ...]] = ContextVar("symtrace_dispatched_by", default=())
# The tool_call whose body is running: boundary calls inside it are part of its observation.
_within_tool: ContextVar[str | None] = ContextVar("symtrace_within_tool", default=None)

MAIN_LANE = events.MAIN_LANE
POOLED_PREFIXES = events.POOLED_PREFIXES
is_strict_lane = events.is_strict_lane
TURN = events.TURN  # event meta key: the turn of the call (`Turn.info`)
T = TypeVar("T")


class Turn:
    """One activation of a lane (see the module docstring): the unit replay keeps in order.

    `key` names it in the record: `<parent key>><lane>#<ordinal>` for a turn opened by a
    block, `<turn key>~<ordinal>` for a fork (the calls one other task or thread makes in it).
    `with_` are the parent's turns on the same lane that were still open when this one opened
    (for a fork: the turn's forks whose task or thread still ran when it made its first call);
    `opener` tells the tasks/threads that opened turns in the parent apart. What they say
    about order is one rule (events.siblings_independent()), read by the graph's lane order,
    replay's binding and a selective replay's live frontier.
    """

    __slots__ = ("_counts", "_forks", "_lock", "_open", "_openers", "fork", "key", "lane",
                 "opener", "ordinal", "owner", "parent", "with_")

    def __init__(self, lane: str, parent: Turn | None, ordinal: int, owner: object, key: str,
                 *, fork: bool = False, with_: tuple[Turn, ...] = (), opener: int = 0) -> None:
        self.lane = lane
        self.parent = parent
        self.ordinal = ordinal
        self.owner = owner  # the asyncio task or thread that opened it
        self.key = key
        self.fork = fork
        self.with_ = with_
        self.opener = opener  # which of the parent's tasks/threads opened it (their ordinal)
        self._counts: dict[tuple[str, bool], int] = {}
        self._open: list[Turn] = []
        self._forks: dict[object, Turn] = {}
        self._openers: dict[object, int] = {}  # task or thread -> ordinal (held: ids reused)
        self._lock = threading.Lock()

    def _ordinal(self, lane: str, fork: bool) -> int:
        ordinal = self._counts.get((lane, fork), 0)
        self._counts[(lane, fork)] = ordinal + 1
        return ordinal

    def open_child(self, lane: str, owner: object, serial: object = None) -> Turn:
        """A turn of *lane* opened here by *owner* (a task or thread), or on behalf of
        *serial*, an object that runs its turns one at a time whichever task it runs them in
        (they then count as opened by one task: ordered, turns_independent())."""
        with self._lock:
            ordinal = self._ordinal(lane, False)
            with_ = tuple(t for t in self._open if t.lane == lane)
            opener = self._openers.setdefault(owner if serial is None else serial,
                                              len(self._openers))
            child = Turn(lane, self, ordinal, owner, f"{self.key}>{lane}#{ordinal}",
                         with_=with_, opener=opener)
            self._open.append(child)
            return child

    def closed(self, child: Turn) -> None:
        with self._lock:
            self._open.remove(child)

    def for_owner(self, owner: object) -> Turn:
        """This turn, or its fork for *owner* when another task or thread makes the call."""
        if owner == self.owner or self.parent is None:
            return self
        with self._lock:
            found = self._forks.get(owner)
            if found is None:
                ordinal = self._ordinal(self.lane, True)
                running = tuple(fork for other, fork in self._forks.items() if _running(other))
                found = self._forks[owner] = Turn(self.lane, self, ordinal, owner,
                                                  f"{self.key}~{ordinal}", fork=True,
                                                  with_=running)
            return found

    @property
    def info(self) -> dict[str, Any]:
        """What an event records of its turn (meta `turn`), its ancestors' nested in it."""
        parent = self.parent
        return {"key": self.key, "lane": self.lane, "ordinal": self.ordinal, "fork": self.fork,
                "with": [t.key for t in self.with_], "opener": self.opener,
                "parent": parent.info if parent is not None and parent.parent is not None
                else None}

    def __repr__(self) -> str:
        return f"Turn({self.key!r})"


_turn: ContextVar[Turn | None] = ContextVar("symtrace_turn", default=None)
_root = Turn("", None, 0, None, "")
_CARRIED: tuple[ContextVar[Any], ...] = (_agent, _lane, _reason, _dispatched_by, _within_tool,
                                         _turn)


# Top-level units of framework work whose results adapters declare (see `activation`): a tree
# apart from the lanes' turns, so opening one changes nothing that is recorded or matched.
_activation: ContextVar[Turn | None] = ContextVar("symtrace_activation", default=None)
_activations = Turn("", None, 0, None, "")


def reset_turns() -> None:
    """A new session numbers its top-level turns from 0 again."""
    global _root, _activations
    _root = Turn("", None, 0, None, "")
    _activations = Turn("", None, 0, None, "")


@contextmanager
def activation(kind: str) -> Iterator[Turn | None]:
    """A framework's top-level unit of work whose result the adapter declares as the run's
    final result (a classic AG2 chat, a CrewAI kickoff): yields the turn to declare it in
    (`final_result(..., turn=...)`).

    Inside a running turn that is the top-level turn (as `final_result` assumes by default),
    inside another unit that unit (a crew CrewAI copies and kicks off inside
    `kickoff_for_each`); otherwise the block opens a unit of its own, numbered apart from the
    lanes' turns. Units that overlap (two chats under `gather`) then have `with_` like turns,
    so `Session.declare_final` keeps the result of the one that opened later, whichever ended
    last; units that ran one after the other keep "the last one's result".
    """
    enclosing = _activation.get() or top_turn()
    if enclosing is not None:
        yield enclosing
        return
    unit = _activations.open_child(kind, _owner())
    token = _activation.set(unit)
    try:
        yield unit
    finally:
        _activation.reset(token)
        _activations.closed(unit)


def _current_task() -> Any:
    """The running asyncio task, or None. asyncio is not imported for it: a program with a
    running loop has imported it, and one without it need not pay for it (fast start). The
    running loop is read without the RuntimeError `current_task()` raises outside one (every
    call of a sync program would raise and catch it)."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return None
    loop = asyncio.events._get_running_loop()
    return asyncio.current_task(loop) if loop is not None else None


def _running(owner: object) -> bool:
    """Whether the asyncio task or thread that made a fork's calls still runs: a
    fork started meanwhile may have come first (a `gather` inside a block); one started after
    it finished came after it (AgentChat awaits each model call's own task). A pool thread
    runs until the pool shuts down, so forks on pool threads count as overlapping."""
    if isinstance(owner, threading.Thread):
        return owner.is_alive()
    done = getattr(owner, "done", None)
    return done is not None and not done()


def _owner() -> object:
    task = _current_task()
    # the Thread object, not its ident: the OS reuses an ended thread's ident for the next
    # one, which made a thread that started after another ended look like the same opener
    return task if task is not None else threading.current_thread()


@contextmanager
def _turn_of(lane_name: str, serial: object = None) -> Iterator[None]:
    """Open a turn of *lane_name* for the block (or stay in the running one: re-entry)."""
    owner = _owner()
    running = _turn.get()
    if running is not None and running.lane == lane_name and running.owner == owner:
        yield
        return
    parent = running if running is not None else _root
    turn = parent.open_child(lane_name, owner, serial)
    token = _turn.set(turn)
    try:
        yield
    finally:
        _turn.reset(token)
        parent.closed(turn)


def current_turn() -> Turn | None:
    """The turn a boundary call made here belongs to (None on an implicit lane)."""
    turn = _turn.get()
    if turn is None or _lane.get() != turn.lane:
        return None
    return turn.for_owner(_owner())


def carried() -> Callable[[Callable[[], T]], T]:
    """symtrace's attribution here (agent, lane, reason, causes, tool, turn), to run work
    under on a worker thread a framework starts without the caller's context
    (`run_in_executor`): the thread's calls then belong to this turn, whichever pool thread
    runs them and whenever, instead of to a turn that thread would open by arrival time."""
    values = [(var, var.get()) for var in _CARRIED]

    def run(work: Callable[[], T]) -> T:
        tokens = [(var, var.set(value)) for var, value in values]
        try:
            return work()
        finally:
            for var, token in reversed(tokens):
                var.reset(token)

    return run


def top_turn() -> Turn | None:
    """The outermost turn running here (None outside every block)."""
    turn = _turn.get()
    while turn is not None and turn.parent is not None and turn.parent.parent is not None:
        turn = turn.parent
    return turn


@dataclass(frozen=True, slots=True)
class Attribution:
    agent: str | None
    lane: str
    reason: str | None
    dispatched_by: tuple[str, ...] = ()  # lanes whose latest calls caused this turn (see below)

    @property
    def strict(self) -> bool:
        return is_strict_lane(self.lane)


@contextmanager
def agent(name: str, *, lane: str | None = None, reason: str | None = None,
          serial: object = None) -> Iterator[None]:
    """Attribute boundary calls inside the block to agent *name* (its lane unless given).
    *serial*: an object that runs its turns one after another in tasks of their own (an
    AgentChat team container handles one message at a time): its turns stay ordered."""
    tokens = [_agent.set(name), _lane.set(lane or name)]
    reason_token = _reason.set(reason)
    try:
        with _turn_of(lane or name, serial):
            yield
    finally:
        _reason.reset(reason_token)
        _lane.reset(tokens[1])
        _agent.reset(tokens[0])


@contextmanager
def lane(name: str) -> Iterator[None]:
    """Run the block's boundary calls on the strict lane *name*."""
    token = _lane.set(name)
    try:
        with _turn_of(name):
            yield
    finally:
        _lane.reset(token)


@contextmanager
def reason(text: str) -> Iterator[None]:
    """Say why the calls in the block are made (e.g. "speaker_selection")."""
    token = _reason.set(text)
    try:
        yield
    finally:
        _reason.reset(token)


@contextmanager
def dispatched_by(lanes: str | Iterable[str] | None) -> Iterator[None]:
    """The block is a turn that the latest calls of *lanes* caused: a group chat manager's
    speaker selection, or the agents whose messages (with or without content) or chat results
    triggered it. The graph gets a control edge from each such lane's latest call to the turn's
    calls, and a selective replay in which one of those lanes went live runs the turn live."""
    if lanes is None:
        lanes = ()
    elif isinstance(lanes, str):
        lanes = (lanes,)
    token = _dispatched_by.set(tuple(sorted(set(lanes))))
    try:
        yield
    finally:
        _dispatched_by.reset(token)


@contextmanager
def within_tool(event_id: str) -> Iterator[None]:
    """Mark boundary calls made while a live tool body runs as nested in that tool call."""
    token = _within_tool.set(event_id)
    try:
        yield
    finally:
        _within_tool.reset(token)


def current_tool() -> str | None:
    return _within_tool.get()


def current() -> Attribution:
    # Every boundary call asks; a program makes its calls from a few attributions, so each
    # is built once (frozen: shared safely) rather than per call. Bounded: task lanes are
    # named per task.
    key = (_agent.get(), _lane.get() or _implicit_lane(), _reason.get(), _dispatched_by.get())
    found = _attributions.get(key)
    if found is None:
        if len(_attributions) >= _ATTRIBUTIONS_KEPT:
            _attributions.clear()
        found = _attributions[key] = Attribution(*key)
    return found


_attributions: dict[tuple[str | None, str, str | None, tuple[str, ...]], Attribution] = {}
_ATTRIBUTIONS_KEPT = 1024


def _implicit_lane() -> str:
    task = _current_task()
    if task is not None:
        return f"task:{task.get_name()}"
    if threading.get_ident() == threading.main_thread().ident:  # no Thread looked up
        return MAIN_LANE
    return f"thread:{threading.current_thread().name}"
