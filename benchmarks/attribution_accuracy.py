"""How often counterfactual attribution finds the labelled fault of `bundles/labelled/`.

    python benchmarks/attribution_accuracy.py [--k 5] [--json]

For every labelled trace (a real AG2 / CrewAI / AgentChat / Magentic-One run on symtrace's
scripted stub, one fault injected at a known decision) this compares four ways to name the
faulty step, scored step-exact against the label, with Wilson 95 % intervals:

* **counterfactual**: `symtrace attribute`'s critical step (default candidates and Δ, k
  rollouts per arm, exact one-sided paired test, Holm, α = 0.05);
* **rules-only anchor**: `symtrace diagnose`'s anchor (no rollout);
* **random**: a seeded draw among the agent decisions (and its exact expectation);
* **last**: the last agent decision.

The counterfactual column needs the rollouts' outcomes. The labelled runs' stub is a *pure
function of the request* (a script keyed on the agent's prompt and the conversation's
contents: no call counter, no sampling), and every tool output an unchanged call makes is
held, so a rollout is decided by the reply its anchor request gets. This script therefore
asks the very script the trace was recorded with for its reply to q (the resample arm) and
to q ⊕ Δ (the repair arm) at every candidate: where the two replies are equal, the two arms'
rollouts are the same run, so every pair is concordant and the paired test cannot reject.
When the replies differ at some candidate, the rollouts must be run
(`symtrace attribute`; the table says so rather than guess). docs/diagnosis.md
("Counterfactual attribution") shows the table and a real `attribute` run confirming it.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

from symtrace.bundle.reader import load_bundle
from symtrace.diagnosis.anchors import decisions
from symtrace.diagnosis.attribution import RolloutResult, estimate, plan_attribution
from symtrace.diagnosis.attribution_stats import wilson
from symtrace.diagnosis.pipeline import diagnose
from symtrace.model.intervention import apply_to_request
from symtrace.stub.scripted import Script

REPO = Path(__file__).resolve().parent.parent
LABELLED = REPO / "bundles" / "labelled"
sys.path.insert(0, str(REPO / "bundles"))


def scripts() -> dict[str, Script]:
    """The stub script each labelled trace was recorded with (bundles/make_labelled.py)."""
    import make_labelled

    return {f"{fw}-{s.name}": Script.from_obj(s.script(fw))
            for fw in make_labelled.FRAMEWORKS for s in make_labelled.SCENARIOS}


def evaluate_trace(label: dict[str, Any], script: Script, k: int) -> dict[str, Any]:
    bundle = load_bundle(LABELLED / label["trace"])
    diagnosis = diagnose(bundle)
    plan = plan_attribution(bundle, diagnosis, k=k)
    by_id = {e.id: e for e in bundle.events}
    differing = []
    for candidate in plan.candidates:
        request = by_id[candidate.node].request
        repaired = apply_to_request(request, candidate.guidance, "user")
        if script.reply_for(request["body"], 0) != script.reply_for(repaired["body"], 0):
            differing.append(candidate.node)
    critical: str | None = None
    if not differing:  # both arms are the same run: the failure reproduces in every rollout
        results = [RolloutResult(r.node, r.arm, r.index, False, None) for r in plan.rollouts]
        attribution = estimate(plan, results)
        critical = attribution.critical.candidate.node if attribution.critical else None
    steps = [v.id for v in decisions(diagnosis.context)]
    anchor = diagnosis.anchor.anchor if diagnosis.anchor else None
    drawn = random.Random(0).choice(steps)  # the draw of `symtrace diagnose --eval` (seed 0)
    return {
        "trace": label["trace"], "label": label["mistake_event"],
        "candidates": [c.node for c in plan.candidates], "differing": differing,
        "counterfactual": critical if not differing else "needs rollouts",
        "anchor": anchor, "random": drawn, "random_expected": 1 / len(steps),
        "last": steps[-1], "label_is_candidate": label["mistake_event"] in
        {c.node for c in plan.candidates},
    }


def table(rows: list[dict[str, Any]]) -> str:
    n = len(rows)
    lines = ["| method | step exact | 95 % Wilson | none found | needs rollouts |",
             "|---|---|---|---|---|"]
    for method in ("counterfactual", "anchor", "random", "last"):
        hits = sum(1 for r in rows if r[method] == r["label"])
        none = sum(1 for r in rows if r[method] is None)
        open_ = sum(1 for r in rows if r[method] == "needs rollouts")
        rate = wilson(hits, n)
        lines.append(f"| {method} | {hits}/{n} ({100 * hits / n:.1f} %) | "
                     f"[{100 * rate.low:.1f}, {100 * rate.high:.1f}] | {none} | {open_} |")
    expected = sum(r["random_expected"] for r in rows) / n
    lines.append(f"| random (expected) | {100 * expected:.1f} % | | | |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--run", metavar="OUT", help="run `attribute` for real on the AG2 "
                        "traces (k=1 per arm), rollouts under OUT")
    parser.add_argument("--budget", type=int, default=3)
    parser.add_argument("--table", metavar="OUT", help="the accuracy table of a --run (its "
                        "OUT directory, finished traces only): earliest decisive step vs "
                        "anchor, random, last")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    labels = json.loads((LABELLED / "labels.json").read_text())["traces"]
    if args.run:
        ran = [run_trace(label, Path(args.run), args.budget, args.jobs) for label in labels
               if label["framework"] == "ag2"]
        print(json.dumps(ran, indent=2, sort_keys=True))
        return 0
    known = scripts()
    rows = [evaluate_trace(label, known[label["trace"]], args.k) for label in labels]
    if args.table:
        ran = {path.parent.name: earliest_decisive(json.loads(path.read_text()))
               for path in Path(args.table).glob("*/attribution.json")}
        rows = [{**r, "counterfactual": ran[r["trace"]]} for r in rows if r["trace"] in ran]
    if args.json:
        print(json.dumps(rows, indent=2, sort_keys=True))
        return 0
    print(table(rows))
    differing = sum(1 for r in rows if r["differing"])
    covered = sum(1 for r in rows if r["label_is_candidate"])
    print(f"\n{len(rows)} traces; the labelled step is a candidate on {covered}; the stub "
          f"answers q ⊕ Δ differently from q at some candidate on {differing}.")
    return 0



# -- real rollouts (the AG2 traces; --run) ----------------------------------------------------
def no_live_symptom(child: Path) -> bool:
    """The outcome of a labelled rollout (`--outcome`): the labelled runs have no evaluator
    (the Writer's text is scripted), so success is the fault's effect gone: no confirmed
    symptom among the rollout's live events."""
    bundle = load_bundle(child)
    lineage = bundle.lineage or {}  # the recorded run itself: every event is its own
    live = set(lineage.get("live_events") or []) if lineage else {e.id for e in bundle.events}
    return not any(n.confirmed for n in diagnose(bundle).nodes if n.view.id in live)


def run_trace(label: dict[str, Any], out: Path, budget: int, jobs: int) -> dict[str, Any]:
    """`attribute` for real on one AG2 labelled trace, k = 1 per arm (the stub is a pure
    function of the request and unchanged tool calls are held: each arm is deterministic)."""
    import make_labelled

    from symtrace.diagnosis.attribution_run import PluginOutcome, attribute
    from symtrace.stub import StubLLM

    framework, _, name = label["trace"].partition("-")
    scenario = next(s for s in make_labelled.SCENARIOS if s.name == name)
    command = [sys.executable, "-c", "import sys; sys.path.insert(0, 'bundles'); "
               f"import make_labelled as m; m.TEAMS[{framework!r}]()"]
    with StubLLM(script=scenario.script(framework)) as stub:
        result = attribute(
            LABELLED / label["trace"], out=out / label["trace"], k=1, budget=budget,
            outcome=PluginOutcome("no_live_symptom", no_live_symptom), command=command,
            set_env={**make_labelled.QUIET_ENV, "OPENAI_BASE_URL": stub.url}, jobs=jobs,
            cwd=str(REPO))
    data = result.to_json()
    return {"trace": label["trace"], "label": label["mistake_event"],
            "earliest_decisive": earliest_decisive(data),
            "nodes": {n["node"]: [n["repair"]["successes"], n["resample"]["successes"]]
                      for n in data["nodes"]}, "tools": data["tools"]}


def earliest_decisive(attribution: dict[str, Any]) -> str | None:
    """The earliest candidate (trace order) whose repair passed and whose resample failed."""
    return next((n["node"] for n in attribution["nodes"]
                 if n["repair"]["successes"] == n["repair"]["n"] > 0
                 and n["resample"]["successes"] == 0 and n["resample"]["n"] > 0), None)


if __name__ == "__main__":
    sys.exit(main())
