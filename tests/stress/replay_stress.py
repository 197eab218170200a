"""Replay every concurrent reference bundle many times under CPU stress and scheduling chaos.

    .venv/bin/python tests/stress/replay_stress.py [--replays 100] [--burners N] [BUNDLE ...]
    .venv/bin/python tests/stress/replay_stress.py --turns [--replays 200]
    make replay-stress

Each bundle's program (the example its manifest names) runs in-process under
`symtrace.replay`, N times, while N CPU-burning processes compete for the cores and
`SYMTRACE_CHAOS` injects random pauses at every hand-off point (session/scheduling.py). A replay
whose order rested on timing diverges under these conditions; the target is 0 divergences.
The table prints, per bundle: replays, divergences (SYM-R1xx), runs whose printed output
differs from the recording's stdout.txt (compared as `symtrace replay`'s outcome check does:
the multiset of normalised lines), and seconds. Exit status 1 if anything diverged.
Nothing reaches a network: OPENAI_BASE_URL points at a closed loopback port.

`--turns` stresses the "one agent, concurrent turns" programs of tests/stress/turn_programs
instead (each recorded first, against the seeded stub, into a temporary bundle; programs whose
framework is not installed in this interpreter are named and left out: AG2 1.x runs under
`.nox/next/bin/python`): their concurrent turns start in whatever order the scheduler picks.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import multiprocessing
import os
import runpy
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# bundles whose programs run agents, tools or chats at the same time
CONCURRENT = (
    "ag2-two_agent_async", "ag2-chats_async", "ag2-groupchat_async",
    "autogen_agentchat-assistant_tools", "autogen_agentchat-graph_fanout",
    "autogen_agentchat-selector", "autogen_agentchat-twin_teams",
    "crewai-async_tasks", "crewai-hierarchical", "crewai-parallel_tools", "crewai-trip_flow",
    "core-trip-planner",
)


def burn(stop_at: float) -> None:
    x = 0
    while time.time() < stop_at:
        x = (x * 31 + 7) % 1_000_003


def program_of(bundle: Path) -> Path:
    import orjson

    manifest = orjson.loads((bundle / "manifest.json").read_bytes())
    return ROOT / manifest["config"]["command"]["argv"][-1]


def bundle_item(name: str) -> tuple[str, Path, Path, str | None]:
    bundle = ROOT / "bundles" / name
    expected = bundle / "stdout.txt"
    return name, bundle, program_of(bundle), expected.read_text() if expected.exists() else None


def run_once(script: Path) -> str:
    """Run *script* as __main__ in this process; everything it printed."""
    if str(script.parent) not in sys.path:
        sys.path.insert(0, str(script.parent))
    buffer = io.StringIO()
    handlers: list[logging.StreamHandler] = []  # type: ignore[type-arg]
    if "autogen" in sys.modules:  # AG2 prints through a logger bound to the stdout of its day
        from autogen.logger.logger_utils import get_event_logger

        handlers = [h for h in get_event_logger().handlers
                    if isinstance(h, logging.StreamHandler)]
    previous = [h.setStream(buffer) for h in handlers]
    argv = sys.argv
    try:
        sys.argv = [str(script)]
        with contextlib.redirect_stdout(buffer), contextlib.suppress(SystemExit):
            runpy.run_path(str(script), run_name="__main__")
    finally:
        sys.argv = argv
        for handler, stream in zip(handlers, previous, strict=True):
            handler.setStream(stream)
    return buffer.getvalue()


def same_output(got: str, expected: str) -> bool:
    """As `symtrace replay` verifies an outcome: the multiset of normalised lines. Frameworks
    print from worker threads (AG2's concurrently gathered tools, CrewAI's console panels from
    its event bus: where a panel's blank line falls), so line order is timing, not outcome."""
    from symtrace.replay.outcome_check import normalised_lines

    return Counter(normalised_lines(got.encode())) == Counter(normalised_lines(expected.encode()))


TURN_PROGRAMS = ROOT / "tests" / "stress" / "turn_programs"
FRAMEWORK_OF = {"ag2_desk": "autogen", "ag2v1_desk": "ag2"}  # else: openai only


def recorded_turn_programs(into: Path) -> list[tuple[str, Path, Path, str]]:
    """(name, bundle, program, its recorded output) for each turn program this interpreter
    can run, recorded against the seeded stochastic stub."""
    import importlib.util

    import symtrace
    from symtrace.stub import StubLLM

    found = []
    for script in sorted(TURN_PROGRAMS.glob("*.py")):
        module = FRAMEWORK_OF.get(script.stem)
        if module is not None and importlib.util.find_spec(module) is None:
            print(f"{script.stem}: skipped, {module!r} is not installed here", flush=True)
            continue
        base = os.environ["OPENAI_BASE_URL"]
        with StubLLM(mode="stochastic", seed=7, tool_probability=0.0) as stub:
            os.environ["OPENAI_BASE_URL"] = stub.url
            try:
                with symtrace.record(into / script.stem):
                    out = run_once(script)
            finally:
                os.environ["OPENAI_BASE_URL"] = base
        found.append((script.stem, into / script.stem, script, out))
    return found


def stress(items: list[tuple[str, Path, Path, str | None]], replays: int,
           infer_from_state: bool = True) -> Counter[str]:
    import symtrace

    totals: Counter[str] = Counter()
    print(f"{'bundle':38} {'replays':>7} {'diverged':>8} {'output≠':>7} {'seconds':>8}")
    for name, bundle, script, expected in items:
        counts: Counter[str] = Counter()
        first: str | None = None
        started = time.monotonic()
        for done in range(replays):
            if done and done % 25 == 0:  # a long run shows where it is
                print(f"  {name}: {done} replays, {counts['diverged']} diverged, "
                      f"{counts['output']} output≠", flush=True)
            try:
                with symtrace.replay(bundle, infer_from_state=infer_from_state):
                    out = run_once(script)
            except symtrace.ReplayDivergence as exc:
                counts["diverged"] += 1
                first = first or f"{exc.report.code} {exc.report.kind} at {exc.report.event_id}"
                continue
            if expected is not None and not same_output(out, expected):
                counts["output"] += 1
        seconds = time.monotonic() - started
        print(f"{name:38} {replays:>7} {counts['diverged']:>8} {counts['output']:>7} "
              f"{seconds:>8.1f}" + (f"  first: {first}" if first else ""), flush=True)
        totals.update(counts)
        totals["replays"] += replays
    return totals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bundles", nargs="*", default=list(CONCURRENT))
    parser.add_argument("--replays", type=int, default=100)
    parser.add_argument("--burners", type=int, default=os.cpu_count() or 2,
                        help="CPU-burning processes running meanwhile (default: one per core)")
    parser.add_argument("--no-chaos", action="store_true", help="no SYMTRACE_CHAOS pauses")
    parser.add_argument("--turns", action="store_true",
                        help="the one-agent-concurrent-turns programs (tests/stress/turn_programs)")
    parser.add_argument("--no-state-inference", action="store_true",
                        help="replay with SchedulingOptions.infer_from_state off: releases "
                        "only from facts and declared consumption points")
    args = parser.parse_args()
    if os.environ.get("PYTHONHASHSEED") != "0":  # the bundles were recorded with hash seed 0
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable, *sys.argv])
    home = Path(tempfile.mkdtemp(prefix="symtrace-stress-"))
    os.environ.update({
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-stress",
        "HOME": str(home), "TMPDIR": str(home), "CREWAI_STORAGE_DIR": str(home / "crewai"),
        "CREWAI_DISABLE_TELEMETRY": "true", "OTEL_SDK_DISABLED": "true",
        "CREWAI_DISABLE_VERSION_CHECK": "true", "CREWAI_TRACING_ENABLED": "false",
        "AUTOGEN_USE_DOCKER": "False", "TIKTOKEN_CACHE_DIR": str(home / "tiktoken"),
    })
    if not args.no_chaos:
        os.environ["SYMTRACE_CHAOS"] = "1"
    os.chdir(home)  # AG2's legacy disk cache writes ./.cache
    stop_at = time.time() + 6 * 3600
    burners = [multiprocessing.Process(target=burn, args=(stop_at,), daemon=True)
               for _ in range(args.burners)]
    for process in burners:
        process.start()
    try:
        items = (recorded_turn_programs(home / "bundles") if args.turns
                 else [bundle_item(name) for name in args.bundles])
        totals = stress(items, args.replays, infer_from_state=not args.no_state_inference)
    finally:
        for process in burners:
            process.terminate()
    print(f"total: {totals['replays']} replays, {totals['diverged']} diverged, "
          f"{totals['output']} with different output "
          f"({args.burners} CPU burners, chaos {'off' if args.no_chaos else 'on'}, state "
          f"inference {'off' if args.no_state_inference else 'on'})")
    return 1 if totals["diverged"] or totals["output"] else 0


if __name__ == "__main__":
    sys.exit(main())
