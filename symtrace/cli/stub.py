"""``symtrace stub-llm``: run the stub LLM endpoint in the foreground.

Shell scripts and other processes need an LLM endpoint too. The first stdout line is always
``stub-llm listening on <url>`` (flushed) so a caller can parse the ephemeral port; everything
that can be wrong (script, host, probabilities) is reported with exit code 2 before binding.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from symtrace.cli.commands import summary
from symtrace.cli.foreground import add_address_arguments, stop_on_signals
from symtrace.errors import EXIT_USAGE


def add_parser(subparsers: Any) -> None:
    """Register ``stub-llm`` on an ``argparse`` subparsers object."""
    parser = subparsers.add_parser(
        "stub-llm",
        help=summary("stub-llm"),
        description=description(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_arguments(parser)
    parser.set_defaults(func=run)


DESCRIPTION = """\
Serve a stub LLM endpoint on loopback until SIGINT/SIGTERM. The first stdout
line is 'stub-llm listening on http://HOST:PORT/v1' (the base URL for OpenAI
SDKs; Anthropic SDKs take http://HOST:PORT). Answers come from the rules of
--script FILE.json (docs/stub.md) or, without one, are stochastic (--seed)."""


def description() -> str:
    """The help text, its route list read from the table the stub dispatches through."""
    from symtrace.stub.handler import ROUTES

    lines = [DESCRIPTION, "", "routes:"]
    for route in ROUTES:
        lines.append(f"  {route.method:4} {route.paths[0]:21} {route.what}")
        if len(route.paths) > 1:
            lines.append(f"  {'':4} {'':21} (also {', '.join(route.paths[1:])})")
    return "\n".join(lines)


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    add_address_arguments(parser)
    parser.add_argument(
        "--mode",
        choices=("stochastic", "scripted"),
        default=None,
        help="default: scripted with --script, else stochastic",
    )
    parser.add_argument("--script", metavar="FILE.json",
                        help="rules for scripted mode (format: docs/stub.md)")
    parser.add_argument("--seed", type=int, default=None, help="reproducible stochastic answers")
    parser.add_argument(
        "--tool-probability",
        type=float,
        default=None,
        metavar="P",
        help="stochastic: chance of a tool call when tools are offered (0.6)",
    )
    parser.add_argument(
        "--terminate-probability",
        type=float,
        default=None,
        metavar="P",
        help="stochastic: chance a text answer ends with TERMINATE (0.3)",
    )
    parser.add_argument(
        "--print-url", action="store_true", help="also print the bare base URL as the second line"
    )


def _fail(message: str) -> int:
    sys.stderr.write(f"symtrace stub-llm: error: {message}\n")
    sys.stderr.flush()
    return EXIT_USAGE


def run(args: argparse.Namespace) -> int:
    """Serve until SIGINT/SIGTERM; 0 on a clean stop, 2 on a usage error."""
    from symtrace.stub.scripted import ScriptError, load_script
    from symtrace.stub.server import StubLLM, check_loopback

    try:
        check_loopback(args.host)
    except ValueError as exc:
        return _fail(str(exc))
    mode = args.mode or ("scripted" if args.script else "stochastic")
    script = None
    if args.script:
        if mode != "scripted":
            return _fail("--script is only used with --mode scripted")
        try:
            script = load_script(args.script)
        except ScriptError as exc:
            return _fail(str(exc))
    if not 0 <= args.port <= 65535:
        return _fail(f"--port must be in 0..65535, got {args.port}")
    try:
        stub = StubLLM(
            mode=mode,
            script=script,
            seed=args.seed,
            host=args.host,
            port=args.port,
            tool_probability=args.tool_probability,
            terminate_probability=args.terminate_probability,
        )
    except (ValueError, TypeError) as exc:
        return _fail(str(exc))

    with stop_on_signals() as stop:
        try:
            try:
                stub.start()
            except OSError as exc:
                return _fail(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}")
            sys.stdout.write(f"stub-llm listening on {stub.url}\n")
            if args.print_url:
                sys.stdout.write(f"{stub.url}\n")
            sys.stdout.flush()
            while not stop.wait(0.5):
                pass
        finally:
            stub.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Standalone entry (``python -m symtrace.cli.stub``), same options as the subcommand."""
    parser = argparse.ArgumentParser(
        prog="symtrace stub-llm", description=description(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
