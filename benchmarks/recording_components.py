"""Where a recorder's CPU goes, per component, inside the openai SDK's process.

    .venv/bin/python benchmarks/recording_components.py [--shape conversation|short]
        [--mode sync|async|stream] [--variant symtrace|vcrpy|unrecorded]
        [--sessions 6] [--calls 40] [--component MODULE:QUALNAME ...] [--repo PATH]

Runs one workload of `recording_overhead.py` (same shapes, same local stub endpoint in its own
process) in sessions of the chosen variant, the first two sessions as warm-up, and prints per
call:

* this process's CPU (`time.process_time`, all threads) and the garbage collector's share of it
  (`gc.callbacks`; the collector is pinned before each session, `gc.collect()` + `gc.freeze()`,
  as in `recording_overhead.py`);
* the CPU of any process the recorder started, from /proc (none expected);
* for each component (a function or method, wrapped at class level): main-thread CPU
  (`time.thread_time_ns`) from its entry to its return, *including what it calls* and
  *excluding collections that ran meanwhile* (a collection is triggered by whoever allocates
  the 700th object, not by the component that pays for it), and its calls per recorded call.
  Components nest (``Recorder.begin`` includes ``GraphBuilder.parents_for``): they do not add
  up. A component the imported symtrace does not have (``--repo``) is listed as absent.

``--repo PATH`` imports symtrace (and this script's sibling modules) from another checkout, to
compare two versions in the same minute; ``--component`` adds components (``module:Class.attr``
or ``module:function``). Per-component figures are far less noisy than the difference of two
cells in `recording_overhead.py` but see only what they wrap.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import importlib
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

DEFAULT_COMPONENTS = (
    "symtrace.boundaries.http.exchange:Exchange.__init__",
    "symtrace.boundaries.http.exchange:Exchange.completed",
    "symtrace.boundaries.http.exchange:Exchange.streamed",
    "symtrace.boundaries.http.httpx_family:HttpxSeam.wire",
    "symtrace.record.recorder:Recorder.begin",
    "symtrace.session.core:Session.finish",
    "symtrace.model.graph:GraphBuilder.parents_for",
    "symtrace.model.graph:GraphBuilder.completed",
    "symtrace.bundle.writer:BundleWriter.write_event",
    "httpx:HTTPTransport.handle_request",
    "httpx:AsyncHTTPTransport.handle_async_request",
    "httpx:Client._send_single_request",
    "httpx:AsyncClient._send_single_request",
)


class Components:
    """Inclusive main-thread CPU per wrapped component, with the collector's time taken out."""

    def __init__(self) -> None:
        self.clock = time.thread_time_ns
        self.gc_ns = 0  # collector CPU so far (main thread)
        self.cpu: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self._gc_start = 0
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_start = self.clock()
        else:
            self.gc_ns += self.clock() - self._gc_start

    def clear(self) -> None:
        self.cpu.clear()
        self.calls.clear()
        self.gc_ns = 0

    def wrap(self, spec: str) -> bool:
        """Wrap the component *spec* (module:Qualname); False if this code has none."""
        module_name, _, qualname = spec.partition(":")
        try:
            owner: Any = importlib.import_module(module_name)
        except ImportError:
            return False
        *path, attribute = qualname.split(".")
        for name in path:
            owner = getattr(owner, name, None)
        func = getattr(owner, attribute, None) if owner is not None else None
        if func is None:
            return False
        raw = vars(owner).get(attribute, func) if isinstance(owner, type) else func
        if isinstance(raw, (staticmethod, classmethod)):
            return False  # not needed by the defaults; keeps the wrapper simple
        setattr(owner, attribute, self._timed(func, qualname))
        return True

    def _timed(self, func: Callable[..., Any], label: str) -> Callable[..., Any]:
        components = self
        if asyncio.iscoroutinefunction(func):
            @functools.wraps(func)
            async def atimed(*args: Any, **kwargs: Any) -> Any:
                t, g = components.clock(), components.gc_ns
                try:
                    return await func(*args, **kwargs)
                finally:
                    components._add(label, t, g)
            return atimed

        @functools.wraps(func)
        def timed(*args: Any, **kwargs: Any) -> Any:
            t, g = components.clock(), components.gc_ns
            try:
                return func(*args, **kwargs)
            finally:
                components._add(label, t, g)
        return timed

    def _add(self, label: str, start: int, gc_before: int) -> None:
        self.cpu[label] += self.clock() - start - (self.gc_ns - gc_before)
        self.calls[label] += 1


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", choices=("short", "conversation"), default="conversation")
    parser.add_argument("--mode", choices=("sync", "async", "stream"), default="sync")
    parser.add_argument("--variant", default="symtrace")
    parser.add_argument("--sessions", type=int, default=6)
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--component", action="append", default=[], metavar="MODULE:QUALNAME")
    parser.add_argument("--repo", type=Path, default=None,
                        help="import symtrace and the benchmark modules from this checkout")
    args = parser.parse_args(argv)
    if args.repo is not None:
        sys.path[:0] = [str(args.repo), str(args.repo / "benchmarks")]
    # imported here, after --repo has set the import path
    import openai
    import recording_overhead as ro
    from measuring import ChildCPU

    import symtrace

    if args.variant not in ro.VARIANTS:
        parser.error(f"--variant: one of {', '.join(ro.VARIANTS)}")
    components = Components()
    # vcrpy keeps the transport methods it finds at import: wrap them before it is imported
    specs = [*DEFAULT_COMPONENTS, *args.component]
    present = [s for s in specs if components.wrap(s)]
    absent = [s for s in specs if s not in present]
    ro.os.environ.pop(ro.WRITER_ENV, None)
    with ro.stub_endpoint() as endpoint:
        loop = asyncio.new_event_loop()
        clients = ro.Clients(
            openai.OpenAI(base_url=endpoint.url, api_key="sk-bench", max_retries=0),
            openai.AsyncOpenAI(base_url=endpoint.url, api_key="sk-bench", max_retries=0),
            loop,
        )
        children = ChildCPU(exclude={endpoint.pid})
        workload = ro.Workload(args.shape, args.mode)
        workdir = Path(tempfile.mkdtemp(prefix="symtrace-components-"))
        cpu = 0.0
        writer = 0
        for session in range(args.sessions + 2):  # two warm-up sessions
            if session == 2:
                components.clear()
                cpu, writer = 0.0, 0
            cell = workdir / f"s{session}"
            cell.mkdir()
            # as recording_overhead.py pins the collector before each cell: without it the
            # objects kept by earlier sessions make later collections costlier and the GC
            # share of whichever variant runs longest is overstated
            gc.collect()
            gc.freeze()
            before = children.sample()
            t0 = time.process_time()
            with ro.VARIANTS[args.variant](cell):
                workload.run(clients, args.calls)
            cpu += time.process_time() - t0
            writer += ro.settle(children, before)
        loop.run_until_complete(clients.aclient.close())
        loop.close()
        clients.client.close()
    n = args.sessions * args.calls
    print(f"symtrace {symtrace.__version__} from {Path(symtrace.__file__).parent.parent}: "
          f"{args.shape} {args.mode}, {args.variant}, {args.sessions} sessions of {args.calls} "
          f"calls (after 2 warm-up sessions)")
    print(f"  this process: {cpu / n * 1e3:.3f} ms CPU per call, of which the garbage "
          f"collector {components.gc_ns / n / 1e6:.3f} ms (main thread)")
    print(f"  processes it started (writer): {writer / n / 1e6:.3f} ms CPU per call")
    print(f"  {'component (inclusive, GC excluded)':<52}{'us/call':>9}{'calls/call':>11}")
    print("  (HTTPTransport.handle_request, AsyncHTTPTransport.handle_async_request: the real "
          "transport, under the recorder's hook)")
    for label, ns in sorted(components.cpu.items(), key=lambda kv: -kv[1]):
        print(f"  {label:<52}{ns / n / 1e3:>9.1f}{components.calls[label] / n:>11.2f}")
    idle = [s.partition(":")[2] for s in present if s.partition(":")[2] not in components.cpu]
    if idle:
        print("  not called: " + ", ".join(idle))
    if absent:
        print("  absent in this code: " + ", ".join(s.partition(":")[2] for s in absent))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
