"""The report in a real browser: headless Chromium runs the page's script, we read the DOM it
built and look at the pixels of a screenshot. Needs the Debian package `chromium` on PATH."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from symtrace.bundle import Bundle
from symtrace.viewer.model import page_model
from symtrace.viewer.page import render_page
from symtrace.viewer.timeline import COLORS

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not on PATH (CI: apt-get install -y chromium)"
)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1280,900"]


def chromium(*args: str) -> subprocess.CompletedProcess[bytes]:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True, timeout=90, check=False,
        )


@pytest.fixture(scope="module")
def page(big_bundle: Bundle, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("page") / "report.html"
    path.write_text(render_page(big_bundle))
    return path


def xss_result(bundle: Bundle) -> str:
    return next(e.id for e in bundle.events
                if isinstance(e.response, dict) and "onerror" in str(e.response.get("value")))


def dump(page: Path, fragment: str) -> str:
    done = chromium("--dump-dom", f"{page.as_uri()}#{fragment}")
    dom = done.stdout.decode()
    assert done.returncode == 0 and "<body" in dom, done.stderr.decode()[-2000:]
    return dom


def test_script_renders_the_list_and_details_and_runs_no_injected_code(
    page: Path, big_bundle: Bundle
) -> None:
    target = xss_result(big_bundle)
    lane = big_bundle.event(target).lane
    dom = dump(page, f"lane={lane}&ev={target}")
    rows = re.findall(r'<li class="ev-row t-\w+[^"]*" data-id="([^"]+)"', dom)
    in_lane = [e for e in big_bundle.events if e.lane == lane]
    assert len(in_lane) > 50 and len(rows) == 50  # one page of the filtered, paginated list
    assert {big_bundle.event(r).lane for r in rows} == {lane}
    assert f"{len(in_lane)} of {len(big_bundle.events)} events" in dom
    assert f'data-rendered="{len(rows)}"' in dom
    assert re.search(rf'<li class="ev-row t-tool_result selected" data-id="{target}"', dom)
    assert f"<h3>{target}</h3>" in dom  # the detail panel was built for the selection
    assert "&lt;img src=x onerror=" in dom  # shown as text …
    assert "<img src=" not in dom  # … never as an element
    assert "<title>symtrace · big</title>" in dom  # the injected script did not run
    assert len(re.findall(r'<rect class="ev ', dom)) == len(big_bundle.events)
    nodes = page_model(big_bundle)["diagnosis"]["nodes"]
    flagged = [r for r in rows if r in nodes and nodes[r]["confirmed"]]
    assert dom.count('class="badge symptom"') == len(flagged)


def test_search_and_type_filter_run_in_the_page(page: Path, big_bundle: Bundle) -> None:
    dom = dump(page, "type=tool_result&q=ATLANTIS")
    rows = re.findall(r'<li class="ev-row t-(\w+)[^"]*" data-id="([^"]+)"', dom)
    failed = [e.id for e in big_bundle.events if e.type.value == "tool_result"
              and "atlantis" in str(e.response).lower()]
    assert [r[1] for r in rows] == failed and len(failed) == 1
    assert f"1 of {len(big_bundle.events)} events" in dom
    assert '<span class="badge failed">failed</span>' in dom


def test_screenshot_shows_the_swimlanes(page: Path, tmp_path: Path) -> None:
    image_module = pytest.importorskip("PIL.Image", reason="Pillow reads the screenshot")
    shot = tmp_path / "out.png"
    done = chromium(f"--screenshot={shot}", page.as_uri())
    assert done.returncode == 0 and shot.exists(), done.stderr.decode()[-2000:]
    with image_module.open(shot) as image:
        rgb = image.convert("RGB")
        assert rgb.size == (1280, 900)
        pixels = list(rgb.getdata())
    white = sum(1 for p in pixels if p == (255, 255, 255))
    assert white < 0.95 * len(pixels)
    assert len(set(pixels)) > 30
    for kind in ("agent_action", "tool_call", "tool_result"):
        color = tuple(int(COLORS[kind][i : i + 2], 16) for i in (1, 3, 5))
        assert sum(1 for p in pixels if p == color) > 40, f"no {kind} boxes on screen"
