"""The documentation: a short README whose two commands are CI's, a site that builds strictly, runnable
examples that still run, a generated reference that lists what `--help` lists, and a page that renders."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from browser import chromium, devtools, evaluate, load, png_pixels, screenshot
from conftest import REPO

from pipeline.commands import codes, reference
from pipeline.commands.registry import root_command

DOCS = REPO / "docs"
# A fenced shell block right after this comment runs in CI, in a fresh home and project.
RUNNABLE = "<!-- runnable -->"
# Pages whose runnable examples CI runs; each must have at least one.
EXAMPLE_PAGES = ("getting-started.md", "hosts/claude-code.md", "hosts/pi.md", "hosts/codex.md", "hosts/mcp.md")
BINARY = chromium()
needs_chromium = pytest.mark.skipif(BINARY is None, reason="chromium is not installed (`.ci/run` installs it)")


def runnable_blocks(text: str) -> list[str]:
    """The shell blocks marked runnable, in page order."""
    return [m.group(1) for m in re.finditer(re.escape(RUNNABLE) + r"\s*\n```(?:sh|bash|console)\n(.*?)\n```",
                                             text, re.S)]


def readme_commands() -> list[str]:
    """The commands of the README's first shell block (its comment lines left out)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```sh\n(.*?)\n```", readme, re.S)
    assert block, "the README opens with a shell block"
    return [line for line in block.group(1).splitlines() if line.strip() and not line.startswith("#")]


def ci_lines() -> list[str]:
    text = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def nav_pages(nav: object) -> Iterator[str]:
    if isinstance(nav, str):
        yield nav
    elif isinstance(nav, list):
        for item in nav:
            yield from nav_pages(item)
    elif isinstance(nav, dict):
        for value in nav.values():
            yield from nav_pages(value)


def _mkdocs_config() -> dict[str, object]:
    loaded = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built with `mkdocs build --strict` as CI builds it."""
    target = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(target)],
                          cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    return target


def test_the_readme_is_at_most_300_lines() -> None:
    assert len((REPO / "README.md").read_text(encoding="utf-8").splitlines()) <= 300


def test_the_readmes_two_commands_are_the_ones_ci_runs() -> None:
    demo, suite = readme_commands()
    lines = ci_lines()
    # The first command runs in CI verbatim: a plain install on a fresh venv runs the demo.
    assert demo in lines
    assert demo.endswith("memfold demo")
    # The second: its install verbatim, then its test command, which CI splits into two marker sets that
    # together are the whole suite.
    *install, test = suite.split(" && ")
    assert " && ".join(install) in lines
    runs = [line for line in lines if line.startswith(test)]
    assert runs, f"{test!r} is not run by .ci/run"
    markers = {shlex.split(line[len(test):])[1] if line[len(test):].strip() else "" for line in runs}
    assert markers == {"not stress", "stress"} or markers == {""}, markers


def test_the_site_builds_strictly_with_every_reference_page(site: Path) -> None:
    for page in reference.GENERATED:
        html = (site / page).with_suffix(".html").read_text(encoding="utf-8")
        assert "generated from" in html.lower(), page
    assert (site / "getting-started.html").is_file()


def test_every_page_is_in_the_nav_and_every_topic_is_a_page() -> None:
    nav = set(nav_pages(_mkdocs_config()["nav"]))
    written = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert nav == written | set(reference.GENERATED)
    from pipeline.commands.guide import topics

    assert {t.page for t in topics().values()} == nav


def test_every_command_names_a_guide_page_that_exists() -> None:
    for command, page in reference.GUIDE_OF.items():
        assert (DOCS / f"{page}.md").is_file(), command


def _help(*args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "pipeline", *args, "--help"], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "COLUMNS": "250", "PYTHONPATH": str(REPO)}, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _boxes(text: str) -> dict[str, list[list[str]]]:
    """The cells of each box of a rich `--help` page, by the box's title."""
    boxes: dict[str, list[list[str]]] = {}
    title = None
    for line in text.splitlines():
        opened = re.match(r"^╭─ (.+?) ─", line)
        if opened:
            title = opened.group(1)
            boxes[title] = []
        elif line.startswith("│") and title:
            boxes[title].append([c for c in re.split(r"\s{2,}", line.strip("│ ")) if c])
    return boxes


def _options(text: str) -> tuple[set[str], set[str]]:
    """The option flags and argument names a `--help` page lists (the fast path prints plain help)."""
    if "╭─" not in text:
        return set(re.findall(r"^  (--[\w-]+)", text, re.M)), set()
    boxes = _boxes(text)
    flags = {c for row in boxes.get("Options", []) for c in row if re.fullmatch(r"--?[A-Za-z][\w-]*", c)}
    arguments = {row[1] if row[0] == "*" else row[0] for row in boxes.get("Arguments", []) if row}
    return flags - {"--help", "-h"}, {a for a in arguments if re.fullmatch(r"[a-z_]+", a)}


def _section(page: str, title: str) -> str:
    start = page.index(f"\n{title}\n")
    following = re.search(r"\n#{2,3} ", page[start + len(title) + 2:])
    return page[start:start + len(title) + 2 + (following.start() if following else len(page))]


DOCUMENTED = sorted(" ".join(words) for words in reference.command_names(root_command()))


@pytest.fixture(scope="module")
def commands_page() -> str:
    return reference.commands_page(root_command())


def test_the_generated_command_reference_lists_every_command_and_global_option_of_help(commands_page: str) -> None:
    root = _help()
    listed = {row[0] for title, rows in _boxes(root).items() if title != "Options" for row in rows}
    assert listed == {name for name in DOCUMENTED if " " not in name}
    flags, _ = _options(root)
    assert flags and all(f"`{flag}`" in _section(commands_page, "## Global options") for flag in flags)


@pytest.mark.parametrize("name", DOCUMENTED)
def test_the_generated_command_reference_lists_every_option_that_a_commands_help_lists(
        name: str, commands_page: str) -> None:
    text = _help(*name.split())
    for group_row in _boxes(text).get("Commands", []):
        assert f"{name} {group_row[0]}" in DOCUMENTED
    flags, arguments = _options(text)
    section = _section(commands_page, f"### memfold {name}")
    missing = [f for f in flags if f"`{f}`" not in section] + \
        [a for a in arguments if f"`{a.upper()}`" not in section]
    assert not missing, missing


@pytest.mark.parametrize("page", EXAMPLE_PAGES)
def test_the_pages_that_teach_commands_have_runnable_examples(page: str) -> None:
    assert runnable_blocks((DOCS / page).read_text(encoding="utf-8")), page


def _fresh(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A fresh project (a git repository) and an environment whose home and memfold home are new and empty."""
    project, home = tmp_path / "project", tmp_path / "user-home"
    project.mkdir()
    home.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "memfold").exists():  # an interpreter without the console script: a shim
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        shim = bin_dir / "memfold"
        shim.write_text(f'#!/bin/sh\nPYTHONPATH={shlex.quote(str(REPO))} exec {shlex.quote(sys.executable)} '
                        '-m pipeline "$@"\n')
        shim.chmod(0o755)
    drop = ("MEMFOLD_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME",
            "CLAUDE_CONFIG_DIR", "CODEX_HOME", "PI_CODING_AGENT_DIR")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(HOME=str(home), PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", GIT_AUTHOR_NAME="Doc Reader",
               GIT_AUTHOR_EMAIL="reader@example.com", GIT_COMMITTER_NAME="Doc Reader",
               GIT_COMMITTER_EMAIL="reader@example.com")
    return project, env


def _example_pages() -> list[str]:
    hosts = sorted(p.relative_to(DOCS).as_posix() for p in (DOCS / "hosts").glob("*.md"))
    return ["../README.md", "getting-started.md", *hosts]


def test_the_readmes_five_minutes_are_runnable() -> None:
    assert len(runnable_blocks((REPO / "README.md").read_text(encoding="utf-8"))) == 1


@pytest.mark.integration
@pytest.mark.parametrize("page", _example_pages())
def test_every_runnable_example_runs_in_a_fresh_home_and_project(page: str, tmp_path: Path) -> None:
    project, env = _fresh(tmp_path)
    for i, block in enumerate(runnable_blocks((DOCS / page).read_text(encoding="utf-8"))):
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=project, env=env, capture_output=True,
                              text=True, timeout=300, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, f"{page}, example {i + 1} exited {proc.returncode}:\n{block}\n" \
                                     f"--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}"


def test_every_error_code_the_troubleshooting_page_names_exists() -> None:
    known = codes.scan()
    text = (DOCS / "troubleshooting.md").read_text(encoding="utf-8")
    # Backquoted words shaped like a code, less file names and the config keys the page names.
    named = {c for c in re.findall(r"`([a-z]+\.[a-z0-9.-]+)`", text)
             if not re.search(r"\.(txt|json|jsonl|log|md)$", c) and not c.startswith(("lock.", "limits."))}
    unknown = [c for c in named if not codes.matches(c, known)]
    assert named and not unknown, unknown


@pytest.mark.integration
@needs_chromium
def test_a_screenshot_of_the_getting_started_page_shows_the_page(site: Path, tmp_path: Path) -> None:
    assert BINARY is not None
    url = (site / "getting-started.html").as_uri()
    png = tmp_path / "getting-started.png"
    screenshot(BINARY, tmp_path / "shot-profile", url, png)
    width, height, pixels = png_pixels(png.read_bytes())
    assert (width, height) == (1280, 800)
    assert len(pixels) > 20, "the screenshot is (nearly) blank"
    with devtools(BINARY, tmp_path / "profile") as session:
        events = load(session, url)
        heading = evaluate(session, "document.querySelector('article h1').innerText", events)
        words = evaluate(session, "document.querySelector('article').innerText.split(/\\s+/).length", events)
    remote = [e["params"]["request"]["url"] for e in events if e.get("method") == "Network.requestWillBeSent"
              and not str(e["params"]["request"]["url"]).startswith(("file://", "data:", "blob:"))]
    assert heading.startswith("Getting started") and words > 300
    assert remote == [], "the site fetches nothing from the network"
