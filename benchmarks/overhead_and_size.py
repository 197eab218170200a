"""Recording overhead and bundle growth, measured side by side in one run.

    .venv/bin/python benchmarks/overhead_and_size.py [--calls 200] [--turns 5 10 20 40]

1. Overhead per boundary call: the same chat-completion calls through the openai SDK to the
   embedded endpoint, (a) unrecorded, (b) recorded by symtrace, (c) recorded by vcrpy (if
   installed), (d) replayed strictly by symtrace. Rounds are interleaved so machine noise
   hits every variant alike; the median per-call time of each is reported with its ratio to
   the unrecorded baseline.
2. Bundle size against conversation length: a conversation of k turns (each request re-sends
   the history) recorded with content-addressed blobs, compared with the size of the same
   events stored verbatim (every request and response inlined).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import openai
import orjson

import symtrace
from symtrace.bundle import load_bundle
from symtrace.stub import StubLLM

SCRIPT = {"rules": [], "default": {"content": "A steady, fixed answer of moderate length " * 4}}


def timed_calls(client: openai.OpenAI, calls: int) -> float:
    start = time.perf_counter()
    for i in range(calls):
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": f"question {i}"}]
        )
    return (time.perf_counter() - start) / calls


def overhead(calls: int, rounds: int, workdir: Path) -> dict[str, float]:
    samples: dict[str, list[float]] = {"unrecorded": [], "symtrace record": [],
                                       "symtrace replay": []}
    try:
        import vcr  # type: ignore[import-untyped]
    except ImportError:
        vcr = None
    if vcr is not None:
        samples["vcrpy record"] = []
    with StubLLM(mode="scripted", script=SCRIPT) as stub:
        client = openai.OpenAI(base_url=stub.url, api_key="sk-bench", max_retries=0)
        timed_calls(client, 10)  # warm up connections and imports
        for r in range(rounds):
            samples["unrecorded"].append(timed_calls(client, calls))
            bundle = workdir / f"sym-{r}"
            with symtrace.record(bundle, overwrite=True):
                samples["symtrace record"].append(timed_calls(client, calls))
            with symtrace.replay(bundle):
                samples["symtrace replay"].append(timed_calls(client, calls))
            if vcr is not None:
                cassette = workdir / f"vcr-{r}.yaml"
                with vcr.use_cassette(str(cassette), record_mode="all"):
                    samples["vcrpy record"].append(timed_calls(client, calls))
    return {name: statistics.median(values) for name, values in samples.items()}


def conversation(turns: int, path: Path) -> tuple[int, int]:
    """Record a *turns*-long conversation; return (bundle bytes, verbatim bytes)."""
    with StubLLM(mode="scripted", script=SCRIPT) as stub:
        client = openai.OpenAI(base_url=stub.url, api_key="sk-bench", max_retries=0)
        with symtrace.record(path, overwrite=True):
            messages = [{"role": "system", "content": "You are a careful assistant. " * 10}]
            for turn in range(turns):
                messages.append({"role": "user", "content": f"Turn {turn}: " + "detail " * 40})
                reply = client.chat.completions.create(model="m", messages=messages)
                messages.append({"role": "assistant",
                                 "content": reply.choices[0].message.content})
    stored = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    verbatim = sum(
        len(orjson.dumps(e.to_json(), option=orjson.OPT_SORT_KEYS)) + 1
        for e in load_bundle(path).events
    ) + (path / "manifest.json").stat().st_size
    return stored, verbatim


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--turns", type=int, nargs="+", default=[5, 10, 20, 40, 80])
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="symtrace-bench-"))
    try:
        times = overhead(args.calls, args.rounds, workdir)
        base = times["unrecorded"]
        print(f"\nPer-call time, median of {args.rounds} interleaved rounds of "
              f"{args.calls} calls each")
        print(f"{'variant':<18}{'ms/call':>10}{'x unrecorded':>14}{'overhead ms':>13}")
        for name, value in times.items():
            print(f"{name:<18}{value * 1000:>10.3f}{value / base:>14.2f}"
                  f"{(value - base) * 1000:>13.3f}")
        if "vcrpy record" in times:
            print(f"symtrace record / vcrpy record = "
                  f"{times['symtrace record'] / times['vcrpy record']:.2f}")

        print("\nBundle size against conversation length (bytes)")
        print(f"{'turns':>6}{'with blobs':>14}{'verbatim':>14}{'verbatim/blobs':>16}")
        first: tuple[int, int, int] | None = None
        for turns in args.turns:
            stored, verbatim = conversation(turns, workdir / f"conv-{turns}")
            first = first or (turns, stored, verbatim)
            print(f"{turns:>6}{stored:>14,}{verbatim:>14,}{verbatim / stored:>16.2f}")
        last_turns = args.turns[-1]
        stored, verbatim = conversation(last_turns, workdir / "conv-last")
        growth_blobs = stored / first[1]
        growth_verbatim = verbatim / first[2]
        print(f"growth from {first[0]} to {last_turns} turns ({last_turns / first[0]:.0f}x "
              f"longer): with blobs {growth_blobs:.1f}x, verbatim {growth_verbatim:.1f}x")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
