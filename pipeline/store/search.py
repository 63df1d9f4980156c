"""Deterministic lexical ranking of memories for a query (used by search and injection)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from .memory import Memory

_TOKEN = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an and are as at be by for from in is it of on or that the this to was we with".split())


def tokens(text: str) -> set[str]:
    return {t for t in _TOKEN.findall(text.lower()) if t not in _STOP}


def score(query: set[str], name: str, memory: Memory) -> int:
    """Weighted overlap: a hit in the name counts most, then the description, then the body."""
    if not query:
        return 0
    title = tokens(name.removesuffix(".md").replace("_", " ")) | tokens(memory.name)
    desc = tokens(memory.description)
    body = tokens(memory.body)
    return sum(3 * (t in title) + 2 * (t in desc) + (t in body) for t in query)


def rank(query: str, memories: Mapping[str, Memory]) -> list[tuple[str, int]]:
    """Names with a positive score, best first; newest ``modified`` first on ties, then by name."""
    wanted = tokens(query)
    scored = [(name, score(wanted, name, m), m.modified or m.created or "") for name, m in memories.items()]
    hits = [s for s in scored if s[1] > 0]
    hits.sort(key=lambda s: s[0])
    hits.sort(key=lambda s: s[2], reverse=True)
    hits.sort(key=lambda s: s[1], reverse=True)
    return [(name, points) for name, points, _ in hits]
