"""Figures of a generated-program run: `python tests/generated/summarise.py REPORT.jsonl ...`.

Reads the JSON lines `SYMTRACE_GEN_REPORT` collected (several files: one per environment)
and prints, per framework and per topology (variant): programs checked, programs refused at
record time, LLM requests, strict replays, prompt perturbations checked, selective replays
(one per agent request) that went live or were refused with a typed reason, and failures.
Then, per topology, whether the time budget stopped its draws and how long it ran; then
every failure: the first program drawn that broke a property, what broke, and the reproducer
Hypothesis shrank it to (with the kept bundle of each).

Rows: kind "program" (a checked program that passed; rows without a kind are the same, from
older reports), "failure" (a program that broke a property: the first drawn, then the
smaller ones tried while shrinking), "topology" (one per topology run: counts, seconds,
whether the budget stopped it).
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

import orjson

Row = dict[str, Any]
HEADER = (f"{'':34} {'programs':>8} {'refused':>7} {'LLM req':>7} {'strict':>6} "
          f"{'perturb':>7} {'sel.live':>8} {'sel.ref':>7} {'failed':>6}")


def load(paths: Iterable[str]) -> list[Row]:
    rows = []
    for path in paths:
        with open(path, "rb") as report:
            rows.extend(orjson.loads(line) for line in report if line.strip())
    return rows


def _kind(row: Row) -> str:
    return str(row.get("kind", "program"))


def _topology(row: Row) -> str:
    program = row.get("program") or {}
    option = program.get("option") or ""
    return f"{program.get('topology', row.get('topology'))}" + (f" ({option})" if option else "")


def _line(name: str, programs: list[Row], failures: int) -> str:
    anchors: Counter[str] = Counter()
    for item in programs:
        anchors.update(item["anchors"])
    refused = sum(n for k, n in anchors.items() if k.startswith("refused"))
    return (f"{name:34} {len(programs):>8} "
            f"{sum(1 for i in programs if i['refused_at_record']):>7} "
            f"{sum(i['llm_requests'] for i in programs):>7} "
            f"{sum(i['strict_replays'] for i in programs):>6} "
            f"{sum(1 for i in programs if i['perturbed_agent']):>7} "
            f"{anchors['live']:>8} {refused:>7} {failures:>6}")


def _failures(rows: list[Row]) -> dict[tuple[str, str], list[Row]]:
    """(framework, topology) -> its failure rows in order: first drawn ... shrunk."""
    out: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for row in rows:
        if _kind(row) == "failure":
            out[(row["program"]["framework"], row["program"]["topology"])].append(row)
    return out


def summarise(rows: list[Row]) -> list[str]:
    programs: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        if _kind(row) == "program":
            programs[row["program"]["framework"]].append(row)
    failures = _failures(rows)
    topologies = [r for r in rows if _kind(r) == "topology"]
    frameworks = sorted({*programs, *(f for f, _ in failures),
                         *(r["framework"] for r in topologies)})
    out = [HEADER]
    for framework in frameworks:
        items = programs.get(framework, [])
        failed = sum(1 for f, _ in failures if f == framework)
        out.append(_line(framework, items, failed))
        by_topology: dict[str, list[Row]] = defaultdict(list)
        for item in items:
            by_topology[_topology(item)].append(item)
        failed_here = Counter(_topology(rows_[0]) for (f, _), rows_ in failures.items()
                              if f == framework)
        for name in sorted({*by_topology, *failed_here}):
            out.append(_line(f"  {name}", by_topology.get(name, []), failed_here[name]))
    if topologies:
        out += ["", f"{'runs per topology':34} {'checked':>8} {'seconds':>8} {'stopped by':>10}"]
        for row in topologies:
            why = ("failure" if row["failed"] else "budget" if row["budget_stopped"]
                   else "count")
            out.append(f"  {row['framework'] + ' ' + row['topology']:32} {row['checked']:>8} "
                       f"{row['seconds']:>8} {why:>10}")
    for (framework, topology), found in sorted(failures.items()):
        first, last = found[0], found[-1]
        out += ["", f"FAILED {framework} {topology}: {first['what']}",
                f"  drawn:    {first['label']}  bundle: {first['kept']}"]
        if last is not first:
            out += [f"  shrunk to {last['label']} ({len(found) - 1} smaller program(s) "
                    f"broke it while shrinking): {last['what']}",
                    f"  reproducer: program={last['program']}  bundle: {last['kept']}"]
    return out


def main(paths: list[str]) -> int:
    print("\n".join(summarise(load(paths))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
