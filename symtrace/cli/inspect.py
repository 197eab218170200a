"""`symtrace show`, `verify`, `diff` and `adapters`: looking at bundles and the installed
adapters without running anything."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from symtrace.cli import term
from symtrace.model.inert import inert

if TYPE_CHECKING:
    from symtrace.bundle.reader import Bundle


def cmd_show(args: argparse.Namespace) -> int:
    from rich.console import Console

    from symtrace.bundle import load_bundle
    from symtrace.bundle.inspect import show_json, show_table

    bundle = load_bundle(args.bundle)
    if args.graph:
        from symtrace.export.files import write_output
        from symtrace.viewer.graph_svg import render_svg

        # replaced whole or not at all; an unwritable place is exit 93, not a traceback
        write_output(Path(args.graph), render_svg(bundle).encode(), force=True)
        term.err(f"symtrace: wrote event graph picture {args.graph}")
    if args.json:
        sys.stdout.buffer.write(
            orjson.dumps(show_json(bundle), option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)
            + b"\n"
        )
    else:
        show_table(bundle, Console(width=args.width) if args.width else Console())
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from symtrace.bundle import verify_bundle

    bundle = verify_bundle(args.bundle)
    print(verify_text(bundle))
    for warning in bundle.warnings:
        print(f"warning: {inert(warning)}")
    for name in bundle.extra_files:
        print(f"warning: extra file {inert(name)} is not part of the format and not covered by "
              "the seal (not checked; symtrace never reads or runs it)")
    for item in unchecked(bundle):
        print(f"not checked: {item}")
    return 0


def verify_text(bundle: Bundle) -> str:
    """What `verify` says of a bundle whose every check held: one fact a line, each digest
    named as `show` and the viewer name it, printed in full (the root is what one pins)."""
    outcome = bundle.manifest.get("outcome") or {}
    state = "complete" if bundle.complete else f"INCOMPLETE ({outcome.get('status', 'unsealed')})"
    lines = [
        f"ok: {inert(str(bundle.path), keep_lines=False)}: every digest verified",
        f"  format v{bundle.manifest['format_version']}, {state}, {len(bundle.events)} events",
        "  root digest (the seal over the manifest and every file):",
        f"    {bundle.root_digest}" if bundle.sealed else "    none: UNSEALED",
        "  events digest (the recorded events):",
        f"    {bundle.digest}",
    ]
    return "\n".join(lines)


def unchecked(bundle: Bundle) -> list[str]:
    """What `verify` could not check: no digest vouches for an unsealed bundle's bytes."""
    if bundle.sealed:
        return []
    return ["the seal: the bundle has none (its recording did not finish), so changed bytes "
            "cannot be told from recorded ones; each event's hashes and each blob were checked "
            "against their content"]


def cmd_diff(args: argparse.Namespace) -> int:
    from symtrace.bundle import load_bundle
    from symtrace.bundle.inspect import diff_bundles, render_diff

    a, b = load_bundle(args.a), load_bundle(args.b)
    result = diff_bundles(a, b)
    if args.json:
        print(orjson.dumps(result.to_json(), option=orjson.OPT_SORT_KEYS).decode())
    else:
        print(inert(render_diff(result, a, b, term.width())))
    return 0 if result.identical else 1


def cmd_adapters(args: argparse.Namespace) -> int:
    from symtrace.frameworks.registry import load, registered

    rows = []
    for name in registered():
        adapter = load(name)
        state = "available" if adapter.is_available() else "framework not installed"
        rows.append((name, state, adapter.requires))
    # the requirement last: it is the long column, and may run past a narrow terminal
    width = max((len(name) for name, _, _ in rows), default=0) + 2
    for name, state, requires in rows:
        print(f"{name:{width}}{state:25}{requires}")
    return 0
