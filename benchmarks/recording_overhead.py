"""Is symtrace cheap enough to leave on? Recording, replay, size and load, side by side.

    .venv/bin/python benchmarks/recording_overhead.py [--rounds 5] [--calls 40]
        [--events 500 5000 50000] [--replay-cap N] [--only record|replay]

One run prints four tables (CPU time of this process, ``time.process_time``: the machine is
shared and wall time is noise; the stub endpoint runs in a separate process so its CPU is not
counted, while any background thread symtrace might use is):

1. **Recording overhead per call**, openai SDK against a local stub endpoint (its own process):
   unrecorded, recorded by vcrpy, recorded by symtrace. Shapes: a short one-message request, and a
   ~8 KB 20-message conversation (a running chat: each call appends the last reply and a new user
   turn and keeps the system prompt plus the latest 19 messages, as a context window does).
   Modes: sync, async (one long-lived event loop), and sync streaming. A cell's cost is the CPU
   of its calls plus the session's exit (vcrpy writes its cassette there, symtrace finalises),
   divided by the calls; the session's entry is reported apart as a fixed cost. Rounds are
   interleaved, the variant order rotates, and the overhead is the median over rounds of the
   paired difference against the unrecorded cell of the same round.
2. **Strict replay CPU per event** on bundles of about 500 / 5,000 / 50,000 events, generated
   through the public API (`symtrace.record`, `symtrace.tool`, `symtrace.agent`): strict agent
   lanes plus pooled asyncio tasks whose results complete out of issue order (so replay holds
   them for the completion order). Tool boundaries only, so the figure is symtrace's own cost,
   not the SDK's. ``--replay-cap N`` replays only the first N calls of each bundle (for an
   O(n)-per-event implementation that would take hours at 50,000); the table says so.
3. **Bundle bytes and file count vs events, and load time** (`symtrace.load_bundle`, CPU).
4. **Bundle bytes and files vs conversation length** (LLM calls re-sending their history), with
   the verbatim size of the same events for comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai
import orjson

import symtrace

WINDOW = 19  # messages after the system prompt: 20 per conversation request
TURN = "Please look at the quarterly figures again and tell me what changed since then. " * 8
# Users record with a key in the environment, so do we; a credential name symtrace redacts
# (names starting SYMTRACE_ are its own settings, not secrets: that key would not be searched).
SECRET_ENV = "BENCH_API_KEY"


# -- a fast local endpoint in its own process ---------------------------------------------------
@contextlib.contextmanager
def stub_endpoint() -> Iterator[str]:
    """The stub chat endpoint, stochastic but seeded: replies vary like a model's do."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "symtrace", "stub-llm", "--port", "0", "--seed", "7",
         "--terminate-probability", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline().strip() if proc.stdout else ""
        if "listening on " not in line:
            raise RuntimeError(f"stub-llm did not start: {line!r}")
        yield line.split("listening on ", 1)[1]
    finally:
        proc.terminate()
        proc.wait(10)


# -- workloads: (client, calls) -> None ---------------------------------------------------------
class Conversation:
    """A running chat of ~8 KB: system prompt + the latest WINDOW messages."""

    def __init__(self) -> None:
        self.system = {"role": "system", "content": "You are a careful assistant. " * 14}
        self.history: list[dict[str, str]] = []
        self.turn = 0
        for k in range(WINDOW // 2 + 1):
            self.add_user()
            self.history.append({"role": "assistant", "content": f"Earlier answer {k}: fine."})

    def add_user(self) -> None:
        self.turn += 1
        self.history.append({"role": "user", "content": f"Turn {self.turn}. {TURN}"})

    def request(self) -> list[dict[str, str]]:
        self.add_user()
        return [self.system, *self.history[-WINDOW:]]

    def reply(self, content: str | None) -> None:
        self.history.append({"role": "assistant", "content": content or ""})


@dataclass
class Workload:
    shape: str  # short | conversation
    mode: str  # sync | async | stream
    conversation: Conversation = field(default_factory=Conversation)

    @property
    def name(self) -> str:
        return f"{self.shape:<12} {self.mode}"

    def messages(self, i: int) -> list[dict[str, str]]:
        if self.shape == "short":
            return [{"role": "user", "content": f"question {i}"}]
        return self.conversation.request()

    def answered(self, content: str | None) -> None:
        if self.shape == "conversation":
            self.conversation.reply(content)

    def run(self, clients: Clients, calls: int) -> None:
        if self.mode == "async":
            clients.loop.run_until_complete(self._arun(clients.aclient, calls))
            return
        for i in range(calls):
            if self.mode == "stream":
                parts = [
                    chunk.choices[0].delta.content or ""
                    for chunk in clients.client.chat.completions.create(
                        model="m", messages=self.messages(i), stream=True
                    )
                    if chunk.choices
                ]
                self.answered("".join(parts))
            else:
                reply = clients.client.chat.completions.create(
                    model="m", messages=self.messages(i)
                )
                self.answered(reply.choices[0].message.content)

    async def _arun(self, aclient: openai.AsyncOpenAI, calls: int) -> None:
        for i in range(calls):
            reply = await aclient.chat.completions.create(model="m", messages=self.messages(i))
            self.answered(reply.choices[0].message.content)


@dataclass
class Clients:
    client: openai.OpenAI
    aclient: openai.AsyncOpenAI
    loop: asyncio.AbstractEventLoop


# -- recording variants -------------------------------------------------------------------------
def unrecorded(_: Path) -> contextlib.AbstractContextManager[Any]:
    return contextlib.nullcontext()


def symtrace_record(path: Path) -> contextlib.AbstractContextManager[Any]:
    return symtrace.record(path / "bundle", overwrite=True)


def vcrpy_record(path: Path) -> contextlib.AbstractContextManager[Any]:
    import vcr  # type: ignore[import-untyped]

    return vcr.use_cassette(str(path / "cassette.yaml"), record_mode="all")


VARIANTS: dict[str, Callable[[Path], contextlib.AbstractContextManager[Any]]] = {
    "unrecorded": unrecorded,
    "vcrpy": vcrpy_record,
    "symtrace": symtrace_record,
}


def cpu_block(
    make: Callable[[], contextlib.AbstractContextManager[Any]], body: Callable[[], None]
) -> tuple[float, float]:
    """(CPU of entering, CPU of body + exit) of one session."""
    t0 = time.process_time()
    manager = make()
    manager.__enter__()
    t1 = time.process_time()
    try:
        body()
    except BaseException:
        manager.__exit__(*sys.exc_info())
        raise
    manager.__exit__(None, None, None)
    return t1 - t0, time.process_time() - t1


def recording(url: str, workdir: Path, rounds: int, calls: int) -> None:
    loop = asyncio.new_event_loop()
    clients = Clients(
        openai.OpenAI(base_url=url, api_key="sk-bench", max_retries=0),
        openai.AsyncOpenAI(base_url=url, api_key="sk-bench", max_retries=0),
        loop,
    )
    workloads = [Workload(s, m) for s in ("short", "conversation") for m in ("sync", "async",
                                                                             "stream")]
    names = list(VARIANTS)
    per_call: dict[tuple[str, str], list[float]] = {}
    setup: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(rounds + 1):  # round 0 warms imports, connections and caches
        for w_index, workload in enumerate(workloads):
            shift = (round_ + w_index) % len(names)
            for name in names[shift:] + names[:shift]:
                cell = workdir / f"rec-{round_}-{w_index}-{name}"
                cell.mkdir()
                enter, body = cpu_block(
                    lambda n=name, c=cell: VARIANTS[n](c),
                    lambda w=workload: w.run(clients, calls),
                )
                shutil.rmtree(cell)
                if round_:
                    per_call.setdefault((workload.name, name), []).append(body / calls)
                    setup[name].append(enter)
    loop.run_until_complete(clients.aclient.close())
    loop.close()
    clients.client.close()

    print(f"\n1. Recording overhead per call (CPU of this process, openai SDK, local endpoint "
          f"in its own process; median of {rounds} interleaved rounds of {calls} calls)")
    print(f"{'workload':<22}{'unrecorded ms':>14}{'vcrpy +ms':>11}{'symtrace +ms':>14}"
          f"{'symtrace/vcrpy':>16}")
    ratios = []
    for workload in workloads:
        base = per_call[(workload.name, "unrecorded")]
        extra = {
            name: statistics.median(
                v - b for v, b in zip(per_call[(workload.name, name)], base, strict=True)
            )
            for name in ("vcrpy", "symtrace")
        }
        ratio = extra["symtrace"] / extra["vcrpy"] if extra["vcrpy"] > 0 else float("nan")
        ratios.append(ratio)
        print(f"{workload.name:<22}{statistics.median(base) * 1e3:>14.3f}"
              f"{extra['vcrpy'] * 1e3:>11.3f}{extra['symtrace'] * 1e3:>14.3f}{ratio:>16.2f}")
    print(f"worst symtrace/vcrpy overhead ratio: {max(ratios):.2f} (target <= 1, aim 0.33)")
    print("session entry (fixed, ms): "
          + ", ".join(f"{n} {statistics.median(v) * 1e3:.2f}" for n, v in setup.items()))


# -- synthetic bundles through the public API ---------------------------------------------------
AGENTS = ("planner", "coder", "critic")
POOL = 4  # pooled asyncio tasks per batch
CONTEXT = "Shared project context that every tool call carries along with it. " * 3


def _text(i: int, size: int) -> str:
    seed = hashlib.sha256(str(i).encode()).hexdigest()
    return (f"result {i} " + seed * (size // len(seed) + 1))[:size]


@symtrace.tool
def lookup(query: str, context: str) -> str:
    return _text(len(query) * 7919 + int(query.rsplit("-", 1)[1]), 300)


@symtrace.tool
async def fetch(query: str, context: str, delay: int) -> str:
    for _ in range(delay):  # later-issued tasks finish first: completion order != issue order
        await asyncio.sleep(0)
    return _text(int(query.rsplit("-", 1)[1]), 300)


def program(calls: int) -> None:
    """Deterministic agent-ish traffic: 3 strict lanes, and batches of pooled async tasks."""
    done = 0
    step = 0
    while done < calls:
        if step % 4 == 3 and calls - done >= POOL:
            async def batch(base: int) -> None:
                await asyncio.gather(*(
                    fetch(f"fetch-{base + j}", CONTEXT, POOL - j) for j in range(POOL)
                ))
            asyncio.run(batch(done))
            done += POOL
        else:
            with symtrace.agent(AGENTS[step % len(AGENTS)]):
                lookup(f"lookup-{done}", CONTEXT)
            done += 1
        step += 1
    symtrace.final_result({"calls": calls})


def make_bundle(path: Path, events: int) -> int:
    """Record a bundle of *events* boundary events (+ final_result); return its call count."""
    calls = max(1, events // 2)  # a tool call and its result
    with symtrace.record(path, overwrite=True):
        program(calls)
    return calls


def bundle_files(path: Path) -> tuple[int, int]:
    files = [f for f in path.rglob("*") if f.is_file()]
    return len(files), sum(f.stat().st_size for f in files)


def replay_cpu(path: Path, calls: int, cap: int | None) -> tuple[float, float, int]:
    """CPU of opening a strict replay (load + set-up), CPU of the replay itself (calls and
    close), and the number of events it served."""
    replayed = calls if cap is None else min(cap, calls)
    t0 = time.process_time()
    t1 = t0
    try:
        with symtrace.replay(path):
            t1 = time.process_time()
            program(replayed)
    except symtrace.MissingCall:
        if replayed == calls:  # stopping early leaves the rest unconsumed: expected only then
            raise
    return t1 - t0, time.process_time() - t1, 2 * replayed


def load_cpu(path: Path) -> float:
    t0 = time.process_time()
    symtrace.load_bundle(path)
    return time.process_time() - t0


def replaying(workdir: Path, sizes: list[int], rounds: int, cap: int | None) -> None:
    rows = []
    for events in sizes:
        path = workdir / f"synthetic-{events}"
        t0 = time.process_time()
        calls = make_bundle(path, events)
        record_cpu = time.process_time() - t0
        files, size = bundle_files(path)
        bundle = symtrace.load_bundle(path)
        loads, opens, per_event = [], [], []
        big = events >= 20000
        for _ in range(max(2, rounds // 2) if big else rounds):
            loads.append(load_cpu(path))
            opened, cpu, served = replay_cpu(path, calls, cap)
            opens.append(opened)
            per_event.append(cpu / served)
        rows.append((len(bundle.events), files, size, record_cpu / len(bundle.events),
                     statistics.median(loads), statistics.median(opens),
                     statistics.median(per_event), cap is not None and cap < calls))
        shutil.rmtree(path)

    base = rows[0][6]
    print("\n2+3. Synthetic bundles (3 strict agent lanes + pooled async tasks held for the "
          "completion order; tool boundaries). CPU; 'open' = load + replay set-up")
    print(f"{'events':>8}{'files':>7}{'bytes':>13}{'bytes/ev':>9}{'record ms/ev':>13}"
          f"{'load s':>8}{'open s':>8}{'replay ms/ev':>13}{'x smallest':>11}")
    for n, files, size, rec, load, opened, ev, capped in rows:
        print(f"{n:>8}{files:>7}{size:>13,}{size / n:>9.0f}{rec * 1e3:>13.3f}{load:>8.3f}"
              f"{opened:>8.3f}{ev * 1e3:>13.3f}{ev / base:>11.2f}"
              + ("  (first calls only)" if capped else ""))
    print(f"replay per-event cost, largest / smallest: {rows[-1][6] / base:.2f} (target <= 1.5); "
          f"load of {rows[-1][0]:,} events: {rows[-1][4]:.3f} s CPU (target < 1 s); "
          f"files: {' -> '.join(str(r[1]) for r in rows)} (target: constant)")


# -- conversation growth ----------------------------------------------------------------------
def conversation_sizes(url: str, workdir: Path, turns_list: list[int]) -> None:
    client = openai.OpenAI(base_url=url, api_key="sk-bench", max_retries=0)
    print("\n4. Bundle size against conversation length (each request re-sends the history)")
    print(f"{'turns':>6}{'files':>7}{'bytes':>12}{'verbatim':>12}{'verbatim/bytes':>16}")
    for turns in turns_list:
        path = workdir / f"conv-{turns}"
        with symtrace.record(path, overwrite=True):
            messages = [{"role": "system", "content": "You are a careful assistant. " * 10}]
            for turn in range(turns):
                messages.append({"role": "user", "content": f"Turn {turn}: " + "detail " * 40})
                reply = client.chat.completions.create(model="m", messages=messages)
                messages.append({"role": "assistant",
                                 "content": reply.choices[0].message.content})
        files, size = bundle_files(path)
        verbatim = sum(
            len(orjson.dumps(e.to_json(), option=orjson.OPT_SORT_KEYS)) + 1
            for e in symtrace.load_bundle(path).events
        )
        print(f"{turns:>6}{files:>7}{size:>12,}{verbatim:>12,}{verbatim / size:>16.2f}")
        shutil.rmtree(path)
    client.close()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=40, help="calls per recording cell")
    parser.add_argument("--events", type=int, nargs="+", default=[500, 5000, 50000])
    parser.add_argument("--replay-cap", type=int, default=None, metavar="N",
                        help="replay only the first N calls of each synthetic bundle")
    parser.add_argument("--turns", type=int, nargs="+", default=[10, 20, 40, 80])
    parser.add_argument("--only", choices=("record", "replay", "size"), default=None)
    args = parser.parse_args(argv)
    # a TERM (timeout, kill) unwinds like an error: the endpoint process and the workdir go too
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    os.environ.pop("OPENAI_API_KEY", None)
    os.environ[SECRET_ENV] = "bench-" + hashlib.sha256(b"not a real key").hexdigest()[:32]
    workdir = Path(tempfile.mkdtemp(prefix="symtrace-bench-"))
    print(f"symtrace {symtrace.__version__}, python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs")
    try:
        with stub_endpoint() as url:
            if args.only in (None, "record"):
                recording(url, workdir, args.rounds, args.calls)
            if args.only in (None, "replay"):
                replaying(workdir, args.events, args.rounds, args.replay_cap)
            if args.only in (None, "size"):
                conversation_sizes(url, workdir, args.turns)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
