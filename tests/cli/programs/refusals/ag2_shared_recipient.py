"""AG2 classic: two concurrent chats of `a_initiate_chats` with one recipient object, which
symtrace refuses (UnsupportedConstruct) before anything of them runs: the concurrent form of
ag2_refused_on_replay.py, run directly."""

import asyncio
import os
import sys

from ag2_refused_on_replay import main

if __name__ == "__main__":
    os.environ["CONCURRENT"] = "1"  # two chats, one recipient; the refusal is raised
    sys.exit(asyncio.run(main()))
