"""Where a new bundle may go (symtrace/bundle/output.py): never over a user's data."""

from __future__ import annotations

from pathlib import Path

import pytest

from symtrace.bundle.output import check_target, is_bundle_dir
from symtrace.errors import EXIT_WRITE, BundleExistsError

MANIFEST = '{"format_version": 2, "kind": "recording"}'


def _bundle(path: Path, *extra: str) -> Path:
    path.mkdir()
    (path / "manifest.json").write_text(MANIFEST)
    for name in ("events.jsonl", "blobs.jsonl", "sums.jsonl", *extra):
        (path / name).write_text("")
    return path


@pytest.mark.parametrize("force", [False, True])
def test_a_new_path_or_an_empty_directory_is_fine(tmp_path, force):
    check_target(tmp_path / "new", force)
    (tmp_path / "empty").mkdir()
    check_target(tmp_path / "empty", force)


def test_a_bundle_is_replaced_only_with_force(tmp_path):
    bundle = _bundle(tmp_path / "b", ".manifest.json.tmp-12-34")  # a killed writer's temp
    assert is_bundle_dir(bundle)
    with pytest.raises(BundleExistsError, match="--force"):
        check_target(bundle, False)
    check_target(bundle, True)


@pytest.mark.parametrize("make", [
    lambda p: p.write_text("mine"),  # a file
    lambda p: (p.mkdir(), (p / "main.py").write_text("mine")),  # a project
    lambda p: _bundle(p, "notes.txt"),  # a bundle with the user's notes in it
    lambda p: (_bundle(p), (p / "sub").mkdir()),
    lambda p: p.symlink_to(p.parent),  # a link to a directory
    lambda p: (p.mkdir(), (p / "manifest.json").write_text("[1]")),  # not a bundle's manifest
])
def test_anything_else_is_refused_even_with_force(tmp_path, make):
    target = tmp_path / "out"
    make(target)
    for force in (False, True):
        with pytest.raises(BundleExistsError) as info:
            check_target(target, force)
        assert info.value.exit_code == EXIT_WRITE


def test_a_symlink_among_a_bundles_files_is_not_a_bundle(tmp_path):
    bundle = _bundle(tmp_path / "b")
    (bundle / "stdout.txt").symlink_to(tmp_path / "elsewhere")
    assert not is_bundle_dir(bundle)
