"""Issue 40: a fast subset of the published-examples corpus (`make published-examples` runs
all of it with every step). One program per defect class the corpus found, each recorded,
replayed strictly once, and replayed with an edited prompt (which must diverge):

* crewai/latest_ai_development: a verbose crew (printed crew and task ids, the first-run
  tracing panel), YAML roles ending in a newline, a tool that prints;
* ag2/nested_chat_reflection: a tool inside a nested chat that prints;
* agentchat/agents_web_search: a tool returning dicts whose keys are not in sorted order.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DRIVER = ROOT / "examples" / "published" / "run_corpus.py"
FAST = {"crewai/latest_ai_development": "crewai", "ag2/nested_chat_reflection": "autogen",
        "agentchat/agents_web_search": "autogen_agentchat"}


def _driver():
    spec = importlib.util.spec_from_file_location("run_corpus", DRIVER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["run_corpus"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_every_framework_has_at_least_four_published_examples():
    names = [p.name for p in _driver().Program.found()]
    for framework in ("ag2", "crewai", "agentchat"):
        assert len([n for n in names if n.startswith(f"{framework}/")]) >= 4, names
    assert set(FAST) <= set(names)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FAST))
def test_published_example_records_replays_and_diverges_on_an_edited_prompt(name, tmp_path):
    pytest.importorskip(FAST[name], reason=f"needs {FAST[name]}")
    driver = _driver()
    (program,) = [p for p in driver.Program.found() if p.name == name]
    results = driver.run(program, tmp_path, replays=1, selective=False)
    failed = [f"{step}: {detail}" for step, ok, detail in results if not ok]
    assert not failed, failed
    assert [step for step, _, _ in results] == [
        "record", "strict replay 1", "no request on replay", "edited prompt diverges"]
