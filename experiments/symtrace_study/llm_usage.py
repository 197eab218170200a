"""What an attempt asked of its LLM endpoint and what it was served, read from its bundle.

Per attempt (over its *live* LLM exchanges only: a replayed prefix was paid for by the
source): the successful calls, the provider errors the SDK retried (429/5xx: infrastructure,
recorded in the bundle so a replay serves them again, never counted as calls), the model
ids requested and served, the distinct sampling parameters sent, and the token usage the
provider reported (OpenAI `usage.{prompt,completion}_tokens`, Anthropic
`usage.{input,output}_tokens`; a streamed response without usage adds nothing).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

SAMPLING = ("temperature", "top_p", "seed", "max_tokens", "max_completion_tokens",
            "frequency_penalty", "presence_penalty", "n", "stop", "top_k", "reasoning_effort")


def status_of(event: Any) -> int:
    response = event.response if isinstance(event.response, dict) else {}
    status = response.get("status", 200)
    return status if isinstance(status, int) else 200


def usage_summary(events: Iterable[Any]) -> dict[str, Any]:
    calls = errors = 0
    requested: set[str] = set()
    served: set[str] = set()
    sampling: list[dict[str, Any]] = []
    tokens = {"prompt": 0, "completion": 0}
    for event in events:
        if not event.is_llm:
            continue
        if status_of(event) >= 400:
            errors += 1
            continue
        calls += 1
        request = (event.request or {}).get("body") if isinstance(event.request, dict) else None
        if isinstance(request, dict):
            if isinstance(request.get("model"), str):
                requested.add(request["model"])
            params = {k: request[k] for k in SAMPLING if k in request}
            if params not in sampling:
                sampling.append(params)
        body = (event.response or {}).get("body") if isinstance(event.response, dict) else None
        if isinstance(body, dict):
            if isinstance(body.get("model"), str):
                served.add(body["model"])
            usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
            tokens["prompt"] += _int(usage.get("prompt_tokens", usage.get("input_tokens")))
            tokens["completion"] += _int(usage.get("completion_tokens",
                                                   usage.get("output_tokens")))
    return {"calls": calls, "provider_errors": errors, "models_requested": sorted(requested),
            "models_served": sorted(served), "sampling": sampling, "tokens": tokens}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
