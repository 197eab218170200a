"""AG2's event uuids are seeded per chat: concurrent chats of `a_initiate_chats` get their own
ids whatever order they run in (symtrace/model/seeded_ids.py, _nondeterminism.chat_uuid4)."""

from __future__ import annotations

import asyncio

import pytest

import symtrace
from symtrace.model import seeded_ids

pytestmark = pytest.mark.framework("ag2")


def _chats(first: int) -> dict[int, list[str]]:
    """Chats 1 and 2 draw AG2 event uuids (through the hooked module global), chat *first*
    drawing both of its ids before the other draws any."""
    from autogen.events import base_event
    from symtrace_ag2._lanes import concurrent_chat

    drawn: dict[int, list[str]] = {1: [], 2: []}

    async def chat(chat_id: int, turn: asyncio.Event) -> None:
        await turn.wait()
        with concurrent_chat(chat_id):
            drawn[chat_id] += [str(base_event.uuid4()) for _ in range(2)]

    async def main() -> None:
        turns = {1: asyncio.Event(), 2: asyncio.Event()}
        tasks = [asyncio.create_task(chat(i, turns[i])) for i in (1, 2)]
        for chat_id in (first, 3 - first):
            turns[chat_id].set()
            await asyncio.sleep(0)
            await asyncio.sleep(0)
        await asyncio.gather(*tasks)
        drawn[0] = [str(base_event.uuid4())]  # outside every concurrent chat: main

    asyncio.run(main())
    return drawn


def test_concurrent_chats_replay_their_own_uuids_in_the_other_order(tmp_path):
    with symtrace.record(tmp_path / "b", task="ids", seed=5, adapters=["ag2"]):
        recorded = _chats(first=1)
    assert symtrace.load_bundle(tmp_path / "b").initial_state[seeded_ids.FIELD] == \
        seeded_ids.PER_SEQUENCE
    with symtrace.replay(tmp_path / "b", adapters=["ag2"]):
        replayed = _chats(first=2)
    assert replayed == recorded
    assert len({u for ids in recorded.values() for u in ids}) == 5
