"""Issue 40: AG2 1.x's own published examples (examples/published/ag2v1, from the README of
the installed ag2 1.2.1) through the corpus driver in this environment: recorded, replayed
strictly with no endpoint request, diverging on an edited prompt, and (one of them) replayed
selectively into a child bundle that replays strictly. `make published-examples` runs every
step of every program."""

from __future__ import annotations

import sys

import pytest

from tests.e2e.test_published_examples import _driver

pytest.importorskip("ag2", reason="needs ag2 (AG2 1.x, the next env)")


def test_the_ag2v1_corpus_holds_the_readme_examples():
    names = {p.name for p in _driver().Program.found()}
    assert {"ag2v1/code_review_follow_up", "ag2v1/weekday_tool"} <= names


@pytest.mark.slow
@pytest.mark.parametrize(("name", "selective"), [
    ("ag2v1/code_review_follow_up", True), ("ag2v1/weekday_tool", False)])
def test_published_ag2v1_example_records_replays_and_diverges(name, selective, tmp_path):
    driver = _driver()
    (program,) = [p for p in driver.Program.found() if p.name == name]
    results = driver.run(program, tmp_path, sys.executable, replays=1, selective=selective)
    failed = [f"{step}: {detail}" for step, ok, detail in results if not ok]
    assert not failed, failed
    steps = ["record", "strict replay 1", "no request on replay", "edited prompt diverges"]
    if selective:
        steps += ["selective replay", "child strict replay"]
    assert [step for step, _, _ in results] == steps
