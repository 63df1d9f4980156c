"""Pages of the documentation as topics: names from paths, titles and summaries from the text."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from pipeline.commands import pages

REPO = Path(__file__).resolve().parent.parent


def test_a_page_is_named_by_its_path_and_a_section_index_by_its_folder() -> None:
    assert pages.topic_of("hosts/claude-code.md") == "hosts/claude-code"
    assert pages.topic_of("hosts/index.md") == "hosts"
    assert pages.topic_of("index.md") == pages.HOME_TOPIC


def test_the_summary_is_the_first_sentence_after_the_title_without_comments_or_links() -> None:
    text = ("<!-- runnable -->\n# Title here\n\n```sh\nx\n```\nFirst [sentence](a.md) goes\non. Second one.\n\n"
            "Next paragraph.\n")
    assert pages.title_and_summary(text) == ("Title here", "First sentence goes on.")


def test_every_shipped_page_has_a_title_and_a_summary() -> None:
    for topic, path in pages.files().items():
        title, summary = pages.title_and_summary(path.read_text(encoding="utf-8"))
        assert title and summary, topic


def test_an_installation_without_its_pages_still_runs_and_lists_the_generated_ones(tmp_path: Path) -> None:
    code = tmp_path / "code"
    for name in ("pipeline", "schemas", "procedures"):  # no docs/: a packager that left the pages out
        shutil.copytree(REPO / name, code / name, ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(code), "MEMFOLD_HOME": str(tmp_path / "home")}

    def memfold(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pipeline", *args], cwd=code, env=env, capture_output=True,
                              text=True, timeout=120, check=False)

    listed = memfold("help", "--json")
    assert listed.returncode == 0, listed.stderr
    topics = {t["topic"] for t in json.loads(listed.stdout)["topics"]}
    assert topics and all(t.startswith("reference/") for t in topics), topics
    assert "getting-started" not in topics
    shown = memfold("init", "--help")
    assert shown.returncode == 0 and "Guide: memfold help" in shown.stdout, shown.stderr
