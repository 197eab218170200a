"""What `symtrace diff` and `view --diff` must say about a selective replay's child of a
concurrent run (issue 33), checked the same way for every framework's end-to-end test."""

from __future__ import annotations

from pathlib import Path

import symtrace
from symtrace.bundle.inspect import diff_bundles, render_diff
from symtrace.viewer.model import diff_model


def assert_diff_names_the_anchor(parent: Path, child: Path, anchor: str) -> None:
    """The first difference both views name is the anchor's request (the guidance), not a
    reordering of the concurrent work around it; the two bundles are not identical; a bundle
    against itself is."""
    a, b = symtrace.load_bundle(parent), symtrace.load_bundle(child)
    result = diff_bundles(a, b)
    assert not result.identical
    assert result.left is not None and result.left.id == anchor, (
        f"first difference at {result.left and result.left.id} ({result.field}), "
        f"not the anchor {anchor}")
    assert result.field == "request"
    text = render_diff(result, a, b, 100)
    assert f"A: {anchor}" in text and "/:" not in text
    page = diff_model(a, b)
    first = next(row for row in page["rows"] if row["first"])
    assert first["left"]["id"] == anchor and page["field"] == "request"
    assert diff_bundles(a, a).identical
