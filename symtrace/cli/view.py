"""`symtrace view B -o report.html [--diff B2] [--no-diagnosis]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from symtrace.cli.commands import summary


def add_parser(sub: Any) -> None:
    view = sub.add_parser(
        "view", help=summary("view"),
        description="No network, no CDN: open the file in any browser. See docs/viewer.md.",
    )
    view.add_argument("bundle", help="a bundle directory, or a chat/request log file to import "
                      "(the formats `symtrace diagnose` reads)")
    view.add_argument("-o", "--out", required=True, metavar="FILE.html", help="page to write")
    view.add_argument("--diff", metavar="BUNDLE2", help="also compare with another bundle")
    view.add_argument("--no-diagnosis", action="store_true", help="skip the C1–C4 overlay")
    view.add_argument("--attribution", metavar="DIR", help="add the result of `symtrace "
                      "attribute` on this bundle (its --out directory or attribution.json)")
    view.add_argument("--force", action="store_true", help="overwrite an existing file")
    view.set_defaults(func=cmd_view)


def cmd_view(args: argparse.Namespace) -> int:
    from symtrace.diagnosis.importers import load_source
    from symtrace.export.files import check_output, write_output
    from symtrace.viewer.page import render_page

    out = Path(args.out)
    check_output(out, force=args.force)
    bundle = load_source(args.bundle)
    other = load_source(args.diff) if args.diff else None
    attribution = None
    if args.attribution:
        from symtrace.viewer.attribution import load_attribution

        attribution = load_attribution(args.attribution, bundle)
    html = render_page(bundle, other=other, diagnosis=not args.no_diagnosis,
                       attribution=attribution)
    write_output(out, html.encode(), force=args.force)
    sys.stderr.write(f"symtrace: wrote {out} ({len(bundle.events)} events"
                     f"{', diff with ' + str(other.path) if other else ''})\n")
    return 0
