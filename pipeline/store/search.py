"""Deterministic lexical ranking of memories for a query (used by search and injection)."""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from .memory import Memory

_TOKEN = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an and are as at be by for from in is it of on or that the this to was we with".split())


def tokens(text: str) -> set[str]:
    return {t for t in _TOKEN.findall(text.lower()) if t not in _STOP}


# Token sets per parsed memory: a long-lived process (the MCP server) ranks the same Memory objects on
# every query. Keyed by object identity; the entry holds the object, so its id is not reused meanwhile.
_FIELDS: dict[int, tuple[Memory, str, Fields]] = {}
_FIELDS_MAX = 20_000
# (title, description, body, all three together)
Fields = tuple[frozenset[str], frozenset[str], frozenset[str], frozenset[str]]


def _fields(name: str, memory: Memory) -> Fields:
    """The token sets of one memory (Memory values are immutable)."""
    hit = _FIELDS.get(id(memory))
    if hit is not None and hit[0] is memory and hit[1] == name:
        return hit[2]
    title = frozenset(tokens(name.removesuffix(".md").replace("_", " ")) | tokens(memory.name))
    desc, body = frozenset(tokens(memory.description)), frozenset(tokens(memory.body))
    fields = (title, desc, body, title | desc | body)
    if len(_FIELDS) >= _FIELDS_MAX:
        _FIELDS.clear()
    _FIELDS[id(memory)] = (memory, name, fields)
    return fields


def score(query: set[str], name: str, memory: Memory) -> int:
    """Weighted overlap: a hit in the name counts most, then the description, then the body."""
    if not query:
        return 0
    title, desc, body, every = _fields(name, memory)
    if every.isdisjoint(query):
        return 0
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
