"""Small builders for hand-made events and bundles (no HTTP, no framework)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from symtrace.api import new_manifest
from symtrace.bundle.format import KIND_RECORDING
from symtrace.bundle.writer import BundleWriter
from symtrace.model.canonical import canonical_http_request
from symtrace.model.redaction import Redactor
from symtrace.record.recorder import Recorder
from symtrace.session.context import Attribution
from symtrace.session.core import LLM, TOOL, BoundaryCall


def chat_request(*texts: str, **extra: Any) -> dict[str, Any]:
    messages = [{"role": "user", "content": t} for t in texts]
    return canonical_http_request(
        "POST", "/v1/chat/completions", "", {"model": "m", "messages": messages, **extra}
    )


def chat_response(text: str | None = None, tool_calls: list[dict] | None = None) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "status": 200,
        "headers": {"content-type": "application/json"},
        "body": {
            "id": "x",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        },
    }


def llm_call(request: dict, lane: str = "main", agent: str | None = None) -> BoundaryCall:
    return BoundaryCall.make(LLM, request, {}, Attribution(agent, lane, None))


def tool_call(
    name: str, args: dict, lane: str = "main", call_id: str | None = None
) -> BoundaryCall:
    meta = {"tool": name, **({"call_id": call_id} if call_id else {})}
    return BoundaryCall.make(
        TOOL, {"tool": name, "arguments": args}, meta, Attribution(None, lane, None)
    )


def recorder(path: Path, **manifest: Any) -> tuple[Recorder, BundleWriter]:
    m = new_manifest(
        kind=KIND_RECORDING,
        task=manifest.get("task", "t"),
        state=None,
        config=None,
        seed=1,
        hash_seed=None,
        adapters=[],
    )
    writer = BundleWriter(path, m, redactor=Redactor()).open()
    return Recorder(writer, Redactor()), writer


def run(session, call: BoundaryCall, response: Any) -> Any:
    ticket = session.begin(call)
    if ticket.live:
        session.finish(ticket, response)
        return response
    return ticket.served


def run_concurrently(session, calls: list[BoundaryCall], stagger: float = 0.03) -> list[Any]:
    """Issue *calls* from one thread each, in list order; results in the order delivered."""
    delivered: list[Any] = []
    errors: list[BaseException] = []

    def worker(call: BoundaryCall) -> None:
        try:
            delivered.append(run(session, call, None))
        except BaseException as exc:  # handed to the test
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(c,)) for c in calls]
    for thread in threads:
        thread.start()
        time.sleep(stagger)  # fix the issue order; a held call blocks only its own thread
    for thread in threads:
        thread.join(10)
    if errors:
        raise errors[0]
    return delivered


class FakeClock:
    """A clock for the benchmark's HookMeter that moves only when a test moves it."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now
