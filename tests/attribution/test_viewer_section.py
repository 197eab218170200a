"""`symtrace view --attribution`: the attribution section (table, critical step, validated
edges) and the event graph with repair-value bars; an attribution of another run is refused."""

from __future__ import annotations

from pathlib import Path

import orjson

import symtrace
from symtrace.cli import main
from symtrace.diagnosis import diagnose
from symtrace.diagnosis.attribution import REPAIR, RolloutResult, estimate, plan_attribution
from symtrace.viewer.graph_svg import VALIDATED

REPO = Path(__file__).resolve().parents[2]
FAILED = REPO / "bundles" / "ag2-tool_error"


def _attribution(tmp_path: Path) -> tuple[Path, dict]:
    bundle = symtrace.load_bundle(FAILED)
    plan = plan_attribution(bundle, diagnose(bundle), k=6)
    critical = plan.candidates[0].node
    results = [RolloutResult(r.node, r.arm, r.index, r.node == critical and r.arm == REPAIR,
                             f"c/{r.key}") for r in plan.rollouts]
    data = estimate(plan, results).to_json()
    path = tmp_path / "attribution.json"
    path.write_bytes(orjson.dumps(data))
    return path, data


def test_view_shows_repair_values_critical_step_and_validated_edges(tmp_path, capsys):
    _, data = _attribution(tmp_path)
    assert data["critical_step"] and data["validated_edges"]
    out = tmp_path / "page.html"
    assert main(["view", str(FAILED), "-o", str(out), "--attribution", str(tmp_path)]) == 0
    html = out.read_text()
    section = html[html.index('<section id="attribution">'):]
    section = section[:section.index("</section>")]
    assert f'Critical step: <a href="#ev={data["critical_step"]}">' in section
    assert section.count("<tr>") == 1 + len(data["nodes"])
    assert "+1.00" in section and "repair value +1.00, significant, critical step" in section
    assert section.count(f'stroke="{VALIDATED}"') == len(data["validated_edges"])
    assert '<a href="#attribution">attribution</a>' in html


def test_an_attribution_of_another_run_is_refused(tmp_path, capsys):
    path, data = _attribution(tmp_path)
    data["nodes"][0]["node"] = "agent_action_9999"
    path.write_bytes(orjson.dumps(data))
    out = tmp_path / "page.html"
    assert main(["view", str(FAILED), "-o", str(out), "--attribution", str(path)]) == 2
    assert "about another run" in capsys.readouterr().err
    assert not out.exists()
    assert main(["view", str(FAILED), "-o", str(out), "--attribution",
                 str(tmp_path / "missing")]) == 2
    assert not out.exists()
