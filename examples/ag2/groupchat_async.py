"""The `groupchat_auto` group, run with the async API: `a_initiate_chat` to a GroupChatManager.

AG2 then selects speakers with `a_select_speaker` (its "auto" selection is an async nested
chat) and runs every agent's model call on an executor thread; the researcher's tool is run
by the user proxy.

    export OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 OPENAI_API_KEY=x
    python examples/ag2/groupchat_async.py
"""

from __future__ import annotations

import asyncio
import sys

from ag2_common import print_outcome
from groupchat_auto import TASK, build


async def main() -> int:
    user, manager, group = build()
    result = await user.a_initiate_chat(manager, message=TASK)
    print_outcome(result.summary, group.messages)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
