"""Study throughput: attempts per minute of the warm backend vs the cold one, side by side.

    .venv/bin/python benchmarks/study_throughput.py [--mas ag2] [--tasks shop-002 ...]
        [--workers 1] [--rounds 1] [--baseline local]

Runs the same small study (stub backend, every arm, RQ1 with k=1) into fresh temporary
directories, once with the baseline backend (`local`: a fresh interpreter per attempt, what
the study did before the warm backend) and once with `warm` (each attempt forked from a
per-worker server that imported the framework once), with the same number of workers, and
prints attempts (result rows plus source runs) per minute of wall time for each and their
ratio. Rounds alternate the order so machine noise hits both alike. Both runs must give the
same rows (checked; exit 1 otherwise). The issue's target: warm >= 3x on the stub.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson
from rich.console import Console
from symtrace_study.config import parse_config
from symtrace_study.study import Study

VOLATILE = ("timing", "bundle_digest", "traceback")


def run_once(raw: dict, out: Path, workers: int, backend: str) -> tuple[float, int, list[bytes]]:
    config = parse_config({**raw, "out": str(out)})
    started = time.perf_counter()
    Study(config, Console(file=io.StringIO())).run(workers=workers, backend=backend)
    seconds = time.perf_counter() - started
    lines = (out / "results.jsonl").read_bytes().splitlines()
    lines += (out / "collect.jsonl").read_bytes().splitlines()
    rows = sorted(orjson.dumps({k: v for k, v in orjson.loads(x).items() if k not in VOLATILE},
                               option=orjson.OPT_SORT_KEYS) for x in lines)
    return seconds, len(lines), rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mas", default="ag2")
    parser.add_argument("--tasks", nargs="+", default=["shop-002", "wiki-001", "shop-010"])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--baseline", default="local", choices=("local", "ray"))
    args = parser.parse_args(argv)
    raw = {"mas": [args.mas], "tasks": args.tasks, "seeds": [0], "attempts": 2,
           "rq1": {"k": 1}, "backend": {"kind": "stub", "skill": 0.4}, "max_error_rate": 1.0}
    backends = (args.baseline, "warm")
    rates: dict[str, list[float]] = {b: [] for b in backends}
    with tempfile.TemporaryDirectory(prefix="study-bench-") as tmp:
        for r in range(args.rounds):
            order = backends if r % 2 == 0 else backends[::-1]
            rows = {}
            for backend in order:
                seconds, attempts, rows[backend] = run_once(
                    raw, Path(tmp) / f"r{r}-{backend}", args.workers, backend)
                rates[backend].append(60 * attempts / seconds)
                print(f"round {r + 1}: {backend:>5} x{args.workers}: {attempts} attempts in "
                      f"{seconds:.1f} s = {60 * attempts / seconds:.1f} attempts/min", flush=True)
            if rows[backends[0]] != rows["warm"]:
                print("ERROR: the warm run's rows differ from the baseline run's")
                return 1
            print(f"round {r + 1}: rows identical ({len(rows['warm'])} rows)")
    base, warm = statistics.median(rates[args.baseline]), statistics.median(rates["warm"])
    print(f"\nMAS {args.mas}, {len(args.tasks)} tasks, {args.workers} worker(s)\n"
          f"{'backend':>10} {'attempts/min':>14}\n{args.baseline:>10} {base:>14.1f}\n"
          f"{'warm':>10} {warm:>14.1f}\nratio (warm / {args.baseline}): {warm / base:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
