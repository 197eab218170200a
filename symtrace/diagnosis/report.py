"""Rendering a Diagnosis: the plain-words summary (the default), the coefficient table and the
per-node breakdown (`--explain`), and canonical JSON (`--json`).

JSON output is sorted and rounded (6 decimals) and carries no timestamps, so the same bundle
gives the same bytes.
"""

from __future__ import annotations

import shlex
import textwrap
from typing import Any

import orjson
from rich import box
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from symtrace.diagnosis.pipeline import Diagnosis, NodeDiagnosis
from symtrace.diagnosis.scoring import ScoringConfig
from symtrace.diagnosis.summary import Summary, Verdict
from symtrace.model.inert import inert


def to_json_bytes(data: Any) -> bytes:
    return orjson.dumps(data, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _cats(categories: tuple[Any, ...]) -> str:
    return ",".join(c.value for c in categories) or "-"


FULL_TABLE = ("#", "node", "agent", "L^r", "L^f", "c_l", "c_r", "S_r", "S_s", "c_f", "anchor")
NARROW_TABLE = ("#", "node", "L^r", "L^f", "c_l", "S_s", "c_f", "anchor")
WIDE_TABLE_AT = 120  # columns needed for every coefficient; narrower terminals get fewer


def table(diagnosis: Diagnosis, width: int = WIDE_TABLE_AT) -> Table:
    """One row per completed node in observed order; below WIDE_TABLE_AT columns the agent,
    c_r and S_r columns are left out (named under the table) so ids are never cut."""
    anchor = diagnosis.anchor
    columns = FULL_TABLE if width >= WIDE_TABLE_AT else NARROW_TABLE
    grid = Table(
        title=Text(f"symtrace diagnose: {diagnosis.source}"), title_justify="left",
        box=box.SIMPLE_HEAD, pad_edge=False,
    )
    for name in columns:
        grid.add_column(
            name, justify="left" if name in ("node", "agent", "L^r", "L^f", "anchor") else "right",
            no_wrap=name != "anchor", overflow="ellipsis",
        )
    for node in diagnosis.nodes:
        f, s = node.features, node.scores
        mark = ""
        if anchor is not None and node.view.id == anchor.target:
            mark = f"◀ {anchor.anchor}" if anchor.anchor != node.view.id else "◀ here"
        elif node.eligible and node.boundary is not None:
            mark = f"({node.boundary.event_id})"
        style = "bold" if mark.startswith("◀") else None
        cells = {
            "#": str(node.view.index), "node": node.view.id, "agent": node.view.agent or "-",
            "L^r": _cats(node.proposed), "L^f": _cats(node.confirmed),
            "c_l": _num(f.c_local if f else None), "c_r": _num(f.c_raw if f else None),
            "S_r": _num(s.s_r if s else None), "S_s": _num(s.s_s if s else None),
            "c_f": _num(s.c_f if s else None), "anchor": mark,
        }  # fmt: skip
        grid.add_row(*(Text(cells[c]) for c in columns), style=style)
    return grid


def evidence_lines(diagnosis: Diagnosis) -> Text:
    text = Text()
    for node in diagnosis.nodes:
        for item in node.evidence:
            confirmed = item.category in node.confirmed
            text.append(f"{node.view.id} ", style="bold")
            text.append(
                f"[{item.category.value if item.category else '?'} {item.rule}"
                f"{'' if item.scope.value == 'local' else ', propagated'}"
                f"{'' if confirmed else ', rejected'}] "
            )
            text.append(f'{item.note}: "{item.quote}"')
            refs = item.event_ids[1:]
            if refs:
                text.append(f" (see {', '.join(refs)})")
            text.append("\n")
    return text


def summary_line(diagnosis: Diagnosis) -> str:
    theta = diagnosis.config.theta
    anchor = diagnosis.anchor
    if anchor is None:
        return f"No eligible anchor (no node with a confirmed symptom and c_f ≥ θ={theta:.2f})."
    where = (
        f"at {anchor.target}"
        if anchor.anchor == anchor.target
        else f"at {anchor.anchor} ({anchor.relation} LLM boundary of suspicious node "
        f"{anchor.target})"
    )
    note = "" if anchor.replayable else " [analysis-only trace: not replayable]"
    if anchor.trace:
        moves = "; ".join(f"{s.source}→{s.target} ({s.rule}: {s.detail})" for s in anchor.trace)
        note = f" Traced back from symptom {anchor.symptom}: {moves}.{note}"
    return (
        f"First eligible anchor: {where}; symptoms {_cats(anchor.categories)}, "
        f"c_f={anchor.c_f:.3f} ≥ θ={theta:.2f}.{note}"
    )


def render_table(diagnosis: Diagnosis, console: Console) -> None:
    console.print(table(diagnosis, console.width))
    if console.width < WIDE_TABLE_AT:
        hidden = ", ".join(c for c in FULL_TABLE if c not in NARROW_TABLE)
        console.print(Text(f"not shown at width {console.width}: {hidden} (--json has every "
                           "value; docs/diagnosis.md explains each)"))
    lines = evidence_lines(diagnosis)
    if lines.plain:
        console.print(Text("Evidence", style="bold underline"))
        console.print(lines, end="")
    console.print(Text(summary_line(diagnosis)))
    if diagnosis.judge:
        console.print(Text(f"Judge: {diagnosis.judge} (rationales are audit-only, see --explain)"))


def explain(diagnosis: Diagnosis, event_id: str) -> Group:
    """The full feature breakdown of one node."""
    node = diagnosis.node(event_id)
    v = node.view
    out = [
        Text(
            f"{v.id}  ({v.type.value}, position {v.index} of {len(diagnosis.nodes)}, "
            f"lane {v.lane}, agent {v.agent or '-'})",
            style="bold",
        )
    ]
    view = Table.grid(padding=(0, 2))
    view.add_column(style="dim")
    view.add_column()
    for label, value in (
        ("text", v.text[:300] + ("…" if len(v.text) > 300 else "")),
        ("calls", "; ".join(f"{c.name}" for c in v.calls) or "-"),
        ("urls", ", ".join(v.urls) or "-"),
        ("error", v.error.render() if v.error else "-"),
        ("final-style", "yes" if v.final_style else "no"),
        ("fingerprints", "; ".join(v.fingerprints) or "-"),
    ):
        view.add_row(label, Text(value))
    out.append(view)
    if not node.evidence:
        out.append(Text("No rule triggered: zero suspiciousness, judge not queried."))
        return Group(*out)
    out.append(Text("Rules", style="bold underline"))
    for item in node.evidence:
        out.append(
            Text(
                f"  {item.category.value if item.category else '?'} {item.rule} "
                f"({item.scope.value}, confidence "
                f"{diagnosis.config.confidence(item.rule):.2f}): {item.note}: "
                f'"{item.quote}"'
            )
        )
    out.append(Text(f"L^r = {_cats(node.proposed)}   L^f = {_cats(node.confirmed)}"))
    if node.verdict is not None:
        out.append(
            Text(
                f"judge: confidence {node.verdict.confidence:.3f}; rationale (audit only, "
                f"never in Δ): {node.verdict.rationale}"
            )
        )
    if node.features is not None and node.scores is not None:
        out.append(_equations(node, diagnosis.config))
    return Group(*out)


def _equations(node: NodeDiagnosis, k: ScoringConfig) -> Text:
    f, s = node.features, node.scores
    assert f is not None and s is not None
    n = len(f.categories)
    ip, ia, if_ = int(f.propagation_only), int(f.actionable), int(f.final)
    rows = [
        f"c_l={f.c_local:.3f}  c_r={f.c_raw:.3f}  c_LLM={f.c_llm:.3f}  I_p={ip}  I_a={ia}  "
        f"I_f={if_}  ρ={f.rho:.3f}  |L|={n}  η={s.eta:+.2f}",
        f"(21) B_r = β0 + η + βl·c_l = {k.beta_0} + {s.eta} + {k.beta_l}·{f.c_local:.3f} "
        f"= {s.b_r:.4f}",
        f"(24) G_r = βm·1[|L|>1] + βC4·1[C4] + βC2·1[C2] = {s.g_multi:.4f} + {s.g_cat:.4f} "
        f"= {s.g_r:.4f}",
        f"(25) P_r = βp·I_p + βπ·ρ = {k.beta_p}·{ip} + {k.beta_pi}·{f.rho:.3f} = {s.p_r:.4f}",
        f"(26) S_r = clip(B_r + G_r − P_r) = {s.s_r:.4f}",
        f"(27) B_s = αr·S_r + αl·c_l + αu·c_r = {k.alpha_r}·{s.s_r:.4f} + "
        f"{k.alpha_l}·{f.c_local:.3f} + {k.alpha_u}·{f.c_raw:.3f} = {s.b_s:.4f}",
        f"(28) G_s = αn·min({k.alpha_n_cap},|L|) + αa·I_a = {k.alpha_n}·{min(k.alpha_n_cap, n)} "
        f"+ {k.alpha_a}·{ia} = {s.g_s:.4f}",
        f"(29) P_s = αp·I_p + αf·I_f + απ·ρ = {k.alpha_p}·{ip} + {k.alpha_f}·{if_} + "
        f"{k.alpha_pi}·{f.rho:.3f} = {s.p_s:.4f}",
        f"(30) S_s = clip(B_s + G_s − P_s) = {s.s_s:.4f}",
        f"(31) c_mix = {k.w_llm}·c_LLM + {k.w_struct}·S_s = {s.c_mix:.4f}",
        f"(33) c_f = clip(c_mix + {k.multi_bonus}·1[|L|>1]) = {s.c_f:.4f}  "
        f"{'≥' if s.c_f >= k.theta else '<'} θ={k.theta}",
        "boundary: "
        + (
            f"{node.boundary.event_id} ({node.boundary.relation})"
            if node.boundary
            else "none (no LLM call to resume at)"
        )
        + f"; eligible: {'yes' if node.eligible else 'no'}",
    ]
    return Text("\n".join(rows))


def render_plain(summary: Summary, width: int, *, color: bool = False) -> str:
    """The default `symtrace diagnose` output: the summary in words, wrapped to *width*."""
    def head(text: str) -> str:
        text = inert(text, keep_lines=False)  # recorded content (a task) is never a command
        return f"\x1b[1m{text}\x1b[0m" if color else text

    out = [head(f"Diagnosis of {summary.source}"), ""]
    if summary.verdict is Verdict.NO_SYMPTOM:
        return "\n".join([*out, *_para(summary.headline, width, "")]) + "\n"
    out += [head("What looks wrong"), *_para(summary.headline, width)]
    if summary.where:
        out += ["", head("Where")]
        for sentence in summary.where:
            out += _para(sentence, width)
    if summary.reasons:
        out += ["", head("Why")]
        for reason in summary.reasons:
            out += _para(reason, width, "  - ")
        if summary.more_reasons:
            out += _para(f"… and {summary.more_reasons} more (--explain shows every rule "
                         "and score)", width)
    if summary.suggestions:
        out += ["", head("What to try")]
        for suggestion in summary.suggestions:
            out += command_lines(suggestion.argv, width)
            out += _para(suggestion.purpose, width, "      ")
    return "\n".join(out) + "\n"


def _para(text: str, width: int, indent: str = "  ") -> list[str]:
    return textwrap.wrap(
        inert(text, keep_lines=False), max(40, width), initial_indent=indent,
        subsequent_indent=" " * len(indent),
        break_on_hyphens=False,
    ) or [indent]


def command_lines(argv: tuple[str, ...], width: int, indent: str = "  ") -> list[str]:
    """A shell command in lines of at most *width*, continued with a backslash (still one
    command when pasted)."""
    lines: list[str] = []
    current = indent
    for word in (inert(shlex.quote(arg), keep_lines=False) for arg in argv):
        candidate = current + word if current.isspace() else f"{current} {word}"
        if len(candidate) + 2 > width and not current.isspace():
            lines.append(current + " \\")
            current = indent + "    " + word
        else:
            current = candidate
    lines.append(current)
    return lines
