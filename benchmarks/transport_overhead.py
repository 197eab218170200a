"""Recording overhead per LLM call on each HTTP seam, side by side: httpx2 beside httpx.

    .venv/bin/python benchmarks/transport_overhead.py [--calls 100] [--rounds 5]

The same chat-completion request, sent with a plain client of each library to the embedded
endpoint (loopback, keep-alive), (a) with no session and (b) while `symtrace.record` records
it, and (c) replayed strictly from the bundle. Rounds are interleaved so machine noise hits
every variant alike. Reported: the median time per call of each variant, the added recording
cost per call, and ratios (recorded / unrecorded per library; httpx2 / httpx per variant).
httpx2 is what openai 3 and anthropic 2 send through; httpx is openai 2's.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import requests

import symtrace
from symtrace.stub import StubLLM

try:
    import httpx2
except ImportError:  # pragma: no cover - httpx2 is a core dependency
    sys.exit("httpx2 is not installed: pip install 'httpx2>=2,<3'")

SCRIPT = {"rules": [], "default": {"content": "A steady, fixed answer of moderate length " * 4}}


def body(i: int) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": f"question {i}"}]}


def httpx_family(lib: Any) -> Callable[[str, int], float]:
    def run(url: str, calls: int) -> float:
        with lib.Client() as client:
            client.post(url, json=body(-1))  # the connection is open before timing
            start = time.perf_counter()
            for i in range(calls):
                client.post(url, json=body(i)).json()
            return (time.perf_counter() - start) / calls

    return run


def with_requests(url: str, calls: int) -> float:
    with requests.Session() as client:
        client.post(url, json=body(-1))
        start = time.perf_counter()
        for i in range(calls):
            client.post(url, json=body(i)).json()
        return (time.perf_counter() - start) / calls


def with_aiohttp(url: str, calls: int) -> float:
    async def run() -> float:
        async with aiohttp.ClientSession() as client:
            async with client.post(url, json=body(-1)) as response:
                await response.read()
            start = time.perf_counter()
            for i in range(calls):
                async with client.post(url, json=body(i)) as response:
                    await response.json()
            return (time.perf_counter() - start) / calls

    return asyncio.run(run())


LIBRARIES: dict[str, Callable[[str, int], float]] = {
    "httpx": httpx_family(httpx),
    "httpx2": httpx_family(httpx2),
    "requests": with_requests,
    "aiohttp": with_aiohttp,
}
VARIANTS = ("unrecorded", "recorded", "replayed")


def measure(calls: int, rounds: int, workdir: Path) -> dict[tuple[str, str], float]:
    samples: dict[tuple[str, str], list[float]] = {
        (lib, variant): [] for lib in LIBRARIES for variant in VARIANTS}
    with StubLLM(mode="scripted", script=SCRIPT) as stub:
        url = f"{stub.url}/chat/completions"
        for r in range(rounds):
            for lib, run in LIBRARIES.items():
                samples[(lib, "unrecorded")].append(run(url, calls))
                bundle = workdir / f"{lib}-{r}"
                with symtrace.record(bundle, overwrite=True):
                    samples[(lib, "recorded")].append(run(url, calls))
                with symtrace.replay(bundle):
                    samples[(lib, "replayed")].append(run(url, calls))
    return {key: statistics.median(values) for key, values in samples.items()}


def report(medians: dict[tuple[str, str], float], calls: int, rounds: int) -> None:
    print(f"per-call medians over {rounds} rounds of {calls} calls (ms)\n")
    print(f"{'library':<10}{'unrecorded':>12}{'recorded':>11}{'replayed':>11}"
          f"{'added/call':>12}{'rec/unrec':>11}")
    for lib in LIBRARIES:
        plain, rec, rep = (medians[(lib, v)] * 1000 for v in VARIANTS)
        print(f"{lib:<10}{plain:>12.3f}{rec:>11.3f}{rep:>11.3f}{rec - plain:>12.3f}"
              f"{rec / plain:>10.2f}x")
    print("\nhttpx2 beside httpx (ratio httpx2 / httpx)")
    for variant in VARIANTS:
        h1, h2 = medians[("httpx", variant)], medians[("httpx2", variant)]
        print(f"  {variant:<11} {h1 * 1000:8.3f} ms  {h2 * 1000:8.3f} ms  {h2 / h1:6.2f}x")
    added1 = medians[("httpx", "recorded")] - medians[("httpx", "unrecorded")]
    added2 = medians[("httpx2", "recorded")] - medians[("httpx2", "unrecorded")]
    print(f"  added by recording: httpx {added1 * 1000:.3f} ms, httpx2 {added2 * 1000:.3f} ms"
          f" per call")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="symtrace-transport-bench-") as tmp:
        report(measure(args.calls, args.rounds, Path(tmp)), args.calls, args.rounds)


if __name__ == "__main__":
    main()
