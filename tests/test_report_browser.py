"""The audit report in a real browser: loads offline from file://, with no console error and no request."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from browser import chromium, devtools, evaluate, load, png_pixels, screenshot
from conftest import Env
from report_chain import PRIVATE, build_chain, receipts, report, store_sizes

pytestmark = pytest.mark.integration

BINARY = chromium()
needs_chromium = pytest.mark.skipif(BINARY is None, reason="chromium is not installed (`.ci/run` installs it)")


def _problems(events: list[dict[str, object]]) -> list[object]:
    """Requests for anything but the file itself, and every console error, exception or error log entry."""
    bad: list[object] = []
    for event in events:
        method, params = event.get("method"), event.get("params") or {}
        assert isinstance(params, dict)
        if method == "Network.requestWillBeSent" and not str(params["request"]["url"]).startswith("file://"):
            bad.append(params["request"]["url"])
        elif method == "Runtime.exceptionThrown" or (
                method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert", "warning")):
            bad.append(params)
        elif method == "Log.entryAdded" and params["entry"].get("level") in ("error", "warning"):
            bad.append(params["entry"])
    return bad


@needs_chromium
def test_the_report_loads_offline_and_shows_the_whole_chain(env: Env, tmp_path: Path) -> None:
    build_chain(env)
    path, _ = report(env)
    assert BINARY is not None
    with devtools(BINARY, tmp_path / "profile") as session:
        events = load(session, path.as_uri())
        entries = evaluate(session, "document.querySelectorAll('#timeline li.receipt').length", events)
        points = evaluate(session, "[...document.querySelectorAll('circle.point.store')].map(c => "
                          "[+c.dataset.seq, +c.dataset.memories])", events)
        mirror = evaluate(session, "[...document.querySelectorAll('circle.point.mirror')].map(c => "
                          "+c.dataset.mirror)", events)
        edits = evaluate(session, "[...document.querySelectorAll('#timeline li.gap.handedit')].map(li => "
                         "[+li.dataset.beforeSeq, li.innerText])", events)
        scripts = evaluate(session, "document.scripts.length", events)
        alerts = [e for e in events if e.get("method") == "Page.javascriptDialogOpening"]
    chain = receipts(env)
    sizes = store_sizes(env)
    assert _problems(events) == [] and alerts == [] and scripts == 0
    assert entries == len(chain) == len(list((env.project_home / "receipts").iterdir()))
    assert points == [[i + 1, s] for i, (s, _) in enumerate(sizes)]
    assert mirror == [m for _, m in sizes]
    consolidation = next(i + 1 for i, r in enumerate(chain) if r["command"] == "consolidate")
    assert len(edits) == 1 and edits[0][0] == consolidation
    assert "HAND EDIT" in edits[0][1] and "harness/project_ci.md changed" in edits[0][1]


@needs_chromium
def test_the_public_report_dom_holds_no_private_text(env: Env, tmp_path: Path) -> None:
    build_chain(env)
    path, _ = report(env, "--public", "--out", str(tmp_path / "public.html"))
    assert BINARY is not None
    with devtools(BINARY, tmp_path / "profile") as session:
        events = load(session, path.as_uri())
        text = evaluate(session, "document.documentElement.innerText + ' ' + "
                        "document.documentElement.outerHTML", events)
    assert _problems(events) == []
    raw = path.read_text()
    for name, (description, body) in PRIVATE.items():
        for value in (name, description, " ".join(body.split()[:2])):
            assert value not in text and value not in raw, value
    assert "project_ci.md" in text


@needs_chromium
def test_the_report_renders_non_empty_at_1280_by_800(env: Env, tmp_path: Path) -> None:
    build_chain(env)
    path, _ = report(env)
    png = tmp_path / "shot.png"
    assert BINARY is not None
    screenshot(BINARY, tmp_path / "profile", path.as_uri(), png)
    width, height, pixels = png_pixels(png.read_bytes())
    assert (width, height) == (1280, 800)
    assert len(pixels) > 20  # text, banner and chart colours, not one blank colour
    assert re.search(rb"IEND", png.read_bytes())
