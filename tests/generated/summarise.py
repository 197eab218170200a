"""Figures of a generated-program run: `python tests/generated/summarise.py REPORT.jsonl`.

Reads the JSON lines `SYMTRACE_GEN_REPORT` collected (one per checked program) and prints, per
framework: programs checked, topologies covered, programs refused at record time, LLM
requests, strict replays, prompt perturbations checked, and selective replays (one per agent
request) that went live or were refused with a typed reason. A program that broke a property
is not in the report: pytest failed on it (its shrunk reproducer is in pytest's output).
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict

import orjson


def main(path: str) -> int:
    with open(path, "rb") as report:
        rows = [orjson.loads(line) for line in report if line.strip()]
    by_framework: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_framework[row["program"]["framework"]].append(row)
    print(f"{'framework':18} {'programs':>8} {'topol.':>6} {'refused':>7} {'LLM req':>7} "
          f"{'strict':>6} {'perturb':>7} {'anchors live':>12} {'refused':>7}")
    for framework, items in sorted(by_framework.items()):
        anchors: Counter[str] = Counter()
        for item in items:
            anchors.update(item["anchors"])
        refused_anchors = sum(n for k, n in anchors.items() if k.startswith("refused"))
        print(f"{framework:18} {len(items):>8} "
              f"{len({(i['program']['topology'], i['program']['option']) for i in items}):>6} "
              f"{sum(1 for i in items if i['refused_at_record']):>7} "
              f"{sum(i['llm_requests'] for i in items):>7} "
              f"{sum(i['strict_replays'] for i in items):>6} "
              f"{sum(1 for i in items if i['perturbed_agent']):>7} "
              f"{anchors['live']:>12} {refused_anchors:>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
