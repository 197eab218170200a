"""The deterministic candidate conditions of Table 10, one plain function per condition.

Every detector has the signature `(view, ctx) -> list[Evidence]`: it looks at one completed
node v, the trace before it τ<v (`ctx.before(view)`) and the task T (`ctx.task`), and returns
the evidence it matched, quoted from the trace. No detector reads evaluator information (T is
stripped of it) and none depends on anything but its arguments, so the same bundle always
gives the same evidence. The rule table that names them is in rules.py.
"""

from __future__ import annotations

import re

from symtrace.diagnosis.message_text import ACTION_KEYS, normalize_url, render
from symtrace.diagnosis.symptoms import Evidence, Scope, excerpt, quote
from symtrace.diagnosis.view import NodeView, TraceContext
from symtrace.model.canonical import JSONValue
from symtrace.model.events import EventType

ACTING = (EventType.AGENT_ACTION, EventType.TOOL_CALL, EventType.FINAL_RESULT)
# Unresolved template variables: __UPPER_CASE__ (case-sensitive, so Python's __main__ is not
# one), {{var}}, <your …>, [insert …], YOUR_API_KEY-style names.
PLACEHOLDER = re.compile(
    r"__[A-Z][A-Z0-9_]*__|\{\{\s*[\w.\-]+\s*\}\}|\bYOUR_[A-Z][A-Z_]+\b"
    r"|(?i:<(?:placeholder|insert|your)[^<>]{0,40}>|\[(?:insert|placeholder|todo|tbd)[^\]]{0,40}\])"
)
SKIPPED = frozenset({"", "...", "…", "<skipped>", "skipped", "n/a"})
NUMBER = re.compile(r"^[-+]?[$€£]?\s?\d[\d,]*(?:\.\d+)?\s?%?$")
INACCESSIBLE = re.compile(
    r"(?i)\b(?:unable to|could not|couldn't|cannot|can't|failed to|was not able to)\s+"
    r"(?:access|reach|load|open|retrieve|fetch|connect|browse|log ?in)\b"
    r"|\baccess (?:is )?denied\b|\b403 forbidden\b|\b(?:page|resource|site) not found\b"
    r"|\bcaptcha\b|\b(?:is|was|are) (?:not|no longer) (?:accessible|available|reachable)\b"
    r"|\b(?:request|connection|page load) timed out\b"
)
BROWSER_TOOL = re.compile(
    r"(?i)browse|navigate|visit|goto|go_to|open_?url|open_?page|web_?fetch|fetch_?page"
    r"|get_?page|read_?page|scrape"
)
STRUCTURED_REQUEST = re.compile(r"(?i)format=json|\.json\b|/api[/.?]|api\.php|\bjson\b")
HTML = re.compile(r"(?is)^\s*(?:<!doctype html|<html)|<html[\s>]")
STILL_NEEDED = re.compile(
    r"(?i)\b(?:I|we) would (?:first |still |then )?(?:need to |have to )?"
    r"(?:browse|visit|navigate|check|search|look up|query|access|open|log ?in)\b"
    r"|\b(?:I|we) (?:still|would) (?:need|have) to\b|\bstill (?:need|needs|have) to be\b"
    r"|\bto (?:obtain|get|retrieve) the (?:actual|real) (?:data|values?|information)\b"
    r"|\b(?:placeholder|hypothetical|illustrative|example) (?:data|values?|answer)\b"
)
PLAN = r"(?i)\b(?:I will|I'll|I am going to|I'm going to|let me|next,? I(?:'ll| will)|plan)\b"
FORBID = re.compile(
    r"(?i)\b(?:do not|don't|never|must not)\s+(?:use|call|visit|open|access|browse|query)\s+"
    r"(?:the\s+)?[\"']?(?P<x>[\w.\-/:]+)"
)
ONLY_SITE = re.compile(
    r"(?i)\bonly\s+(?:use|visit|browse|access)\s+(?:the\s+)?(?:(?:site|domain|website)\s+)?"
    r"[\"']?(?P<x>[\w\-]+(?:\.[\w\-]+)+)"
)
MAX_WORDS = re.compile(r"(?i)\b(?:at most|no more than|maximum of|max\.?)\s+(?P<n>\d+)\s+words?\b")
MUST_INCLUDE = re.compile(
    r"(?i)\bmust (?P<neg>not )?(?:include|contain|mention)\s+[\"'](?P<x>[^\"']+)[\"']"
)


def evidence_at(
    view: NodeView, text: str, note: str, *refs: str, scope: Scope = Scope.LOCAL
) -> Evidence:
    """Evidence attached to *view*, quoting *text*; *refs* are earlier events it points at."""
    return Evidence(quote(text), note, (view.id, *refs), scope)


# ----------------------------------------------------------------------------------------- C1


def unresolved_request(view: NodeView, ctx: TraceContext) -> list[Evidence]:
    """C1: a final output that is another action request instead of the required result."""
    if view.final_style and view.action is not None and view.type in ACTING:
        name = next(view.action[k] for k in ACTION_KEYS if isinstance(view.action.get(k), str))
        note = f"the final output is another {name!r} action, not the requested result"
        return [evidence_at(view, render(view.action), note)]
    return []


def output_format(view: NodeView, ctx: TraceContext) -> list[Evidence]:
    """C1: a final output incompatible with the output format the task states."""
    spec = ctx.task.output
    if not view.final_style or view.action is not None or view.output is None or not spec.kind:
        return []
    problem = _format_problem(view.output, spec.kind, spec.keys, spec.only)
    if problem is None:
        return []
    return [evidence_at(view, render(view.output), f"{problem}; the task says: {spec.statement!r}")]


def _format_problem(output: JSONValue, kind: str, keys: tuple[str, ...], only: bool) -> str | None:
    if kind == "number":
        if isinstance(output, bool) or not (
            isinstance(output, int | float) or NUMBER.match(str(output).strip())
        ):
            return "the output is not a bare number"
        return None
    if kind == "json":
        return None if isinstance(output, dict | list) else "the output is not JSON"
    if not isinstance(output, list) or not all(isinstance(item, dict) for item in output):
        return "the output is not a list of objects"
    for item in output:
        missing = [k for k in keys if k not in item]
        extra = [k for k in item if k not in keys] if only and keys else []
        if missing or extra:
            return f"an object has missing keys {missing} or extra keys {extra}"
    return None


def placeholder_or_skipped(view: NodeView, ctx: TraceContext) -> list[Evidence]:
    """C1: an action argument or final output holds a placeholder, or the action is skipped."""
    if view.type not in ACTING:
        return []
    found = []
    values = [render(call.arguments) for call in view.calls]
    if view.final_style and view.output is not None:
        values.append(render(view.output))
    for text in values:
        match = PLACEHOLDER.search(text)
        if match:
            found.append(
                evidence_at(
                    view,
                    excerpt(text, match.start(), match.end()),
                    f"unresolved placeholder {match.group(0)!r} in an action",
                )
            )
            break
    for call in view.calls:
        args = call.arguments
        if isinstance(args, dict) and args and all(_skipped(v) for v in args.values()):
            found.append(
                evidence_at(
                    view,
                    f"{call.name}({render(args)})",
                    f"{call.name} is called with no real arguments (skipped action)",
                )
            )
            break
    return found


def _skipped(value: JSONValue) -> bool:
    return value is None or (isinstance(value, str) and value.strip().lower() in SKIPPED)


def constraint_violation(view: NodeView, ctx: TraceContext) -> list[Evidence]:
    """C1: the node breaks an explicit constraint of T (the forms listed in docs/diagnosis.md)."""
    found = []
    output = render(view.output) if view.final_style and view.output is not None else None
    for constraint in ctx.task.constraints:
        for problem in _violations(constraint, view, output):
            found.append(evidence_at(view, problem[0], f"{problem[1]}; constraint: {constraint!r}"))
    return found


def _violations(constraint: str, view: NodeView, output: str | None) -> list[tuple[str, str]]:
    out = []
    acting = view.type in ACTING
    match = FORBID.search(constraint)
    if match and acting:
        term = match.group("x").lower().rstrip(".,;")
        for call in view.calls:
            hit = term in call.name.lower() or any(term in url.lower() for url in view.urls)
            if hit:
                out.append((f"{call.name}({render(call.arguments)})", f"uses {term!r}"))
                break
    match = ONLY_SITE.search(constraint)
    if match and acting:
        site = match.group("x").lower()
        for url in view.urls:
            host = normalize_url(url).split("://", 1)[-1].split("/", 1)[0]
            if "://" in url and not (host == site or host.endswith("." + site)):
                out.append((url, f"visits {host}, outside {site}"))
                break
    if output is not None:
        match = MAX_WORDS.search(constraint)
        if match and len(output.split()) > int(match.group("n")):
            out.append((output, f"the output has {len(output.split())} words"))
        match = MUST_INCLUDE.search(constraint)
        if match:
            present = match.group("x").lower() in output.lower()
            if present == bool(match.group("neg")):
                verb = "contains" if present else "lacks"
                out.append((output, f"the output {verb} {match.group('x')!r}"))
    return out


# ----------------------------------------------------------------------------------------- C2


def _comparable(view: NodeView, ctx: TraceContext) -> list[NodeView]:
    types = {
        EventType.TOOL_CALL: (EventType.TOOL_CALL,),
        EventType.TOOL_RESULT: (EventType.TOOL_RESULT,),
        EventType.AGENT_ACTION: (EventType.AGENT_ACTION, EventType.TOOL_CALL),
        EventType.FINAL_RESULT: (EventType.TOOL_CALL,),
    }[view.type]
    return [v for v in ctx.before(view) if v.type in types and not v.control]


def repeated_action(view: NodeView, ctx: TraceContext) -> list[Evidence]:
    """C2: the normalized action fingerprint or an action URL matches a preceding node."""
    if view.control or (not view.fingerprints and not view.urls):
        return []
    urls = _url_keys(view)
    for earlier in _comparable(view, ctx):
        same = [f for f in view.fingerprints if f in earlier.fingerprints]
        if same:
            call = next(c for c in view.calls if c.fingerprint == same[0])
            note = f"repeats {call.name} with the same arguments as {earlier.id}"
            if view.type is EventType.TOOL_RESULT and view.result == earlier.result:
                note += ", and got identical content back"
            return [evidence_at(view, f"{call.name}({render(call.arguments)})", note, earlier.id)]
        before = _url_keys(earlier)
        shared = [url for key, url in urls.items() if key in before]
        if shared:
            return [
                evidence_at(view, shared[0], f"acts on the same URL as {earlier.id}", earlier.id)
            ]
    return []


def _url_keys(view: NodeView) -> dict[str, str]:
    """The node's action URLs by comparison key (normalized, case-folded)."""
    return {normalize_url(url).lower(): url for url in view.urls}


def retry_without_change(view: NodeView, ctx: TraceContext) -> list[Evidence]:
    """C2: a retry with no new parameters or evidence (a failed call re-made as is, or an
    agent repeating its own earlier output with no new successful tool result in between)."""
    if view.control:
        return []  # framework bookkeeping (speaker selection, ledgers) repeats by design
    prefix = ctx.before(view)
    if view.type is EventType.TOOL_CALL:
        for earlier in prefix:
            if (
                earlier.type is EventType.TOOL_RESULT
                and earlier.failed
                and any(f in earlier.fingerprints for f in view.fingerprints)
            ):
                return [
                    evidence_at(
                        view,
                        view.text,
                        f"retries the call that failed at {earlier.id} "
                        f"({earlier.error.render() if earlier.error else ''}) unchanged",
                        earlier.id,
                    )
                ]
        return []
    if not view.is_llm or not view.text.strip():
        return []
    norm = " ".join(view.text.lower().split())
    for earlier in reversed(prefix):
        if earlier.type is EventType.TOOL_RESULT and not earlier.failed:
            return []  # new evidence arrived since the last time
        if (
            earlier.is_llm
            and not earlier.control
            and earlier.lane == view.lane
            and " ".join(earlier.text.lower().split()) == norm
        ):
            return [
                evidence_at(
                    view,
                    view.text,
                    f"repeats the output of {earlier.id} with no new "
                    "successful tool evidence in between",
                    earlier.id,
                )
            ]
    return []


def repeated_final(view: NodeView, ctx: TraceContext) -> list[Evidence]:
    """C2: another final-style output after an earlier one, with no advancing action between."""
    if view.type is not EventType.AGENT_ACTION or not view.final_style or view.control:
        return []
    earlier = next(
        (v for v in reversed(ctx.before(view)) if v.is_llm and v.final_style and not v.control),
        None,
    )
    if earlier is None:
        return []
    between = ctx.views[earlier.index + 1 : view.index]
    if any(v.type is EventType.TOOL_CALL and not _seen_before(v, ctx) for v in between):
        return []
    return [
        evidence_at(
            view,
            view.text,
            f"another final-style answer after {earlier.id} with no new action in between",
            earlier.id,
        )
    ]


def _seen_before(call: NodeView, ctx: TraceContext) -> bool:
    return any(
        v.type is EventType.TOOL_CALL and set(call.fingerprints) & set(v.fingerprints)
        for v in ctx.before(call)
    )
