"""The differential replay check on many drawn programs under CPU stress and scheduling chaos.

    .venv/bin/python tests/stress/generated_stress.py [--programs 100] [--burners 1]
        [--framework autogen_agentchat] [--topology graph_fanout] [--keep DIR]
    make replay-stress-generated

Each program (drawn afresh by tests/generated's Hypothesis strategy) is recorded against the
unseeded stochastic stub, replayed strictly, replayed with one agent's prompt changed, and
replayed selectively at every agent request, each child bundle replayed strictly
(tests/generated/gen_check.py), while CPU-burning processes compete for the cores and
`SYMTRACE_CHAOS` pauses callers at every hand-off point. A recording or a child whose order
rested on timing diverges here. One line per program; a failing program's bundle is kept
(`--keep`). Exit status 1 if any program failed.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
GENERATED = ROOT / "tests" / "generated"
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(GENERATED))

from replay_stress import burn  # noqa: E402

# ag2v1 (AG2 1.x) runs in the second environment: .nox/next/bin/python tests/stress/...
RUNNERS = {"autogen_agentchat": "gen_agentchat", "ag2": "gen_ag2", "crewai": "gen_crewai",
           "ag2v1": "gen_ag2v1", "plain": "gen_plain"}


def replays_of(finding: Any) -> int:
    """Replays one program's check ran: its strict ones, the changed-prompt one, and per anchor
    the selective replay plus, when it went live, the strict replay of its child."""
    live = finding.anchors.get("live", 0)
    return (finding.strict_replays + (finding.perturbed_agent is not None)
            + sum(finding.anchors.values()) + live)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", type=int, default=100)
    parser.add_argument("--framework", default="autogen_agentchat", choices=sorted(RUNNERS))
    parser.add_argument("--topology", default="graph_fanout")
    parser.add_argument("--burners", type=int, default=1)
    parser.add_argument("--keep", type=Path, default=None, help="keep failing bundles here")
    parser.add_argument("--no-chaos", action="store_true", help="no SYMTRACE_CHAOS pauses")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="symtrace-gen-stress-"))
    os.environ.update({
        "HOME": str(home), "TMPDIR": str(home), "OPENAI_API_KEY": "sk-stress",
        "CREWAI_STORAGE_DIR": str(home / "crewai"), "CREWAI_DISABLE_TELEMETRY": "true",
        "OTEL_SDK_DISABLED": "true", "CREWAI_DISABLE_VERSION_CHECK": "true",
        "CREWAI_TRACING_ENABLED": "false", "AUTOGEN_USE_DOCKER": "False",
        "TIKTOKEN_CACHE_DIR": str(home / "tiktoken"),
    })
    if not args.no_chaos:
        os.environ["SYMTRACE_CHAOS"] = "1"
    tempfile.tempdir = str(home)

    import importlib

    from gen_check import Check
    from gen_spec import TOPOLOGIES, programs
    from hypothesis.errors import NonInteractiveExampleWarning

    from symtrace.stub import StubLLM

    if args.topology not in TOPOLOGIES[args.framework]:
        parser.error(f"{args.framework} has no topology {args.topology!r}: "
                     f"{sorted(TOPOLOGIES[args.framework])}")
    runner = importlib.import_module(RUNNERS[args.framework])
    strategy = programs(args.framework, (args.topology,))
    burners = [multiprocessing.Process(target=burn, args=(time.time() + 6 * 3600,), daemon=True)
               for _ in range(args.burners)]
    for process in burners:
        process.start()
    failed = anchors = replays = 0
    started = time.monotonic()
    try:
        with StubLLM(mode="stochastic") as stub:
            os.environ["OPENAI_BASE_URL"] = stub.url
            for index in range(args.programs):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", NonInteractiveExampleWarning)
                    program = strategy.example()
                work = Path(tempfile.mkdtemp(prefix="program-"))
                check = Check(runner.run, runner.ADAPTER, stub, work,
                              keep=args.keep / str(index) if args.keep else None,
                              strict_replays=1)
                clock = time.monotonic()
                try:
                    finding = check(program)
                except Exception as exc:  # a broken property, or the check itself crashed
                    failed += 1
                    print(f"{index} {program.label} FAILED {type(exc).__name__}: {str(exc)[:600]}\n"
                          f"  program: {program!r}", flush=True)
                    continue
                anchors += sum(finding.anchors.values())
                replays += replays_of(finding)
                print(f"{index} {program.label} ok {dict(finding.anchors)} "
                      f"{time.monotonic() - clock:.1f}s", flush=True)
    finally:
        for process in burners:
            process.terminate()
    print(f"total: {args.programs} programs ({args.framework} {args.topology}), {failed} failed, "
          f"{replays} replays ({anchors} selective), {time.monotonic() - started:.0f} s "
          f"({args.burners} CPU burners, chaos {'off' if args.no_chaos else 'on'})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
