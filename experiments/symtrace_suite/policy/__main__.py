"""`python -m symtrace_suite.policy --port-file F --seed N [--skill S]`: serve the policy.

Runs the stub chat-completions server with a `SuitePolicy` on 127.0.0.1 (ephemeral port) and
writes `{"url": "http://127.0.0.1:P/v1", "port": P}` to F atomically once it listens.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path

import orjson

from symtrace.stub.server import StubLLM
from symtrace_suite.policy import SuitePolicy


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m symtrace_suite.policy")
    parser.add_argument("--port-file", required=True, type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skill", type=float, default=0.8, help="P(no mistake) per decision")
    args = parser.parse_args(argv)
    if not args.port_file.parent.is_dir():
        parser.error(f"--port-file: directory {args.port_file.parent} does not exist")
    try:
        policy = SuitePolicy(args.seed, args.skill)
    except ValueError as exc:
        parser.error(str(exc))
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with StubLLM(responder=policy) as llm:
        tmp = args.port_file.with_name(args.port_file.name + f".{os.getpid()}.tmp")
        tmp.write_bytes(orjson.dumps({"port": llm.port, "url": llm.url}))
        os.replace(tmp, args.port_file)
        print(f"suite policy listening on {llm.url}", flush=True)
        while not stop.wait(0.5):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
