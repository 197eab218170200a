"""What `symtrace diff` and `view --diff` must say about a selective replay's child of a
concurrent run (issue 33), checked the same way for every framework's end-to-end test."""

from __future__ import annotations

from pathlib import Path

import symtrace
from symtrace.bundle.inspect import diff_bundles, event_identities, render_diff
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
    assert_reorderings_listed(parent, child)


def reordered_before_the_first_difference(parent: Path, child: Path) -> set[str]:
    """The events (ids in the parent) equal on both sides and before the first difference
    whose order relative to an earlier one changed in the child, worked out here from the
    identities alone: each such event came, in the child, before an event that preceded it
    in the parent."""
    a, b = symtrace.load_bundle(parent), symtrace.load_bundle(child)
    result = diff_bundles(a, b)
    left, right = event_identities(list(a.events)), event_identities(list(b.events))
    out: set[str] = set()
    latest = -1
    for ident, ea in left.items():
        eb = right.get(ident)
        if eb is None or (result.index is not None and ea.position >= result.index):
            continue
        if eb.position < latest:
            out.add(ea.id)
        latest = max(latest, eb.position)
    return out


def assert_reorderings_listed(parent: Path, child: Path) -> set[str]:
    """Every reordering before the first difference is listed (`moved`, the text's "ran in
    another order" lines, the page's `moved`), none reported as the divergence. Returns the
    reordered ids, so a test whose run forces a reordering can say there was one."""
    a, b = symtrace.load_bundle(parent), symtrace.load_bundle(child)
    result = diff_bundles(a, b)
    expected = reordered_before_the_first_difference(parent, child)
    assert {x.id for x, _ in result.moved} == expected, (result.moved, expected)
    assert result.left is None or result.left.id not in expected
    text = render_diff(result, a, b, 100)
    assert ("ran in another order" in text) == bool(expected)
    page = diff_model(a, b)
    assert len(expected) > 20 or {row["left"] for row in page["moved"]} == expected
    return expected
