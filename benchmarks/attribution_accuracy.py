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


def explain_trace(label: dict[str, Any], script: Script, budget: int) -> dict[str, Any]:
    """Why the counterfactual column is what it is on one trace (no rollout needed): is the
    label a candidate under *budget*; at which candidates does the stub answer q ⊕ Δ
    differently from q, and which of the script's rules Δ's own text satisfies there; and
    whether the final answer can change at all (the Writer's reply is one unconditional
    rule: every rollout ends with the recorded final text)."""
    bundle = load_bundle(LABELLED / label["trace"])
    plan = plan_attribution(bundle, diagnose(bundle), k=1, budget=budget)
    by_id = {e.id: e for e in bundle.events}
    changed = {}
    for candidate in plan.candidates:
        request = by_id[candidate.node].request
        repaired = apply_to_request(request, candidate.guidance, "user")
        before, after = _rule(script, request["body"]), _rule(script, repaired["body"])
        if before != after:
            keys = [str(v) for k, v in script.rules[after].match.items()
                    if k.endswith("_contains") and str(v) in candidate.guidance] if (
                after is not None) else []
            changed[candidate.node] = {"rule": after, "quoted_by_delta": keys}
    fixed_final = any(rule.match == {"agent": "You are Writer"} for rule in script.rules)
    return {"trace": label["trace"], "label": label["mistake_event"],
            "label_is_candidate": label["mistake_event"] in {c.node for c in plan.candidates},
            "candidates": [c.node for c in plan.candidates], "delta_changes_reply": changed,
            "final_answer_fixed_by_script": fixed_final}


def _rule(script: Script, body: dict[str, Any]) -> int | None:
    """The index of the script rule that answers *body* (None: the default reply)."""
    return next((i for i, rule in enumerate(script.rules) if rule.matches(body, 0)), None)


def explain_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| trace | label a candidate | Δ changes the stub's reply at | Δ's text it "
             "matches | final answer fixed |", "|---|---|---|---|---|"]
    for r in rows:
        changed = r["delta_changes_reply"]
        quoted = sorted({q for c in changed.values() for q in c["quoted_by_delta"]})
        lines.append(f"| {r['trace']} | {'yes' if r['label_is_candidate'] else 'no'} | "
                     f"{', '.join(changed) or '-'} | {', '.join(quoted) or '-'} | "
                     f"{'yes' if r['final_answer_fixed_by_script'] else 'no'} |")
    return "\n".join(lines)


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
    parser.add_argument("--outcome", choices=sorted(OUTCOMES), default="repaired",
                        help="a --run rollout's success: repaired (no live symptom and another "
                        "final answer; default) or symptoms (no live symptom: the earlier, "
                        "defective verdict)")
    parser.add_argument("--backend", default="threads", help="--run: attribute's --backend")
    parser.add_argument("--trace", action="append", help="--run: only this trace (repeatable)")
    parser.add_argument("--explain", action="store_true", help="per trace, why the "
                        "counterfactual column is what it is (label coverage under --budget, "
                        "where Δ changes the stub's reply and by which quoted text, whether "
                        "the final answer can change); no rollout")
    args = parser.parse_args(argv)
    labels = json.loads((LABELLED / "labels.json").read_text())["traces"]
    if args.explain:
        known = scripts()
        explained = [explain_trace(label, known[label["trace"]], args.budget)
                     for label in labels]
        print(json.dumps(explained, indent=2, sort_keys=True) if args.json
              else explain_table(explained))
        return 0
    if args.run:
        ran = [run_trace(label, Path(args.run), args.budget, args.jobs, args.outcome,
                         args.backend) for label in labels
               if label["framework"] == "ag2" and (not args.trace or label["trace"] in args.trace)]
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
    """The first outcome of a labelled rollout (`--outcome symptoms`): no confirmed symptom
    among the rollout's live events. A defect as a verdict of success: a run that skips the
    failing tool call has no symptom either (the Researcher jumping to its text reply passes
    though its text claims results it never fetched), and a rollout anchored after the fault
    passes with the fault's symptom in its prefix and the failed final answer."""
    bundle = load_bundle(child)
    lineage = bundle.lineage or {}  # the recorded run itself: every event is its own
    live = set(lineage.get("live_events") or []) if lineage else {e.id for e in bundle.events}
    return not any(n.confirmed for n in diagnose(bundle).nodes if n.view.id in live)


def repaired(child: Path) -> bool:
    """The labelled rollout's outcome (default): the failure is gone — no confirmed symptom
    among its live events *and* a final answer other than the failed run's (the labelled
    runs have no task evaluator; the failed final answer is the failure they show)."""
    bundle = load_bundle(child)
    parent = (bundle.lineage or {}).get("parent")
    if parent is None:  # the recorded run itself: its final answer is the failed one
        return False
    return no_live_symptom(child) and _final_value(bundle) != _final_value(load_bundle(parent))


def _final_value(bundle: Any) -> Any:
    final = bundle.final_result()
    return (final.response or {}).get("value") if final is not None else None


OUTCOMES = {"repaired": repaired, "symptoms": no_live_symptom}


def run_trace(label: dict[str, Any], out: Path, budget: int, jobs: int,
              outcome: str = "repaired", backend: str = "threads") -> dict[str, Any]:
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
            outcome=PluginOutcome(outcome, OUTCOMES[outcome]), command=command,
            set_env={**make_labelled.QUIET_ENV, "OPENAI_BASE_URL": stub.url}, jobs=jobs,
            cwd=str(REPO), backend=backend, trust=True)
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
