"""AG2's own nondeterminism, made a function of the bundle.

* **Random speaker selection.** `GroupChat.random_select_speaker` draws with the global
  `random.choice`. symtrace seeds `random` from s0, so a restarted run draws the same, unless
  something that consumed the stream while recording does not run on replay (a tool body
  that rolls dice is skipped). The draw is therefore also a boundary
  (`ag2.random_select_speaker`, the candidate names → the chosen name): it still happens on
  replay, keeping Python's random stream where the recording had it, but the recorded choice
  is the one returned.
* **Event uuids.** Every AG2 event gets `uuid4()`, and the termination event prints it
  (">>>>>>>> TERMINATING RUN (<uuid>)"), so two runs with identical boundaries would print
  different transcripts. While a session is active, event uuids are seeded instead
  (`seeded_uuid4` of the adapter contract), drawn per chat: each chat of `a_initiate_chats`
  is its own sequence (`_lanes.chat_sequence`), so concurrent chats get their own ids in
  whichever order they run. The bundle records the derivation it used
  (symtrace/model/seeded_ids.py): bundles recorded before draw from the s0-seeded `random`
  in global call order, and replay still gives them those ids. Ids drawn on AG2's executor
  threads (no chat context there) are in the `main` sequence.
  (`ChatResult.chat_id` is also random but never
  printed by AG2; it is declared volatile in docs/adapters/ag2.md.)
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from typing import Any

from symtrace.errors import UnreplayableEvent
from symtrace.frameworks.contract import call_tool, seeded_uuid4
from symtrace_ag2._attribution import agent_name
from symtrace_ag2._lanes import chat_sequence

RANDOM_SPEAKER = "ag2.random_select_speaker"


def chat_uuid4(original: Callable[[], uuid.UUID]) -> Callable[[], uuid.UUID]:
    """AG2's event `uuid4`, seeded per chat."""
    return seeded_uuid4(original, chat_sequence)


def random_speaker(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def random_select_speaker(self: Any, agents: Any = None) -> Any:
        candidates = list(self.agents if agents is None else agents)
        drawn = original(self, agents)
        names = [agent_name(agent) for agent in candidates]
        chosen = call_tool(RANDOM_SPEAKER, {"candidates": names}, lambda: agent_name(drawn))
        for agent in candidates:
            if agent_name(agent) == chosen:
                return agent
        raise UnreplayableEvent(f"recorded speaker {chosen!r} is not a candidate ({names})")

    return random_select_speaker
