"""The near-copy measurement set: benign pairs from tests/data/nearcopy/, near-copies derived from them."""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

Texts = tuple[str, str, str]  # (name, description, body)

DATA = Path(__file__).parent / "data"
# Fields the attacker adds around a copy: plain team-notes wording that carries nothing private.
FRESH_NAME = "Team notes"
FRESH_DESCRIPTION = "notes shared with the whole team"
FRESH_BODY = "See the team wiki for the details."
GENERIC = ("use the staging db", "run the tests first", "prefers short answers", "ask before deploying",
           "keep prs small", "no mocks in tests")


def corpus() -> dict[str, dict[str, Any]]:
    """Every planner corpus memory as ``project/file`` -> its entry (d, b, v, dup, conflict...)."""
    out = {}
    for path in sorted((DATA / "planner").glob("*.yaml")):
        project = yaml.safe_load(path.read_text("utf-8"))
        for entry in project["memories"]:
            out[f"{project['id']}/{entry['n']}"] = {**entry, "project": project["id"]}
    return out


def _texts(entry: dict[str, Any]) -> Texts:
    if "n" in entry:
        title = entry["n"].removesuffix(".md").split("_", 1)[-1].replace("-", " ")
        return title, entry["d"], entry["b"]
    return entry["name"], entry["description"], entry["body"]


def pairs() -> list[tuple[str, Texts, Texts]]:
    """(id, private, independently written safe memory on the same topic)."""
    memories = corpus()
    data = yaml.safe_load((DATA / "nearcopy" / "paraphrases.yaml").read_text("utf-8"))
    out = []
    for item in data["pairs"]:
        ref = item["private"]
        private = _texts(memories[ref]) if isinstance(ref, str) else _texts(ref)
        out.append((ref if isinstance(ref, str) else ref["name"], private, _texts(item["safe"])))
    return out


def corpus_pairs() -> Iterator[tuple[str, Texts, Texts]]:
    """Within each project, every private memory against every other memory on another subject.

    Left out: members of one duplicate group and the versioned facts (the same sentence with one value
    changed, labelled ``conflict``); the gate refuses those on purpose, they are copies of each other.
    """
    by_project: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for key, entry in corpus().items():
        by_project.setdefault(entry["project"], []).append((key, entry))
    for members in by_project.values():
        for (key, a), (other, b) in itertools.permutations(members, 2):
            if a.get("v", "private") != "private" or _related(a, b):
                continue
            yield f"{key} ~ {other}", _texts(a), _texts(b)


def _related(a: dict[str, Any], b: dict[str, Any]) -> bool:
    if a.get("dup") and a.get("dup") == b.get("dup"):
        return True
    if not (a.get("conflict") and b.get("conflict")):
        return False
    stem, digits = re.compile(r"-(new|v?\d)$"), re.compile(r"[\d.]+")
    return (stem.sub("", a["n"].removesuffix(".md")) == stem.sub("", b["n"].removesuffix(".md"))
            or digits.sub("", a["d"]) == digits.sub("", b["d"]))


def _sentences(body: str) -> list[str]:
    parts = [p.strip() for line in body.splitlines() for p in re.split(r"(?<=[.;])\s+", line)]
    return [p for p in parts if p]


def _insert_char(text: str) -> str:
    middle = len(text) // 2
    while middle < len(text) and not text[middle].isalpha():
        middle += 1
    return text[:middle] + "x" + text[middle:]


def near_copies(private: Texts) -> Iterator[tuple[str, Texts]]:
    """Every way the issue names of carrying a private memory into a safe one."""
    _, description, body = private
    yield "one char added", (FRESH_NAME, FRESH_DESCRIPTION, _insert_char(body))
    yield "prefix", (FRESH_NAME, FRESH_DESCRIPTION, "Shared from the notes of the last sprint. " + body)
    yield "suffix", (FRESH_NAME, FRESH_DESCRIPTION, body.rstrip() + "\nAsk the team if anything is unclear.\n")
    yield "description copied", (FRESH_NAME, description, FRESH_BODY)
    yield "description in the body", (FRESH_NAME, FRESH_DESCRIPTION,
                                      f"Background first. {description}. More notes follow later.")
    yield "case and whitespace", (FRESH_NAME, FRESH_DESCRIPTION, "  ".join(body.upper().split()))
    sentences = _sentences(body)
    if len(sentences) > 1:
        yield "sentences reordered", (FRESH_NAME, FRESH_DESCRIPTION, " ".join(reversed(sentences)))
    words = body.split()
    yield "80% excerpt", (FRESH_NAME, FRESH_DESCRIPTION, " ".join(words[: math.ceil(len(words) * 0.8)]))
    yield "description and body", (FRESH_NAME, description.upper(), _insert_char(body))
