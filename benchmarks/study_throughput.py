"""Study throughput: attempts per minute, sequential vs `--workers N`, side by side in one run.

    .venv/bin/python benchmarks/study_throughput.py [--mas plain] [--tasks shop-001 shop-002 ...]
        [--workers 2] [--rounds 1]

Runs the same small study (stub backend, every arm, RQ1 with k=2) into two fresh temporary
directories, once with one worker and once with N, and prints attempts (result rows plus
source runs) per minute of wall time for each and their ratio. Rounds alternate the order so
machine noise hits both alike. Both runs must give the same rows (checked); a ratio near N
needs N idle cores — on a shared machine it shows how much parallelism is really available.
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

VOLATILE = ("timing", "bundle_digest", "traceback", "bundle")


def run_once(raw: dict, out: Path, workers: int) -> tuple[float, int, list[bytes]]:
    config = parse_config({**raw, "out": str(out)})
    started = time.perf_counter()
    Study(config, Console(file=io.StringIO())).run(workers=workers)
    seconds = time.perf_counter() - started
    lines = (out / "results.jsonl").read_bytes().splitlines()
    lines += (out / "collect.jsonl").read_bytes().splitlines()
    rows = sorted(orjson.dumps({k: v for k, v in orjson.loads(x).items() if k not in VOLATILE},
                               option=orjson.OPT_SORT_KEYS) for x in lines)
    return seconds, len(lines), rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mas", default="plain")
    parser.add_argument("--tasks", nargs="+", default=["shop-001", "shop-002", "route-001",
                                                       "multi-001"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args(argv)
    raw = {"mas": [args.mas], "tasks": args.tasks, "seeds": [0], "attempts": 2,
           "rq1": {"k": 2}, "backend": {"kind": "stub", "skill": 0.4}, "max_error_rate": 1.0}
    rates: dict[int, list[float]] = {1: [], args.workers: []}
    with tempfile.TemporaryDirectory(prefix="study-bench-") as tmp:
        for r in range(args.rounds):
            order = [1, args.workers] if r % 2 == 0 else [args.workers, 1]
            rows = {}
            for workers in order:
                seconds, attempts, rows[workers] = run_once(
                    raw, Path(tmp) / f"r{r}-w{workers}", workers)
                rates[workers].append(60 * attempts / seconds)
                print(f"round {r + 1}: workers={workers}: {attempts} attempts in "
                      f"{seconds:.1f} s = {60 * attempts / seconds:.1f} attempts/min")
            if rows[1] != rows[args.workers]:
                print("ERROR: the parallel run's rows differ from the sequential run's")
                return 1
    seq, par = statistics.median(rates[1]), statistics.median(rates[args.workers])
    print(f"\n{'':>12} {'attempts/min':>14}\n{'sequential':>12} {seq:>14.1f}\n"
          f"{f'workers={args.workers}':>12} {par:>14.1f}\nratio (workers / sequential): "
          f"{par / seq:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
