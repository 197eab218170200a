"""`symtrace demo`: the main job on the embedded default, start to finish.

It starts the stochastic stub endpoint on 127.0.0.1, records the bundled example MAS
(examples/trip_planner.py: planner → researcher with parallel tools → streaming writer),
shows the bundle, reruns it live (it differs: the endpoint samples), replays it strictly
(identical output, zero endpoint requests), then replays it selectively from an anchor with
guidance and shows the child bundle. Pictures of both event graphs are written as SVG.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from symtrace.bundle import load_bundle
from symtrace.bundle.inspect import show_table
from symtrace.process.runner import record_command, replay_bundle
from symtrace.stub import StubLLM
from symtrace.viewer.graph_svg import render_svg

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "trip_planner.py"
GUIDANCE = (
    "Repair guidance: base the answer only on the tool results in the notes, name the "
    "weather and the converted amount explicitly, and finish with a one-line summary."
)


def run_demo(workdir: Path, *, keep: bool = False, console: Console | None = None) -> int:
    console = console or Console()
    if not EXAMPLE.exists():
        console.print(f"[red]example program not found: {EXAMPLE}[/red]")
        return 2
    if workdir.exists() and not keep:
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    parent, child = workdir / "trip-run", workdir / "trip-run-repaired"
    command = [sys.executable, str(EXAMPLE)]
    rows: list[tuple[str, str, str]] = []

    with StubLLM(mode="stochastic") as stub:
        saved = {k: os.environ.get(k) for k in ("OPENAI_BASE_URL", "OPENAI_API_KEY")}
        os.environ.update(OPENAI_BASE_URL=stub.url, OPENAI_API_KEY="sk-demo")
        try:
            console.rule("1. record the example MAS against the stochastic endpoint")
            recorded = record_command(parent, command, task="Plan a two-day trip to Lisbon",
                                      force=True, quiet=True)
            _print_output(console, recorded.stdout)
            rows.append(("record", f"{recorded.events} events, exit {recorded.exit_code}",
                         f"{stub.served} requests served"))

            console.rule("2. the bundle")
            bundle = load_bundle(parent)
            show_table(bundle, console)
            (workdir / "trip-run.svg").write_text(render_svg(bundle))

            console.rule("3. a live rerun of the same task (no symtrace)")
            before = stub.served
            live = subprocess.run(command, capture_output=True, env=os.environ.copy())
            differs = live.stdout != recorded.stdout
            _print_output(console, live.stdout)
            rows.append(("live rerun", "output differs" if differs else "output identical",
                         f"{stub.served - before} requests served"))

            console.rule("4. strict replay")
            before = stub.served
            strict = replay_bundle(parent, quiet=True, trust=True)  # recorded just now
            same = strict.stdout == recorded.stdout
            _print_output(console, strict.stdout)
            rows.append(("strict replay",
                         "diverged" if strict.diverged else
                         ("identical output" if same else "OUTPUT DIFFERS"),
                         f"{stub.served - before} requests served"))

            console.rule("5. selective replay: prefix replayed, anchor + guidance live")
            anchor = [e for e in bundle.events if e.is_llm][-1].id
            before = stub.served
            selective = replay_bundle(parent, anchor=anchor, guidance=GUIDANCE, out=child,
                                      force=True, quiet=True, trust=True)
            _print_output(console, selective.stdout)
            if selective.child_bundle is None:
                console.print("[red]selective replay did not produce a child bundle[/red]")
                return 1
            child_bundle = load_bundle(child)
            show_table(child_bundle, console)
            (workdir / "trip-run-repaired.svg").write_text(render_svg(child_bundle))
            lineage = child_bundle.lineage or {}
            rows.append((f"selective from {anchor}",
                         f"{len(lineage.get('replayed_events', []))} replayed, "
                         f"{len(lineage.get('live_events', []))} live",
                         f"{stub.served - before} requests served"))
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    table = Table(title="symtrace demo", header_style="bold")
    for column in ("step", "result", "endpoint"):
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    console.print(table)
    console.print(Panel(
        f"bundles: {parent}  {child}\npictures: {workdir / 'trip-run.svg'}  "
        f"{workdir / 'trip-run-repaired.svg'}\ntry: symtrace show {parent}",
        title="where to look"))
    ok = (not strict.diverged) and same and not selective.diverged
    return 0 if ok else 1


def _print_output(console: Console, stdout: bytes) -> None:
    text = stdout.decode("utf-8", "replace").strip()
    console.print(Panel(text[-1500:] or "(no output)", title="program output", expand=False))
