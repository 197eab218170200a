"""End to end through the CLI: zero-code wrapping, and the reference bundles in the tree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from symtrace import load_bundle
from symtrace.errors import EXIT_DIVERGED

from ._support import REPO, assert_same_console

pytestmark = [pytest.mark.framework("ag2"), pytest.mark.slow]

REFERENCE = sorted(p for p in (REPO / "bundles").glob("ag2-*") if p.is_dir())
DIVERGENT = sorted(p for p in (REPO / "bundles" / "divergent").glob("ag2-*") if p.is_dir())


def symtrace(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "symtrace", *args], cwd=REPO,
                          capture_output=True, text=True, env=dict(os.environ), timeout=120)


class TestZeroCodeWrapping:
    @pytest.mark.parametrize("adapter", [None, "ag2"])
    def test_record_and_replay_an_unmodified_program(
        self, adapter: str | None, endpoint, tmp_path: Path
    ) -> None:
        """`symtrace record -o B -- python app.py` picks the adapter up by itself (or when
        named); the replay is served entirely from the bundle."""
        stub = endpoint("two_agent")
        named = ["--adapter", adapter] if adapter else []
        recorded = symtrace("record", "-o", str(tmp_path / "b"), *named, "--",
                            "python", "examples/ag2/two_agent.py")
        assert recorded.returncode == 0, recorded.stderr
        bundle = load_bundle(tmp_path / "b")
        assert "ag2" in bundle.config["adapters"]
        if adapter:
            assert bundle.config["adapters"] == ["ag2"]
        assert {e.agent for e in bundle.events if e.is_llm} == {"assistant"}
        served = stub.served

        replayed = symtrace("replay", str(tmp_path / "b"))
        assert replayed.returncode == 0, replayed.stderr
        assert "FINAL: Lisbon looks mild" in recorded.stdout
        assert replayed.stdout == recorded.stdout
        assert stub.served == served


class TestReferenceBundles:
    def test_the_tree_has_every_scenario(self) -> None:
        names = {p.name for p in REFERENCE}
        assert names == {"ag2-two_agent", "ag2-two_agent_async", "ag2-groupchat_auto",
                         "ag2-groupchat_random", "ag2-tool_error", "ag2-cache",
                         "ag2-nested_chats", "ag2-chat_sequence", "ag2-chats_async",
                         "ag2-groupchat_async"}
        assert DIVERGENT

    @pytest.mark.parametrize("bundle", REFERENCE, ids=lambda p: p.name)
    def test_replays_strictly_with_no_endpoint(self, bundle: Path, no_endpoint) -> None:
        """Nothing listens at the recorded base URL: a live call could only fail."""
        replayed = symtrace("replay", str(bundle.relative_to(REPO)), "--cwd", ".", "--trust")
        assert replayed.returncode == 0, replayed.stderr
        assert "FINAL: " in replayed.stdout
        scenario = bundle.name.removeprefix("ag2-")
        assert_same_console(scenario, (bundle / "stdout.txt").read_text(), replayed.stdout)

    @pytest.mark.parametrize("case", DIVERGENT, ids=lambda p: p.name)
    def test_divergent_case_fails_exactly_where_stated(self, case: Path, tmp_path: Path
                                                       ) -> None:
        expected = json.loads((case / "expected_divergence.json").read_text())
        replayed = symtrace("replay", str(case.relative_to(REPO)), "--cwd", ".", "--trust",
                            "--quiet", "--report-json", str(tmp_path / "report.json"))
        assert replayed.returncode == EXIT_DIVERGED, replayed.stderr
        report = json.loads((tmp_path / "report.json").read_text())["report"]
        assert report["kind"] == expected["kind"]
        assert report["event_id"] == expected["event_id"]
        assert report["lane"] == expected["lane"]
        assert report["differences"][0]["path"] == expected["path"]
