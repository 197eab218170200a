"""`python -m symtrace_suite.policy --port-file F --seed N [--skill S]`: serve the policy.

Runs the stub chat-completions server with a `SuitePolicy` on 127.0.0.1 (ephemeral port) and
writes `{"url": "http://127.0.0.1:P/v1", "port": P}` to F atomically once it listens.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from symtrace.stub.server import StubLLM
from symtrace_suite.policy import SuitePolicy
from symtrace_suite.serve import wait_for_signal, write_ready_file


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
    with StubLLM(responder=policy) as llm:
        write_ready_file(args.port_file, {"port": llm.port, "url": llm.url})
        print(f"suite policy listening on {llm.url}", flush=True)
        wait_for_signal()
    return 0


if __name__ == "__main__":
    sys.exit(main())
