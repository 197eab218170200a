"""`symtrace export B --otel FILE | --otlp URL`: the event graph as OpenTelemetry spans."""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from symtrace.cli.commands import summary


def add_parser(sub: Any) -> None:
    exp = sub.add_parser(
        "export", help=summary("export"),
        description="One trace per bundle, GenAI semantic conventions; see docs/export-otel.md. "
        "Needs the otel extra: pip install 'symtrace[otel]'.",
    )
    exp.add_argument("bundle", help="the bundle directory")
    target = exp.add_mutually_exclusive_group(required=True)
    target.add_argument("--otel", metavar="FILE", help="write OTLP JSON (one request, one line)")
    target.add_argument("--otlp", metavar="URL", help="send OTLP/HTTP protobuf to a collector "
                        "(http://host:4318 gets /v1/traces appended)")
    exp.add_argument("--header", action="append", default=[], metavar="NAME=VALUE",
                     help="HTTP header for --otlp, e.g. Authorization=... (repeatable)")
    exp.add_argument("--start-time", default="1000000000", metavar="WHEN",
                     help="where the sequence clock starts: unix seconds, an ISO 8601 time with "
                     "zone, or 'now' (default 1000000000 = 2001-09-09T01:46:40Z: deterministic)")
    exp.add_argument("--service-name", default="symtrace", help="resource service.name")
    exp.add_argument("--no-content", action="store_true",
                     help="leave out prompts, replies, tool arguments and results")
    exp.add_argument("--timeout", type=float, default=10.0, help="seconds for --otlp")
    exp.add_argument("--force", action="store_true", help="overwrite an existing --otel file")
    exp.set_defaults(func=cmd_export)


def start_ns(value: str) -> int:
    if value == "now":
        return time.time_ns()
    if value.isdigit():
        return int(value) * 1_000_000_000
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"--start-time: not unix seconds, ISO 8601 or 'now': {value!r}") from None
    if moment.tzinfo is None:
        raise ValueError(f"--start-time: give a time zone (e.g. {value}Z): {value!r}")
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000


def cmd_export(args: argparse.Namespace) -> int:
    from symtrace.bundle import load_bundle
    from symtrace.export.files import check_output, write_output

    out = Path(args.otel) if args.otel else None
    if out is not None:
        check_output(out, force=args.force)
    headers = dict(_header(item) for item in args.header)
    options = {"start_ns": start_ns(args.start_time), "service_name": args.service_name,
               "content": not args.no_content}
    bundle = load_bundle(args.bundle)
    from symtrace.export import otel  # after the bundle check: a bad bundle is exit 91 first

    request = otel.otlp_request(bundle, **options)
    count = sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans)
    if out is not None:
        write_output(out, otel.otlp_json(request), force=args.force)
        sys.stderr.write(f"symtrace: wrote {count} spans ({len(bundle.events)} events) "
                         f"as OTLP JSON to {out}\n")
    else:
        otel.send_otlp(request, args.otlp, headers=headers, timeout=args.timeout)
        sys.stderr.write(f"symtrace: sent {count} spans ({len(bundle.events)} events) to "
                         f"{otel.shown(otel.traces_url(args.otlp))}\n")
    return 0


def _header(item: str) -> tuple[str, str]:
    name, sep, value = item.partition("=")
    if not sep or not name:
        raise ValueError(f"--header needs NAME=VALUE, got {item!r}")
    return name, value
