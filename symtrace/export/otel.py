"""Turning a span plan into OpenTelemetry SDK spans, OTLP JSON and OTLP/HTTP requests.

The spans of a bundle are finished history with ids and times of their own, so they are built
as SDK `ReadableSpan`s directly rather than through a `Tracer` (which would assign fresh ids
and the current time, and turns into a no-op under `OTEL_SDK_DISABLED`). Any SDK
`SpanExporter` can take them (`export_spans`); the OTLP encodings come from the exporter's
own encoder, so the bytes are what an instrumented program would send.

Needs the `otel` extra; importing this module without it raises ExportUnavailable.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson

from symtrace.bundle.reader import Bundle
from symtrace.export.errors import CollectorError, ExportUnavailable, missing_otel_module
from symtrace.export.spans import TracePlan, plan_trace
from symtrace.model.redaction import Redactor

try:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags
except ImportError as exc:  # the extra is optional; say which package is missing
    raise ExportUnavailable(missing_otel_module(exc.name or "opentelemetry")) from exc

SCHEMA_URL = "https://opentelemetry.io/schemas/1.41.0"
_KINDS = {"internal": SpanKind.INTERNAL, "client": SpanKind.CLIENT}
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)


def sdk_spans(plan: TracePlan) -> list[ReadableSpan]:
    """The planned spans as SDK spans, in plan order (root, agents, events in O)."""
    resource = Resource(dict(plan.resource), schema_url=SCHEMA_URL)
    scope = InstrumentationScope(plan.scope, plan.scope_version, SCHEMA_URL)

    def context(span_id: int, trace_id: int | None = None) -> SpanContext:
        return SpanContext(trace_id or plan.trace_id, span_id, is_remote=False,
                           trace_flags=_SAMPLED)

    out = []
    for span in plan.spans:
        status = (
            Status(StatusCode.ERROR, span.error) if span.error is not None
            else Status(StatusCode.UNSET)
        )
        out.append(ReadableSpan(
            name=span.name,
            context=context(span.span_id),
            parent=context(span.parent_id) if span.parent_id is not None else None,
            resource=resource,
            attributes=dict(span.attributes),
            links=[Link(context(link.span_id, link.trace_id), dict(link.attributes))
                   for link in span.links],
            kind=_KINDS[span.kind],
            status=status,
            start_time=span.start_ns,
            end_time=span.end_ns,
            instrumentation_scope=scope,
        ))
    return out


def export_spans(bundle: Bundle, exporter: SpanExporter, **options: Any) -> int:
    """Hand *bundle*'s spans to an SDK exporter; returns the number of spans."""
    spans = sdk_spans(plan_trace(bundle, **options))
    if exporter.export(spans) is not SpanExportResult.SUCCESS:
        raise CollectorError(f"{type(exporter).__name__} did not accept the spans")
    return len(spans)


def otlp_request(bundle: Bundle, **options: Any) -> ExportTraceServiceRequest:
    return encode_spans(sdk_spans(plan_trace(bundle, **options)))


def otlp_json(request: ExportTraceServiceRequest) -> bytes:
    """OTLP/JSON: the protobuf JSON mapping with the OTLP rules (hex ids, integer enums)."""
    data = MessageToDict(request, use_integers_for_enums=True)
    for resource_spans in data.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                _hex_ids(span)
                for link in span.get("links", []):
                    _hex_ids(link)
    return orjson.dumps(data, option=orjson.OPT_SORT_KEYS) + b"\n"


def _hex_ids(item: dict[str, Any]) -> None:
    for key in ("traceId", "spanId", "parentSpanId"):
        if key in item:
            item[key] = base64.b64decode(item[key]).hex()


def shown(text: str) -> str:
    """*text* (a message naming the collector's URL) without its credentials: a URL's
    `user:password@`, an `api_key=` parameter, a token (the pattern redaction)."""
    return Redactor().scrub_text(text)


def traces_url(url: str) -> str:
    """A collector base URL gets the OTLP/HTTP traces path; a URL with a path is used as is."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise CollectorError(shown(f"--otlp needs an http(s) URL, got {url!r}"))
    return url.rstrip("/") + "/v1/traces" if parts.path in ("", "/") else url


def send_otlp(
    request: ExportTraceServiceRequest,
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = 10.0,
) -> int:
    """POST *request* as OTLP/HTTP protobuf; returns the number of spans the collector took."""
    target = traces_url(url)
    count = sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans)
    try:
        response = httpx.post(
            target,
            content=request.SerializeToString(),
            headers={"Content-Type": "application/x-protobuf", **(headers or {})},
            timeout=timeout,
        )
    except httpx.HTTPError as exc:
        raise CollectorError(shown(f"OTLP collector at {target} unreachable: {exc}")) from None
    if response.status_code != 200:
        raise CollectorError(shown(
            f"OTLP collector at {target} answered HTTP {response.status_code}: "
            f"{response.text[:200]}"
        ))
    answer = ExportTraceServiceResponse()
    if response.content and "protobuf" in response.headers.get("content-type", ""):
        answer.ParseFromString(response.content)
    rejected = answer.partial_success.rejected_spans
    if rejected:
        raise CollectorError(shown(
            f"OTLP collector at {target} rejected {rejected} of {count} spans: "
            f"{answer.partial_success.error_message}"
        ))
    return count
