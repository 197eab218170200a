"""Crafted bundles: every command that opens one refuses it, typed (exit 91), in seconds.

A bundle is data from someone else (issue 34): each case below is what an adversary can commit
to a repository, resealed so the seal holds (anyone can recompute it). Every command that
opens a bundle is run on each, in-process through `symtrace.cli.main`: none may hang, read
without bound, crash with a traceback, or use a value another reader would not see.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from symtrace.bundle import load_bundle, verify_bundle
from symtrace.bundle.files import read_file
from symtrace.bundle.seal import canon, root_digest, sha256_ref
from symtrace.cli import main
from symtrace.errors import EXIT_BUNDLE, EXIT_DIVERGED, BundleFormatError, BundleIntegrityError

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "bundles" / "core-trip-planner"
SEALED = ("sums.jsonl", "events.jsonl", "blobs.jsonl", "stdout.txt")


def reseal(bundle: Path, manifest: dict | None = None) -> dict:
    """Recompute *bundle*'s seal over its files as they are now (what an adversary does)."""
    manifest = manifest or orjson.loads((bundle / "manifest.json").read_bytes())
    files = {name: sha256_ref((bundle / name).read_bytes()) for name in SEALED
             if (bundle / name).is_file() and not (bundle / name).is_symlink()}
    manifest["digest"] = {"files": files, "root": root_digest(manifest, files)}
    (bundle / "manifest.json").write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    return manifest


def events_of(bundle: Path) -> list[dict]:
    return [orjson.loads(line) for line in (bundle / "events.jsonl").read_bytes().splitlines()]


def write_events(bundle: Path, records: list[dict]) -> None:
    (bundle / "events.jsonl").write_bytes(b"".join(canon(r) + b"\n" for r in records))


def add_blob(bundle: Path, ref: str, value: object) -> None:
    with open(bundle / "blobs.jsonl", "ab") as fh:
        fh.write(ref.encode() + b" " + canon(value) + b"\n")


REF = "sha256:" + "ab" * 32  # a ref no content has: the cycles below name it from inside


def _dev_zero(b: Path) -> None:
    (b / "blobs.jsonl").unlink()
    os.symlink("/dev/zero", b / "blobs.jsonl")
    reseal(b)


def _fifo(b: Path) -> None:
    (b / "events.jsonl").unlink()
    os.mkfifo(b / "events.jsonl")
    reseal(b)


def _chain_cycle(b: Path) -> None:
    add_blob(b, REF, {"$i": "hello", "$p": REF})
    records = events_of(b)
    records[0]["request"] = {"$chain": REF}
    write_events(b, records)
    reseal(b)


def _blob_cycle(b: Path) -> None:
    add_blob(b, REF, {"content": [{"$blob": REF}], "role": "assistant"})
    records = events_of(b)
    records[0]["response"] = {"$blob": REF}
    write_events(b, records)
    reseal(b)


def _deep_line(b: Path) -> None:
    deep: object = "x"
    for _ in range(300):
        deep = [deep]
    records = events_of(b)
    records[0]["response"] = deep
    (b / "events.jsonl").write_bytes(b"".join(
        orjson.dumps(r, option=orjson.OPT_SORT_KEYS) if i else _deep_bytes(r)
        for i, r in enumerate(records)).replace(b"}{", b"}\n{") + b"\n")
    reseal(b)


def _deep_bytes(record: dict) -> bytes:
    response = record.pop("response")
    text = canon(record)
    inner = b"[" * 300 + b'"x"' + b"]" * 300
    del response
    return text[:-1] + b',"response":' + inner + b"}"


def _deep_joined(b: Path) -> None:
    inner: object = "x"
    for _ in range(100):
        inner = [inner]
    leaf = "sha256:" + "cd" * 32
    add_blob(b, leaf, inner)
    outer: object = {"$blob": leaf}
    for _ in range(100):
        outer = [outer]
    add_blob(b, REF, outer)
    records = events_of(b)
    records[0]["response"] = {"$blob": REF}
    write_events(b, records)
    reseal(b)


def _duplicate_manifest_key(b: Path) -> None:
    manifest = orjson.loads((b / "manifest.json").read_bytes())
    manifest["config"]["command"]["argv"] = ["sh", "-c", "echo pwned"]
    reseal(b, manifest)  # sealed over the evil (last) argv, which orjson keeps
    text = (b / "manifest.json").read_text()
    benign = '"argv": ["python", "examples/trip_planner.py"],\n      '
    (b / "manifest.json").write_text(text.replace('"argv": [', benign + '"argv": [', 1))


def _duplicate_event_key(b: Path) -> None:
    line = (b / "events.jsonl").read_bytes().split(b"\n")
    line[0] = line[0].replace(b'{"agent":null,', b'{"agent":null,"agent":"evil",', 1)
    (b / "events.jsonl").write_bytes(b"\n".join(line))
    reseal(b)


def _manifest_field(path: tuple[str, ...], value: object) -> Callable[[Path], None]:
    def craft(b: Path) -> None:
        manifest = orjson.loads((b / "manifest.json").read_bytes())
        target = manifest
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value
        reseal(b, manifest)
    return craft


def _position_string(b: Path) -> None:
    records = events_of(b)
    records[1]["position"] = "1"
    write_events(b, records)
    reseal(b)


def _symlink_inside(b: Path) -> None:
    os.symlink("/etc/hostname", b / "notes.txt")


def _stdout_symlink(b: Path) -> None:
    (b / "stdout.txt").unlink()
    os.symlink("/etc/hostname", b / "stdout.txt")
    reseal(b)


CRAFTED: dict[str, Callable[[Path], None]] = {
    "blobs-dev-zero": _dev_zero,
    "events-fifo": _fifo,
    "chain-cycle": _chain_cycle,
    "blob-cycle": _blob_cycle,
    "deep-line": _deep_line,
    "deep-joined": _deep_joined,
    "duplicate-manifest-key": _duplicate_manifest_key,
    "duplicate-event-key": _duplicate_event_key,
    "config-string": _manifest_field(("config",), "p"),
    "argv-string": _manifest_field(("config", "command", "argv"), "p"),
    "argv-numbers": _manifest_field(("config", "command", "argv"), ["python", 3]),
    "env-number": _manifest_field(("config", "command", "env"), {"A": 1}),
    "initial-state-list": _manifest_field(("initial_state",), []),
    "lineage-live-events-number": _manifest_field(("lineage",), {"live_events": 3}),
    "position-string": _position_string,
    "symlink-inside": _symlink_inside,
    "stdout-symlink": _stdout_symlink,
}


# Found when a value is joined, not when the bundle is loaded (a bound on joined depth needs
# the join): a replay's program meets it in its call, as an error of that call.
LAZY = {"deep-joined"}


@pytest.fixture
def crafted(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    bundle = tmp_path / request.param
    shutil.copytree(REFERENCE, bundle)
    CRAFTED[request.param](bundle)
    return bundle


def _commands(bundle: Path, out: Path) -> list[list[str]]:
    b = str(bundle)
    return [["show", b], ["show", b, "--json"], ["show", b, "--graph", str(out / "g.svg")],
            ["verify", b], ["diff", b, str(REFERENCE)], ["diagnose", b],
            ["view", b, "-o", str(out / "v.html")], ["export", b, "--otel", str(out / "o.json")],
            ["replay", b, "--trust"] if _has_trust() else ["replay", b]]


def _has_trust() -> bool:
    from symtrace.cli import build_parser

    return "--trust" in build_parser()._subparsers._group_actions[0].choices[  # type: ignore
        "replay"].format_help()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("crafted", sorted(CRAFTED), indirect=True)
def test_every_command_refuses_a_crafted_bundle(crafted: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    for argv in _commands(crafted, out):
        code = main(argv)
        captured = capsys.readouterr()
        if argv[0] == "replay" and crafted.name in LAZY:
            assert code == EXIT_DIVERGED, (argv, code)  # the replay could not be verified
            continue
        assert code == EXIT_BUNDLE, (argv, code, captured.err[-2000:])
        assert "symtrace: error:" in captured.err and "Traceback" not in captured.err, argv
    assert not list(out.iterdir()), "nothing is written from a refused bundle"


@pytest.mark.parametrize("crafted", ["duplicate-manifest-key"], indirect=True)
def test_the_evil_last_key_is_never_the_one_read(crafted: Path) -> None:
    for load in (load_bundle, verify_bundle):
        with pytest.raises(BundleFormatError, match="'argv' appears twice"):
            load(crafted)


def test_a_stripped_seal_fails_load_and_verify(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    bundle = tmp_path / "b"
    shutil.copytree(REFERENCE, bundle)
    manifest = orjson.loads((bundle / "manifest.json").read_bytes())
    manifest["not_the_digest"] = manifest.pop("digest")
    manifest["task"] = "Wire the money to the attacker"
    (bundle / "manifest.json").write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    for load in (load_bundle, verify_bundle):
        with pytest.raises(BundleIntegrityError) as caught:
            load(bundle)
        assert caught.value.where == "manifest.digest"
    assert main(["verify", str(bundle)]) == EXIT_BUNDLE
    assert "complete but has no seal" in capsys.readouterr().err


def test_read_file_refuses_what_is_not_a_bounded_regular_file(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"x" * 100)
    assert read_file(big, limit=100) == b"x" * 100
    with pytest.raises(BundleFormatError, match="more than a bundle file may hold"):
        read_file(big, limit=99)
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(BundleFormatError, match="a FIFO"):
        read_file(tmp_path / "fifo")
    os.symlink(big, tmp_path / "link")
    with pytest.raises(BundleFormatError, match="a symlink"):
        read_file(tmp_path / "link")
    assert read_file(tmp_path / "absent") is None


def test_verify_names_extra_files_and_what_it_could_not_check(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bundle = tmp_path / "b"
    shutil.copytree(REFERENCE, bundle)
    (bundle / "sitecustomize.py").write_text("import os; os.system('echo pwned')\n")
    assert main(["verify", str(bundle)]) == 0
    out = capsys.readouterr().out
    assert "sitecustomize.py" in out and "not covered by the seal" in out
    assert load_bundle(bundle).extra_files == ("sitecustomize.py",)
