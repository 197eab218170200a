"""Import existing logs as analysis-only traces (same node types and graph, not replayable).

Three shapes are accepted (docs/diagnosis.md has examples):

- `messages`: a JSON list of chat messages (`role`, `name`, `content`, optional `tool_calls`,
  `role: "tool"` results with `tool_call_id`), or `{"task": ..., "messages": [...]}`.
- `openai-log`: a JSON list (or JSONL file) of `{"request": <chat-completions request body>,
  "response": <chat.completion>}` entries, or `{"task": ..., "calls": [...]}`. `request` may
  also be `{"body": ...}` and `response` `{"status": 200, "body": ...}`.
- `steps`: a multi-agent transcript `{"question": ..., "trajectory": [{"step": 0, "agent_name":
  ..., "content": ...}, ...]}` (the Who&When layout; labels in the file are never read here).

Each assistant turn becomes an agent_action, each tool call a tool_call, each tool message a
tool_result (DATA edge from its call, none when the call is not in view), and the run ends in
a final_result holding the last assistant text. Framework dialects (dialects.py) turn stock
control turns into agent_actions with a `reason` and code-executor replies into tool results
of the code the previous turn asked to run; a WebSurfer/FileSurfer turn becomes its decision, the
tool call it reports and the page it saw; console output a benchmark harness printed into a
message (warnings, runtime tracebacks, agbench's end-of-run lines) is taken out of the agent's
text. The bundle is in memory only, marked `replayable: false`.

This module reads the file and picks the shape; log_readers.py walks the log and
trace_builder.py makes the events.
"""

from __future__ import annotations

import json
import os
from enum import StrEnum
from pathlib import Path
from typing import Any

from symtrace.bundle import FORMAT_VERSION
from symtrace.bundle.format import KIND_RECORDING, MANIFEST, check_manifest
from symtrace.bundle.reader import Bundle, load_bundle
from symtrace.diagnosis.errors import TraceImportError
from symtrace.diagnosis.log_readers import LogReader
from symtrace.diagnosis.message_text import is_int
from symtrace.errors import SymtraceError
from symtrace.model.canonical import JSONValue
from symtrace.model.events import EventType

HUMAN_NAMES = frozenset({"human", "user"})


class ImportFormat(StrEnum):
    AUTO = "auto"
    MESSAGES = "messages"
    OPENAI_LOG = "openai-log"
    STEPS = "steps"


def load_source(
    path: str | os.PathLike[str],
    *,
    fmt: ImportFormat | str = ImportFormat.AUTO,
    task: JSONValue = None,
) -> Bundle:
    """A recorded bundle directory, or a log file imported as an analysis-only trace."""
    root = Path(path)
    if root.is_dir() and (root / MANIFEST).is_file():
        return load_bundle(root)
    if root.is_dir():
        return load_bundle(root)  # raises BundleNotFound with the usual message
    return import_trace(root, fmt=fmt, task=task)


def import_trace(
    path: str | os.PathLike[str],
    *,
    fmt: ImportFormat | str = ImportFormat.AUTO,
    task: JSONValue = None,
) -> Bundle:
    """Read the log file at *path* and convert it (see the module docstring)."""
    where = str(path)
    try:
        raw = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TraceImportError(f"{where}: no such file or bundle directory") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceImportError(f"{where}: cannot read ({exc})") from exc
    return trace_from_data(_parse(raw, where), fmt=fmt, task=task, name=where)


def _parse(raw: str, where: str) -> JSONValue:
    try:
        return json.loads(raw)
    except ValueError as first:
        lines = [line for line in raw.splitlines() if line.strip()]
        if len(lines) < 2:
            raise TraceImportError(f"{where}: not valid JSON ({first})") from first
        out = []
        for number, line in enumerate(raw.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except ValueError as exc:
                raise TraceImportError(f"{where}:{number}: not valid JSON ({exc})") from exc
        return out


def detect_format(data: JSONValue, where: str = "<data>") -> ImportFormat:
    if isinstance(data, dict):
        if isinstance(data.get("trajectory"), list):
            return ImportFormat.STEPS
        if isinstance(data.get("messages"), list):
            return ImportFormat.MESSAGES
        if any(isinstance(data.get(k), list) for k in ("calls", "entries", "log")):
            return ImportFormat.OPENAI_LOG
    if isinstance(data, list) and data and all(isinstance(item, dict) for item in data):
        if all("role" in item for item in data):
            return ImportFormat.MESSAGES
        if all("request" in item and "response" in item for item in data):
            return ImportFormat.OPENAI_LOG
    raise TraceImportError(
        f"{where}: cannot tell the format: expected a list of chat messages (objects with "
        "'role'), a list of {'request', 'response'} entries, or an object with 'messages', "
        "'calls' or 'trajectory'"
    )


def trace_from_data(
    data: JSONValue,
    *,
    fmt: ImportFormat | str = ImportFormat.AUTO,
    task: JSONValue = None,
    name: str = "<import>",
) -> Bundle:
    """Convert parsed log data into an analysis-only Bundle."""
    fmt = ImportFormat(fmt)
    if fmt is ImportFormat.AUTO:
        fmt = detect_format(data, name)
    wrapper = data if isinstance(data, dict) else {}
    if task is None:
        task = wrapper.get("task")
    builder = LogReader(name)
    if fmt is ImportFormat.MESSAGES:
        items = wrapper.get("messages") if wrapper else data
        found_task, final = builder.messages(_list(items, name, "messages"))
    elif fmt is ImportFormat.STEPS:
        if not wrapper:
            raise TraceImportError(f"{name}: the steps format is an object with 'trajectory'")
        found_task, final = builder.messages(_steps(wrapper, name))
        if task is None:
            task = wrapper.get("question")
    else:
        items = next((wrapper[k] for k in ("calls", "entries", "log") if k in wrapper), data)
        found_task, final = builder.openai_log(_list(items, name, "entries"))
    if "final_output" in wrapper or "final_answer" in wrapper:
        final = wrapper.get("final_output", wrapper.get("final_answer"))
    builder.add(
        EventType.FINAL_RESULT,
        "main",
        None,
        None,
        {"exit_code": None, "value": final, "stdout_tail": None},
        data=builder.last_action,
    )
    manifest = {
        "format_version": FORMAT_VERSION,
        "kind": KIND_RECORDING,
        "replayable": False,
        "complete": True,
        "task": task if task is not None else found_task,
        "initial_state": {},
        "config": {"imported_from": name, "import_format": fmt.value},
    }
    try:
        check_manifest(manifest, name)
    except SymtraceError as exc:  # pragma: no cover - the manifest is ours
        raise TraceImportError(str(exc)) from exc
    return Bundle(path=Path("<import>"), manifest=manifest, events=tuple(builder.events))


def _list(items: object, where: str, what: str) -> list[dict[str, Any]]:
    if not isinstance(items, list) or not items:
        raise TraceImportError(f"{where}: expected a non-empty list of {what}")
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise TraceImportError(f"{where}: {what}[{i}] is not a JSON object")
    return items


def _steps(wrapper: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """A Who&When-style trajectory as chat messages: the first human/user step is the user
    turn, every other step an assistant turn of its agent (`step` kept for evaluation). Any
    label the file carries (`mistake_step`, `mistake_agent`, …) is not read."""
    steps = _list(wrapper.get("trajectory"), where, "trajectory steps")
    out: list[dict[str, Any]] = []
    for i, step in enumerate(steps):
        name = step.get("agent_name", step.get("name", step.get("role")))
        content = step.get("content")
        if not isinstance(name, str) or not isinstance(content, str | list | None):
            raise TraceImportError(f"{where}: trajectory[{i}] needs agent_name and content")
        number = step.get("step", i)
        if not is_int(number):
            raise TraceImportError(f"{where}: trajectory[{i}].step is not an integer")
        human = name.strip().lower() in HUMAN_NAMES
        out.append(
            {"role": "user" if human else "assistant", "name": name, "content": content,
             "step": number}
        )  # fmt: skip
    return out


