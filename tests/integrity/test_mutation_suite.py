"""Every single-field mutation of every reference bundle is caught, at the right place.

The cases are generated (tests/integrity/_mutations.py): every manifest leaf, every field of
every event line, every blob's content and ref, every line of stdout.txt and sums.jsonl.
Each is checked twice: `load_bundle` (what replay, show and diagnose load with) and
`verify_bundle` (`symtrace verify`) must both raise BundleIntegrityError naming the place.

CI runs a sample that still covers every field kind of every bundle; the exhaustive run is
`make mutation-suite` (SYMTRACE_MUTATIONS=all).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from symtrace.bundle import load_bundle, verify_bundle
from symtrace.errors import EXIT_BUNDLE, BundleIntegrityError

from ._mutations import Mutation, generate, read, sample, write

ROOT = Path(__file__).resolve().parents[2]
BUNDLES = sorted(p.parent for p in (ROOT / "bundles").glob("**/manifest.json"))
EXHAUSTIVE = os.environ.get("SYMTRACE_MUTATIONS") == "all"
EVERY = 150  # the sampled run: each field kind once, plus ~1/150 of the other cases


def _all_cases() -> dict[Path, list[Mutation]]:
    every = [m for bundle in BUNDLES for m in generate(bundle)]
    chosen = every if EXHAUSTIVE else sample(every, EVERY)
    by_bundle: dict[Path, list[Mutation]] = {bundle: [] for bundle in BUNDLES}
    for mutation in chosen:
        by_bundle[mutation.bundle].append(mutation)
    return by_bundle


CASES = _all_cases()


def caught_at(path: Path, load: object) -> str | None:
    try:
        load(path)  # type: ignore[operator]
    except BundleIntegrityError as exc:
        return exc.where
    return None


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda p: str(p.relative_to(ROOT / "bundles")))
def test_every_mutation_is_caught_where_it_was_made(bundle, tmp_path):
    pristine = read(bundle)
    verify_bundle(bundle)  # the unmutated bundle verifies
    wrong: list[str] = []
    for mutation in CASES[bundle]:
        target = tmp_path / "m"
        write(mutation.apply(pristine), target)
        for name, load in (("load", load_bundle), ("verify", verify_bundle)):
            where = caught_at(target, load)
            if where != mutation.expected:
                wrong.append(
                    f"{mutation.kind}: {name} named {where!r}, expected {mutation.expected!r}"
                )
        write(pristine, target)
    assert not wrong, "\n".join(wrong[:40])


def test_generator_covers_every_field_kind():
    bundle = ROOT / "bundles" / "core-trip-planner"
    kinds = {m.kind for m in generate(bundle)}
    for event_type in ("agent_action", "tool_call", "tool_result", "final_result"):
        for field in ("id", "position", "type", "lane", "agent", "reason", "parents",
                      "request", "response", "request_hash", "response_hash", "meta",
                      "content_hash"):
            assert f"event.{event_type}.{field}" in kinds
    for group in ("task", "kind", "complete", "config", "initial_state", "outcome", "counts",
                  "events_digest", "replayable", "manifest.digest.root"):
        assert any(k == f"manifest.{group}" or k == group for k in kinds), group
    assert {"blob.content", "blob.index", "stdout.txt.line", "sums.jsonl.line"} <= kinds


@pytest.mark.parametrize("command", ["verify", "replay"])
def test_cli_names_the_place_and_exits_with_the_bundle_code(command, tmp_path):
    bundle = ROOT / "bundles" / "core-trip-planner"
    mutation = next(m for m in generate(bundle) if m.expected.endswith("].agent"))
    target = tmp_path / "b"
    write(mutation.apply(read(bundle)), target)
    result = subprocess.run(
        [sys.executable, "-m", "symtrace", command, str(target)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert result.returncode == EXIT_BUNDLE, result.stderr
    assert mutation.expected in result.stderr
    assert "Traceback" not in result.stderr
