"""Framework dialects: which turns of a log are agent decisions and which are framework control.

Recorded bundles already say it: the adapters put a `reason` on every framework-internal LLM
call (`speaker_selection`, `progress_ledger`, …). Imported logs do not, so the importers read
each framework's stock phrases and give such turns the same kind of reason. Two families:

- **control** reasons: bookkeeping the framework does by design (choosing the next speaker,
  a progress ledger, a stock "no code to execute" reply, a bare `TERMINATE`). They are never
  agent decisions: no C2 decision rule fires on them, they claim no final answer, and no
  anchor is placed on them.
- **decision** reasons: framework-role turns whose *content* steers the run — Magentic-One's
  task plan and re-plan, its final answer, CrewAI's manager delegating. The paper treats the
  orchestrator's plan as part of the trajectory an error can start in (§2.1: the Orchestrator
  plans, delegates, tracks progress and re-plans), so these stay decisions.

`classify_turn` is pure: the same speaker name and text always give the same `Turn`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import unquote, urlsplit

# Framework-role LLM turns whose content is a decision (see the module docstring).
DECISION_REASONS = frozenset({"planning", "replanning", "final_answer", "manager"})

# AG2's code executor reply: "exitcode: 1 (execution failed)\nCode output: …".
_EXITCODE = re.compile(
    r"^\s*exitcode:\s*(?P<code>-?\d+)\s*\((?P<what>[^)]*)\)\s*(?P<rest>.*)$", re.S
)
_CODE_OUTPUT = re.compile(r"^\s*Code output:\s?", re.I)
# AG2's stock executor reply when the last message held no code block, and Magentic-One's
# ComputerTerminal's ("No code block detected in the messages. Please provide …").
_NO_CODE = re.compile(
    r"(?is)^\s*(?:there is no code\b.{0,80}?\bto execute\b"
    r"|No code block detected in the messages\.)"
)
# Magentic-One's ComputerTerminal: autogen_agentchat's CodeExecutorAgent wording and the older
# autogen_magentic_one one ("…exited with Unix exit code: N").
_M1_TERMINAL = re.compile(
    r"(?s)^\s*The script ran(?:, then exited with an error \(POSIX exit code: (?P<code>-?\d+)\)"
    r"|, then exited with Unix exit code: (?P<unix>-?\d+)"
    r"|(?: but produced no output to console| successfully))(?P<rest>.*)$"
)
# The orchestrator's stock one-line notes, written from its ledger (bookkeeping, no decision).
_M1_NOTES = (
    (re.compile(r"^\s*Request satisfied\.\s*$"), "request_satisfied"),
    (re.compile(r"^\s*Stalled\.+\s*Replanning\.*\s*$"), "stall_notice"),
)
_TERMINATE_ONLY = re.compile(r"^\s*TERMINATE\s*[.!]?\s*$")
# Magentic-One (the Who&When naming is "Orchestrator (thought)", "Orchestrator (-> X)", …).
_ROLE_SUFFIX = re.compile(r"^(?P<base>.*?)\s*\((?P<role>[^()]*)\)\s*$")
_NEXT_SPEAKER = re.compile(r"^\s*Next speaker\s+\S+\s*$", re.I)
_LEDGER = re.compile(
    r"(?is)^\s*(?:Updated Ledger:|\{\s*\"is_request_satisfied\")|\"next_speaker\"\s*:\s*\{"
)
_PLAN = re.compile(
    r"(?i)^\s*(?:Initial plan:|We are working to address the following user request)"
)
_REPLAN = re.compile(r"(?i)^\s*(?:New plan:|Updated plan:|Here is (?:the|an) (?:new|updated) plan)")
# CrewAI's stock observations (crewai/translations/en.json "errors").
_CREWAI_TOOL_ERROR = re.compile(
    r"(?s)^\s*(?:I encountered an error while trying to use the tool\. This was the error: "
    r"(?P<a>.*?)\.?\s*\n\s*Tool \S+ accepts these inputs|I encountered an error: (?P<b>.*)"
    r"|(?P<c>Error: the Action Input is not a valid key, value dictionary\.)"
    r"|(?P<d>You tried to use the tool .+?, but it doesn't exist\.))"
)
_CREWAI_CONTROL = (
    (re.compile(r"^\s*I tried reusing the same input, I must stop using this action input"),
     "crewai_repeated_usage"),
    (re.compile(r"^\s*Now it's time you MUST give your absolute best final answer"),
     "crewai_force_final_answer"),
)  # fmt: skip


class TurnKind(StrEnum):
    DECISION = "decision"  # an agent's own output (possibly with a decision reason)
    CONTROL = "control"  # framework bookkeeping (reason says which)
    EXEC_RESULT = "exec_result"  # a code executor's or tool's observation


@dataclass(frozen=True, slots=True)
class Turn:
    """What one message of a log is, in the framework's own terms."""

    kind: TurnKind
    agent: str | None
    reason: str | None = None
    failed: bool = False
    exit_code: int | None = None
    output: str = ""  # an observation's text (code output, error message)
    error_type: str | None = None


def bare_terminate(text: str) -> bool:
    """A reply that is only AG2's `TERMINATE` token: the termination handshake, no content."""
    return bool(_TERMINATE_ONLY.match(text))


def is_control(reason: str | None) -> bool:
    """A framework-internal turn (it has a reason, and not one of DECISION_REASONS)."""
    return reason is not None and reason not in DECISION_REASONS


def base_agent(name: str | None) -> str | None:
    """The agent behind a display name: "Orchestrator (-> WebSurfer)" → "Orchestrator"."""
    if name is None:
        return None
    match = _ROLE_SUFFIX.match(name)
    return match.group("base").strip() if match and match.group("base").strip() else name.strip()


def classify_turn(name: str | None, text: str) -> Turn:
    """Classify one agent message by its speaker's display name and its text. (CrewAI's
    stock tool-error observations are read where observations are: `crewai_tool_error`.)"""
    agent = base_agent(name)
    role = _ROLE_SUFFIX.match(name or "")
    role_text = role.group("role").strip().lower() if role else ""
    exec_result = exec_observation(text)
    if exec_result is not None:
        return Turn(TurnKind.EXEC_RESULT, agent, **exec_result)
    if _NO_CODE.match(text):
        return Turn(TurnKind.CONTROL, agent, "no_code_to_execute")
    if bare_terminate(text):
        return Turn(TurnKind.CONTROL, agent, "termination")
    for pattern, reason in _CREWAI_CONTROL:
        if pattern.match(text):
            return Turn(TurnKind.CONTROL, agent, reason)
    if _NEXT_SPEAKER.match(text):
        return Turn(TurnKind.CONTROL, agent, "speaker_selection")
    for pattern, reason in _M1_NOTES:
        if pattern.match(text):
            return Turn(TurnKind.CONTROL, agent, reason)
    if _LEDGER.search(text[:400]):
        return Turn(TurnKind.CONTROL, agent, "progress_ledger")
    if role_text == "termination condition":
        return Turn(TurnKind.CONTROL, agent, "termination")
    if _PLAN.match(text):
        return Turn(TurnKind.DECISION, agent, "planning")
    if _REPLAN.match(text):
        return Turn(TurnKind.DECISION, agent, "replanning")
    if role_text == "final answer":
        return Turn(TurnKind.DECISION, agent, "final_answer")
    return Turn(TurnKind.DECISION, agent)


def exec_observation(text: str) -> dict[str, object] | None:
    """A code executor's reply (AG2's "exitcode: …", Magentic-One's ComputerTerminal) as
    failed, exit_code, output and error_type; None for any other text."""
    match = _EXITCODE.match(text)
    if match is not None:
        code = int(match.group("code"))
        output = _CODE_OUTPUT.sub("", match.group("rest").strip(), count=1)
        failed = code != 0 or "fail" in match.group("what").lower()
    else:
        match = _M1_TERMINAL.match(text)
        if match is None:
            return None
        code = int(match.group("code") or match.group("unix") or 0)
        output = (match.group("rest") or "").strip()
        failed = code != 0
    return {
        "failed": failed,
        "exit_code": code,
        "output": output,
        "error_type": _last_exception(output) if failed else None,
    }


def crewai_tool_error(text: str) -> str | None:
    """The error inside one of CrewAI's stock tool-failure observations, or None."""
    match = _CREWAI_TOOL_ERROR.match(text)
    if match is None:
        return None
    return next(g for g in match.groups() if g is not None).strip()


_EXCEPTION_LINE = re.compile(r"(?m)^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Timeout|Exit))\b")


def _last_exception(output: str) -> str:
    found = _EXCEPTION_LINE.findall(output)
    return found[-1].rpartition(".")[2] if found else "ExecutionFailed"


# Console output a run's harness interleaved into messages (Who&When's Magentic-One logs are
# captured stdout/stderr): Python warnings with the source line they quote, the agent runtime's
# "Error processing publish message" traceback, and agbench's end-of-run lines.
_WARNING_LINE = re.compile(r"^\S+\.py:\d+: [A-Za-z]*Warning: ")
_RUNTIME_ERROR = "Error processing publish message"
_END_MARKER = re.compile(r"^(?:SCENARIO\.PY|RUN\.SH) COMPLETE !#!#\s*$")
_FINAL_LINE = re.compile(r"^FINAL ANSWER:[ \t]?(?P<answer>.*)$")
_RAISED_LINE = re.compile(
    r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Timeout|Exit|Interrupt))(?::\s?(?P<msg>.*))?$"
)
_ERROR_CODE = re.compile(r"\bError code: (?P<code>[1-5]\d\d)\b")


@dataclass(frozen=True, slots=True)
class RuntimeFailure:
    """An exception the agent runtime logged while delivering a message (not agent content)."""

    error_type: str
    message: str
    status: int  # the HTTP status the exception names ("Error code: 400"), else 500


@dataclass(frozen=True, slots=True)
class Console:
    """A message split into what the agent said and what the harness printed into it."""

    text: str
    final_answer: str | None = None  # agbench's "FINAL ANSWER: …" (the run's output)
    failures: tuple[RuntimeFailure, ...] = ()


def split_console(text: str) -> Console:
    """Remove harness console lines from *text*. Warnings and runtime tracebacks are removed
    anywhere; "FINAL ANSWER: …" and indented stray lines at the end only when the message
    carries agbench's end-of-run marker, so an agent's own "FINAL ANSWER:" stays its text."""
    lines = text.split("\n")
    ended = any(_END_MARKER.match(line) for line in lines)
    keep: list[str] = []
    failures: list[RuntimeFailure] = []
    final: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if _WARNING_LINE.match(line):
            i += 2 if i + 1 < len(lines) and lines[i + 1][:1] in (" ", "\t") else 1
            continue
        if line.strip() == _RUNTIME_ERROR:
            i, failure = _runtime_traceback(lines, i + 1)
            if failure is not None:
                failures.append(failure)
            continue
        if ended and _END_MARKER.match(line):
            i += 1
            continue
        found = _FINAL_LINE.match(line) if ended else None
        if found is not None:
            final = found.group("answer").strip()
            i += 1
            continue
        keep.append(line)
        i += 1
    while ended and keep and keep[-1][:1] in (" ", "\t"):
        keep.pop()  # a warning's quoted source line whose header landed elsewhere
    if len(keep) == len(lines) and not failures:
        return Console(text)
    return Console("\n".join(keep).rstrip(), final, tuple(failures))


def _runtime_traceback(lines: list[str], i: int) -> tuple[int, RuntimeFailure | None]:
    if i < len(lines) and lines[i].startswith("Traceback (most recent call last):"):
        i += 1
    while i < len(lines) and lines[i][:1] in (" ", "\t"):
        i += 1
    raised = _RAISED_LINE.match(lines[i]) if i < len(lines) else None
    if raised is None:
        return i, None
    message = raised.group("msg") or ""
    code = _ERROR_CODE.search(message)
    kind = raised.group("type").rpartition(".")[2]
    return i + 1, RuntimeFailure(kind, message, int(code.group("code")) if code else 500)


@dataclass(frozen=True, slots=True)
class Observed:
    """An agent turn that reports a tool it ran and what it saw (Magentic-One's WebSurfer
    and FileSurfer put both in one message): the decision's text, the call and its result."""

    action: str
    tool: str
    arguments: dict[str, str]
    value: dict[str, object]
    error: str | None = None  # the failure, if the observation is an error page


# MultimodalWebSurfer's action descriptions (autogen_ext …/_multimodal_web_surfer.py, and the
# older autogen_magentic_one wording), each with the tool that produced it.
_WEB_ACTIONS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.S), tool)
    for pattern, tool in (
        (r"I typed '(?P<url>.*)' into the browser address bar\.", "visit_url"),
        (r"I typed '(?P<query>.*)' into the browser search bar\.", "web_search"),
        (r"I typed '(?P<text_value>.*)' into '(?P<input_field>.*)'\.", "input_text"),
        (r"I input '(?P<text_value>.*)'\.", "input_text"),
        (r"I clicked the browser back button\.", "history_back"),
        (r"I scrolled up one page in the browser\.", "scroll_up"),
        (r"I scrolled down one page in the browser\.", "scroll_down"),
        (r"I clicked '(?P<target>.*)'\.", "click"),
        (r"I clicked the control\.", "click"),
        (r"I scrolled '(?P<target>.*)' up\.", "scroll_element_up"),
        (r"I scrolled '(?P<target>.*)' down\.", "scroll_element_down"),
        (r"I hovered over '(?P<target>.*)'\.", "hover"),
        (r"I answered the following question '(?P<question>.*)' based on the web page\.",
         "answer_question"),
        (r"I summarized the current web page\.?", "summarize_page"),
        (r"I am waiting a short period of time before taking further action\.", "sleep"),
    )
)  # fmt: skip
_WEB_STATE = re.compile(
    r"\n\s*\n(?:Here is a screenshot of |The web browser is open to the page )"
    r"\[(?P<title>[^\]\n]*)\]\((?P<url>[^)\s]*)\)\.?"
)
# FileSurfer's viewport header ("Address:" in autogen_magentic_one, "Path:" in autogen_ext;
# the older one also notes a revisit: "You previously visited this page 9 seconds ago.").
_FILE_STATE = re.compile(
    r"^(?:Address|Path): (?P<path>[^\n]*)\n(?:Title: (?P<title>[^\n]*)\n)?"
    r"(?:You previously visited this page [^\n]*\n)?"
    r"Viewport position: Showing page (?P<page>\d+) of \d+\.\n(?:=+\n)?(?P<body>.*)$",
    re.S,
)
_FILE_MISSING = re.compile(r"(?m)^(?:#+ )?(?:Error 404|FileNotFoundError)\s*$|^File not found: ")
# FileSurfer's own failures: an exception in its tool, or its model's unparsable arguments.
_FILE_ERROR = re.compile(
    r"^(?:File surfing error:\s*|(?=File surfer encountered an error decoding JSON arguments: ))"
    r"(?P<detail>.*)$",
    re.S,
)


def observed_tool(text: str) -> Observed | None:
    """Read a WebSurfer or FileSurfer reply as the tool it ran and the page it saw; None for
    any other text (the speaker's name is not needed: the wording is the framework's own)."""
    state = _WEB_STATE.search(text)
    if state is not None:
        action = text[: state.start()].strip()
        for pattern, tool in _WEB_ACTIONS:
            match = pattern.fullmatch(action)
            if match is not None:
                value = {"url": state.group("url"), "title": state.group("title"),
                         "page": text[state.end():].strip()}  # fmt: skip
                args = {k: v for k, v in match.groupdict().items() if v is not None}
                return Observed(action, tool, args, value)
        return None
    failed = _FILE_ERROR.match(text)
    if failed is not None:
        detail = failed.group("detail").strip()
        return Observed(text, "file_surfer", {}, {"page": detail}, _last_line(detail))
    page = _FILE_STATE.match(text)
    if page is None:
        return None
    body = page.group("body").strip()
    value = {"url": page.group("path"), "title": page.group("title") or "", "page": body}
    missing = _FILE_MISSING.search(body) or _FILE_MISSING.search(page.group("title") or "")
    args = {"path": _local_path(page.group("path")), "page": page.group("page")}
    return Observed(text, "file_surfer", args, value, _last_line(body) if missing else None)


def _local_path(address: str) -> str:
    """FileSurfer's tool takes a local path; the older agent showed it as a file:// address."""
    if not address.startswith("file://"):
        return address
    return unquote(urlsplit(address).path) or address


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else text
