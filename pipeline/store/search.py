"""Token overlap between texts: the consolidation scope and the built-in planner compare memories with it."""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .memory import Memory

_TOKEN = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an and are as at be by for from in is it of on or that the this to was we with".split())


# For ASCII text: letters lowered, digits kept, everything else a space; splitting then yields exactly
# the [a-z0-9]+ runs of text.lower(), in C (ranking tokenises every memory on every prompt with a query;
# the planner tokenises with it too).
ASCII_WORDS = bytes(ord(chr(b).lower()) if chr(b).isascii() and chr(b).isalnum() else 32 for b in range(256))


def tokens(text: str) -> set[str]:
    return set(_runs(text)).difference(_STOP)


def _token_set(text: str) -> frozenset[str]:
    """Every run, stop words included: only query tokens (never stop words) are looked up in it."""
    return frozenset(_runs(text))


def _runs(text: str) -> list[str]:
    if text.isascii():
        return text.encode("ascii").translate(ASCII_WORDS).decode("ascii").split()
    return _TOKEN.findall(text.lower())  # lower() may turn a non-ASCII letter into ASCII ones


# Token sets per parsed memory: a long-lived process (the MCP server) ranks the same Memory objects on
# every query. Keyed by object identity; the entry holds the object, so its id is not reused meanwhile.
_FIELDS: dict[int, tuple[Memory, str, Fields]] = {}
_FIELDS_MAX = 20_000
# (title, description, body)
Fields = tuple[frozenset[str], frozenset[str], frozenset[str]]


def _fields(name: str, memory: Memory) -> Fields:
    """The token sets of one memory (Memory values are immutable)."""
    hit = _FIELDS.get(id(memory))
    if hit is not None and hit[0] is memory and hit[1] == name:
        return hit[2]
    title = _token_set(name.removesuffix(".md").replace("_", " ")).union(_token_set(memory.name))
    fields = (title, _token_set(memory.description), _token_set(memory.body))
    if len(_FIELDS) >= _FIELDS_MAX:
        _FIELDS.clear()
    _FIELDS[id(memory)] = (memory, name, fields)
    return fields


def score(query: set[str], name: str, memory: Memory) -> int:
    """Weighted overlap: a hit in the name counts most, then the description, then the body."""
    if not query:
        return 0
    title, desc, body = _fields(name, memory)
    if query.isdisjoint(title) and query.isdisjoint(desc) and query.isdisjoint(body):
        return 0
    return sum(3 * (t in title) + 2 * (t in desc) + (t in body) for t in query)
