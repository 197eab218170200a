"""How often `symtrace diagnose` finds the labelled mistake in third-party failure logs.

    python benchmarks/diagnosis_accuracy.py DIR [--json] [--no-trace-back] [--seed N]

DIR holds failure logs with labels, one JSON file each, in the Who&When layout
(`{"question", "trajectory": [{"step", "agent_name", "content"}], "mistake_step",
"mistake_agent"}`), searched recursively. The labels are read here only; each log is imported
with the `steps` format (which never reads them), diagnosed without a judge, and scored with
the `symtrace diagnose --eval` code: step-exact, ±1, ±3 and agent accuracy of the anchor next
to the random (expected and seeded), first and last baselines, per sub-directory and overall.
Side by side: the anchor with and without the trace-back to the failure's origin.

Third-party data stays out of the repository: point DIR at a local copy.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from symtrace.diagnosis.evaluate import EvalReport, evaluate, load_labels, render_report
from symtrace.diagnosis.pipeline import diagnose


def labels_for(directory: Path) -> list[dict[str, object]]:
    """One label per labelled JSON log under *directory* (sorted, so runs are comparable)."""
    out = []
    for path in sorted(directory.rglob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or "trajectory" not in data or "mistake_step" not in data:
            continue
        out.append({
            "trace": str(path.resolve()),
            "format": "steps",
            "mistake_step": data["mistake_step"],
            "mistake_agent": data.get("mistake_agent"),
        })  # fmt: skip
    return out


def run(entries: list[dict[str, object]], name: str, *, trace_back: bool, seed: int) -> EvalReport:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "labels.json"
        path.write_text(json.dumps(entries))
        labels = load_labels(path)
    return evaluate(
        labels, lambda bundle: diagnose(bundle, trace_back=trace_back), seed=seed, name=name
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    entries = labels_for(args.directory)
    if not entries:
        raise SystemExit(f"{args.directory}: no labelled Who&When-style JSON logs found")
    groups: dict[str, list[dict[str, object]]] = {}
    for entry in entries:
        sub = Path(str(entry["trace"])).parent.name
        groups.setdefault(sub, []).append(entry)
    if len(groups) > 1:
        groups["all"] = entries
    results = {}
    for name, items in groups.items():
        for trace_back in (False, True):
            key = f"{name} ({'trace-back' if trace_back else 'first symptom'})"
            results[key] = run(items, key, trace_back=trace_back, seed=args.seed)
    if args.json:
        summary = {
            k: {"count": len(r.traces), "summary": r.summary(), "placement": r.placement()}
            for k, r in results.items()
        }
        sys.stdout.write(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    else:
        for report in results.values():
            sys.stdout.write(render_report(report) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
