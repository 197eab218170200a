"""symtrace's fixed cost per run: CPU of `symtrace record` and of a strict `symtrace replay`
beside the bare program, the heaviest imports, and replay ÷ live for each framework's example.

    .venv/bin/python benchmarks/startup.py [--rounds 7] [--framework-rounds 3] [--no-frameworks]
        [--baseline DIR]    # DIR: e.g. `git archive COMMIT symtrace | tar -x -C DIR`

Method. Every variant runs as a fresh process tree, interleaved round by round (bare, record,
replay, bare, ...) so load on the machine falls on all of them alike; the figure is the median
over rounds. CPU is user + system of every process of the tree (the CLI, the instrumented
program and any writer process it starts), read as the growth of this process's
RUSAGE_CHILDREN: each process is reaped by its parent, so its CPU reaches here. The fixed cost
is the variant's median minus the bare program's. The framework examples run against the
loopback stub endpoint (symtrace.stub) with the scripts their tests use; "live" is the example
run without symtrace, "replay" a strict replay of a recording of it (no endpoint request).
The target (issue 35) is a fixed cost of at most 0.15 s CPU for record and for replay.

Bytecode. Every process runs with a warm bytecode cache (PYTHONPYCACHEPREFIX in the work
directory, filled by the first run), as an installed symtrace has: an environment with
PYTHONDONTWRITEBYTECODE and an editable install compiles every imported module of the
checkout from source in every process, about as much CPU again. --no-bytecode-cache keeps the
environment as it is.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
SYMTRACE = [sys.executable, "-m", "symtrace"]
TARGET_S = 0.15
HELLO = 'print("hello")\n'

# framework -> (module that must be importable, example, the stub script its tests use)
REFERENCE_EXAMPLES: dict[str, tuple[str, Path, Callable[[], object]]] = {
    "ag2": ("autogen", EXAMPLES / "ag2" / "two_agent.py",
            lambda: json.loads((EXAMPLES / "ag2" / "stub_scripts.json").read_text())["two_agent"]),
    "crewai": ("crewai", EXAMPLES / "crewai" / "sequential.py",
               lambda: EXAMPLES / "crewai" / "scripts" / "sequential.json"),
    "autogen_agentchat": ("autogen_agentchat", EXAMPLES / "autogen_agentchat" / "round_robin.py",
                          lambda: EXAMPLES / "autogen_agentchat" / "scripts" / "round_robin.json"),
}


@dataclass(frozen=True)
class Cost:
    cpu: float  # seconds, every process of the tree
    wall: float


def run(command: Sequence[str], env: dict[str, str] | None = None, cwd: Path = REPO) -> Cost:
    """Run *command* to completion; its tree's CPU (RUSAGE_CHILDREN grows once each process is
    reaped) and wall time. A failure is an error: a benchmark of a failing run means nothing."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(list(command), env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Cost(cpu, wall)


def interleaved(variants: dict[str, Callable[[], Cost]], rounds: int) -> dict[str, list[Cost]]:
    results: dict[str, list[Cost]] = {name: [] for name in variants}
    for _ in range(rounds):
        for name, variant in variants.items():
            results[name].append(variant())
    return results


def median(costs: list[Cost], field: str) -> float:
    return statistics.median(getattr(c, field) for c in costs)


# -- the trivial program ------------------------------------------------------------------------
def trivial(rounds: int, work: Path, baseline: Path | None) -> None:
    program = work / "hello.py"
    program.write_text(HELLO)
    bare = [sys.executable, str(program)]
    # run from the work directory: `python -m symtrace` puts its directory first on the path
    variants: dict[str, Callable[[], Cost]] = {
        "bare program": functools.partial(run, bare, None, work)}
    trees = {"": None} if baseline is None else {"": None, f" [{baseline.name}]": baseline}
    for label, tree in trees.items():
        # a baseline tree (another checkout's directory holding symtrace/) goes first on the
        # path of the CLI, and from there on the child's (process/spawn.py PACKAGE_ROOT)
        env = None if tree is None else {**os.environ, "PYTHONPATH": str(tree)}
        bundle = work / f"hello-bundle{len(variants)}"
        record = [*SYMTRACE, "record", "-o", str(bundle), "--force", "--quiet", "--", *bare]
        run(record, env, work)  # the bundle the replays read, and warm file caches
        replay = [*SYMTRACE, "replay", str(bundle), "--quiet"]
        run(replay, env, work)
        variants[f"symtrace record{label}"] = functools.partial(run, record, env, work)
        variants[f"symtrace replay (strict){label}"] = functools.partial(run, replay, env, work)
    results = interleaved(variants, rounds)
    base = median(results["bare program"], "cpu")
    print(f"Trivial program (print('hello')): CPU of every process, median of {rounds} "
          "interleaved rounds")
    base_min = min(c.cpu for c in results["bare program"])
    print(f"  {'variant':<38}{'CPU s':>8}{'fixed cost s':>14}{'min-based':>11}{'wall s':>9}")
    for name, costs in results.items():
        cpu = median(costs, "cpu")
        fixed = "" if name == "bare program" else f"{cpu - base:+.3f}"
        fastest = "" if name == "bare program" else f"{min(c.cpu for c in costs) - base_min:+.3f}"
        mark = "" if not fixed else ("  ok" if cpu - base <= TARGET_S else "  ABOVE TARGET")
        print(f"  {name:<38}{cpu:>8.3f}{fixed:>14}{fastest:>11}{median(costs, 'wall'):>9.3f}"
              f"{mark}")
    print(f"  target: fixed cost <= {TARGET_S} s CPU (median; 'min-based': the fastest round's "
          "minus the bare program's fastest, nearer a quiet machine's figure)")


# -- imports ------------------------------------------------------------------------------------
_IMPORTTIME = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def _rows(stderr: str) -> list[list[tuple[int, int, str, int]]]:
    """-X importtime lines, one list per interpreter (each starts with the header line)."""
    processes: list[list[tuple[int, int, str, int]]] = []
    for line in stderr.splitlines():
        if line.startswith("import time: self"):
            processes.append([])
            continue
        match = _IMPORTTIME.match(line)
        if match and processes:
            processes[-1].append((int(match[2]), len(match[3]) // 2, match[4], int(match[1])))
    return processes


def _print_heaviest(rows: list[tuple[int, int, str, int]], top: int) -> None:
    shown = sorted((r for r in rows if r[1] <= 2), reverse=True)[:top]
    for cumulative, depth, name, own in shown:
        print(f"  {cumulative / 1000:>7.1f} ms  (own {own / 1000:5.1f})  {'  ' * depth}{name}")


def run_imports(label: str, command: Sequence[str], work: Path, top: int) -> None:
    """The imports of every process a symtrace run starts (PYTHONPROFILEIMPORTTIME), one
    block per interpreter in start order: the CLI, the instrumented program, any writer."""
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    done = subprocess.run(list(command), capture_output=True, text=True, cwd=work, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    names = ("CLI (parent)", "instrumented program (child)", "third process")
    for index, rows in enumerate(_rows(done.stderr)):
        total = sum(cumulative for cumulative, depth, _, _ in rows if depth == 0)
        who = names[min(index, len(names) - 1)]
        print(f"{label}, {who}: {len(rows)} modules, {total / 1000:.1f} ms of imports")
        _print_heaviest(rows, top)


def heaviest_imports(statement: str, top: int) -> None:
    """`python -X importtime -c STATEMENT`: the total, and the heaviest modules by cumulative
    time among those imported directly by symtrace's modules or by the statement itself."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", statement],
                          capture_output=True, text=True, cwd=REPO, check=True)
    rows = [row for process in _rows(done.stderr) for row in process]
    total = sum(cumulative for cumulative, depth, _, _ in rows if depth == 0)
    print(f"python -X importtime -c {statement!r}: {total / 1000:.1f} ms in all")
    _print_heaviest(rows, top)


# -- framework examples -------------------------------------------------------------------------
def frameworks(rounds: int, work: Path) -> None:
    from symtrace.stub import StubLLM

    print(f"Reference examples against the stub endpoint: median of {rounds} interleaved rounds")
    print(f"  {'framework':<19}{'live CPU':>9}{'replay CPU':>11}{'ratio':>7}"
          f"{'live wall':>10}{'replay wall':>12}{'ratio':>7}")
    for framework, (module, example, script) in REFERENCE_EXAMPLES.items():
        if importlib.util.find_spec(module) is None:
            print(f"  {framework:<19}not installed here ({module})")
            continue
        with StubLLM(script=script()) as stub:
            env = {**os.environ, "OPENAI_BASE_URL": stub.url, "OPENAI_API_KEY": "sk-bench",
                   "CREWAI_DISABLE_TELEMETRY": "true", "OTEL_SDK_DISABLED": "true",
                   "CREWAI_DISABLE_VERSION_CHECK": "true"}
            live_command = [sys.executable, str(example)]
            bundle = work / f"{framework}-bundle"
            run([*SYMTRACE, "record", "-o", str(bundle), "--force", "--quiet", "--",
                 *live_command], env)
            replay_command = [*SYMTRACE, "replay", str(bundle), "--quiet"]
            results = interleaved({
                "live": functools.partial(run, live_command, env),
                "replay": functools.partial(run, replay_command, env),
            }, rounds)
        live, replay = results["live"], results["replay"]
        cells = []
        for field in ("cpu", "wall"):
            a, b = median(live, field), median(replay, field)
            cells.append(f"{a:>9.2f}{b:>11.2f}{b / a:>7.2f}" if field == "cpu"
                         else f"{a:>10.2f}{b:>12.2f}{b / a:>7.2f}")
        print(f"  {framework:<19}{cells[0]}{cells[1]}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--framework-rounds", type=int, default=3)
    parser.add_argument("--no-frameworks", action="store_true")
    parser.add_argument("--top", type=int, default=12, help="imports to list")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="keep this environment's bytecode settings (see Bytecode above)")
    parser.add_argument("--baseline", type=Path, metavar="DIR",
                        help="also time record/replay of the symtrace in DIR (a checkout of "
                        "another commit), interleaved with this one")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="symtrace-startup-") as tmp:
        work = Path(tmp)
        if not args.no_bytecode_cache:  # inherited by every process this one starts
            os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
            os.environ["PYTHONPYCACHEPREFIX"] = str(work / "bytecode")
        print("bytecode: " + ("as this environment has it" if args.no_bytecode_cache
                              else "a warm cache (PYTHONPYCACHEPREFIX)"))
        trivial(args.rounds, work, args.baseline)
        print()
        heaviest_imports("import symtrace", args.top)
        program = work / "hello.py"
        bundle = work / "imports-bundle"
        print()
        run_imports("symtrace record", [*SYMTRACE, "record", "-o", str(bundle), "--force",
                                        "--quiet", "--", sys.executable, str(program)],
                    work, args.top)
        print()
        run_imports("symtrace replay", [*SYMTRACE, "replay", str(bundle), "--quiet"], work,
                    args.top)
        if not args.no_frameworks:
            print()
            frameworks(args.framework_rounds, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
