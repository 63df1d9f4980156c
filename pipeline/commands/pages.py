"""The pages of the documentation as topics: the Markdown files under docs/, named by their path.

`memfold help` and the documentation site read the same files: ``docs/hosts/claude-code.md`` is the
topic ``hosts/claude-code`` and the site's page ``hosts/claude-code.html``. A section's ``index.md`` is
the section's own topic (``hosts``), and the site's home page is ``overview``.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..resources import data_dir

HOME_TOPIC = "overview"
_COMMENT = re.compile(r"<!--.*?-->", re.S)


def docs_dir() -> Path:
    return data_dir("docs")


def topic_of(relative: str) -> str:
    """The topic of a page by its path under docs/ (``hosts/index.md`` is ``hosts``)."""
    stem = relative.removesuffix(".md")
    if stem == "index":
        return HOME_TOPIC
    return stem.removesuffix("/index")


def files() -> dict[str, Path]:
    """Every page written by hand, by topic; none in an installation that left its pages out (the
    generated reference pages and every command still work there)."""
    try:
        root = docs_dir()
    except FileNotFoundError:
        return {}
    return {topic_of(p.relative_to(root).as_posix()): p for p in sorted(root.rglob("*.md"))}


def strip_comments(text: str) -> str:
    """The page without its HTML comments (the markers of runnable examples)."""
    return _COMMENT.sub("", text)


def title_and_summary(text: str) -> tuple[str, str]:
    """The first heading, and the first sentence of the first paragraph after it."""
    title, paragraph, lines = "", [], strip_comments(text).splitlines()
    for i, line in enumerate(lines):
        if line.startswith("# "):
            title = line[2:].strip()
            fenced = False
            for rest in lines[i + 1:]:
                fenced ^= rest.startswith("```")
                if rest.strip() and not fenced and not rest.startswith(("#", "```", "|", "!!!", "<", "-")):
                    paragraph.append(rest.strip())
                elif paragraph:
                    break
            break
    summary = " ".join(paragraph)
    end = re.search(r"(?<=\.)\s", summary)
    summary = summary[:end.start()] if end else summary
    summary = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", summary)
    return title, summary
