"""Issue 38: one name per digest everywhere. `show`, `verify`, the HTML view and the
divergence report name the root digest (the seal `verify` checks) and the events digest the
same way, and `show` prints a prefix of the root `verify` prints in full."""

from __future__ import annotations

import re
from pathlib import Path

from symtrace.bundle import load_bundle
from symtrace.cli import main
from symtrace.viewer.page import render_page

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "bundles" / "ag2-tool_error"
DIGEST = r"sha256:[0-9a-f]+"


def test_show_verify_and_the_page_name_both_digests_alike(capsys):
    bundle = load_bundle(BUNDLE)
    root, events = bundle.root_digest, bundle.digest
    assert root and root != events

    assert main(["show", str(BUNDLE)]) == 0
    shown = capsys.readouterr().out
    shown_root = re.search(rf"root digest ({DIGEST})", shown).group(1)
    shown_events = re.search(rf"events digest ({DIGEST})", shown).group(1)
    assert root.startswith(shown_root) and events.startswith(shown_events)
    assert len(shown_root) > len("sha256:") + 8

    assert main(["verify", str(BUNDLE)]) == 0
    verified = capsys.readouterr().out
    assert re.search(rf"root digest [^\n]*\n\s+{root}\n", verified)
    assert re.search(rf"events digest [^\n]*\n\s+{events}\n", verified)
    assert max(len(line) for line in verified.splitlines()) <= 80  # no 170-character line

    page = render_page(bundle, diagnosis=False)
    assert f"root digest <code>{root}</code>" in page
    assert f"events digest <code>{events}</code>" in page
    assert "digest" not in page.replace("root digest", "").replace("events digest", "").split(
        "<header>")[1].split("</header>")[0]  # no third, unnamed digest in the header
