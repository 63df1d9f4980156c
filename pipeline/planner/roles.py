"""Roles of the named things a memory states: two memories are one fact only when each thing keeps its role.

"timeout from chat-cron to catalog-web" and "timeout from chat-web to catalog-cron" share every word,
and so do "from chat-cron to catalog-web" and "from catalog-web to chat-cron"; neither pair is one
fact. A statement is read left to right, and each named thing gets one of three roles:

- first: before the statement's first predicate, or after ``from``, ``source`` or ``key`` (the
  subject, the source, the key);
- target: after ``to``, ``into`` or ``target`` (where something goes);
- value: after a predicate, an arrow, ``=`` or ``:``, or after ``value`` (what may change).

First and target say which fact it is: two memories that, in one of these roles, each name a thing
the other does not are two facts, never merged and never one superseding the other (refusing loses
nothing: both memories stay). The value is what a newer memory may change (``m5.large`` to
``m6i.large``), so a value of its own on each side only keeps two memories from being duplicates.

Verbs are many and the list of predicates is short, so order speaks too: two things that one memory
always names in one order and the other always in the reverse order ("the x-tenant-id header carries
x-request-id", "the x-request-id header carries x-tenant-id") stand in swapped roles.

A named thing is a word a reader would not paraphrase: a compound (``chat-cron``, ``cache.ttl``,
``LOG_LEVEL``), a word of letters then digits (``web01``), a path, a URL or a backticked span. In a
statement with both a source and a target (``from X to Y``), the plain word after each marker is a
named thing too: "from staging to production" and "from production to staging" are two facts.
"""

from __future__ import annotations

from functools import lru_cache

from ..store.memory import Memory
from .lazyre import Lazy
from .text import STOPWORDS, body_facts

FIRST, TARGET, VALUE = 0, 1, 2
_SOURCE = frozenset({"from", "source", "src", "origin", "key"})
_TARGET = frozenset({"to", "into", "onto", "toward", "towards", "target", "dst", "destination"})
# The predicate words of ``text._PREDICATE``: what stands after one is the object.
_PREDICATES = frozenset(
    """is are was were use uses used require requires required need needs run runs listen listens live lives
    point points default defaults has have should must moved goes go takes take expire expires serve serves
    bind binds means equals store stores keep keeps send sends reaches return returns sits call calls deploy
    deploys build builds pin pins target targets cost costs hold holds ship ships maps map forwards routes""".split()
)
_ARROWS = frozenset({"->", "=>", "→", "=", ":"})
_ARTICLES = frozenset({"the", "a", "an", "our", "my", "your", "its", "their", "this", "that"})
_TOKEN = Lazy(r"`[^`\n]+`|[a-z][a-z0-9+.-]*://\S+|->|=>|→|[=:]|\w(?:[\w./-]*\w)?")
# A word of letters then digits names a thing (web01, app-2, db3x); digits first is a value (30s, 10mb).
_NAMED = Lazy(r"^[a-z][a-z-]*[a-z]-?\d+[a-z0-9]*$|^[a-z]\d+[a-z]+[a-z0-9]*$")
_PARTS = Lazy(r"[-_.]+")
_LETTER = Lazy(r"[^\W\d_]")

Roles = tuple[frozenset[str], frozenset[str], frozenset[str]]
_NONE: Roles = (frozenset(), frozenset(), frozenset())
# Pairs of things named in one statement, in the order named; past this many things a statement is a list.
MAX_ORDERED = 8


def _named(token: str) -> bool:
    if token.startswith("`") or "://" in token:
        return True
    if "/" in token:
        return _LETTER().search(token) is not None
    if _NAMED().match(token):
        return True
    parts = [p for p in _PARTS().split(token) if p]
    # Parts with letters, two of them words: "chat-cron", "cache.ttl", "x-tenant-id", not "e.g" nor "3.11".
    return (len(parts) >= 2 and all(_LETTER().search(p) is not None for p in parts)
            and sum(len(p) >= 2 for p in parts) >= 2)


def _entity(token: str) -> str:
    return token.strip("`").strip().rstrip(".,;:").replace("_", "-")


def statement_roles(line: str) -> Roles:
    """The named things of one statement in each role (first, target, value)."""
    return _read(line)[0]


@lru_cache(maxsize=1 << 16)
def _read(line: str) -> tuple[Roles, tuple[str, ...]]:
    """The statement's things in each role, and all its things in the order it names them."""
    tokens = _TOKEN().findall(line.casefold())
    words = set(tokens)
    # A plain word is a thing only in a statement that names both ends ("from X to Y").
    both_ends = not words.isdisjoint(_SOURCE) and not words.isdisjoint(_TARGET)
    # A word of letters alone is never named otherwise: most lines of prose stop here.
    if not both_ends and all(map(str.isalpha, words)):
        return _NONE, ()
    sides: tuple[set[str], set[str], set[str]] = (set(), set(), set())
    order: list[str] = []
    side, after_marker = FIRST, False
    for token in tokens:
        if token in _SOURCE:
            side, after_marker = FIRST, True
            continue
        if token in _TARGET:
            side, after_marker = TARGET, True
            continue
        if token == "value" or token in _ARROWS or token in _PREDICATES:
            side, after_marker = VALUE, False
            continue
        if token in _ARTICLES:
            continue
        thing = None
        if not token.isalpha() and _named(token):
            thing = _entity(token)
        elif after_marker and both_ends and token not in STOPWORDS and _LETTER().search(token):
            thing = token
        after_marker = False
        if thing is not None:
            sides[side].add(thing)
            if thing not in order:
                order.append(thing)
    return (frozenset(sides[FIRST]), frozenset(sides[TARGET]), frozenset(sides[VALUE])), tuple(order)


@lru_cache(maxsize=1 << 16)
def _roles(description: str, body: str) -> tuple[Roles, frozenset[tuple[str, str]]]:
    found: tuple[set[str], set[str], set[str]] = (set(), set(), set())
    ordered: set[tuple[str, str]] = set()
    for raw in [description, *(r for r, _ in body_facts(body))]:
        roles, order = _read(raw)
        for into, things in zip(found, roles, strict=True):
            into |= things
        if 1 < len(order) <= MAX_ORDERED:
            ordered.update((x, y) for i, x in enumerate(order) for y in order[i + 1 :])
    if not any(found):
        return _NONE, frozenset()
    return (frozenset(found[0]), frozenset(found[1]), frozenset(found[2])), frozenset(ordered)


def memory_roles(memory: Memory) -> Roles:
    return _roles(memory.description, memory.body)[0]


def _apart(mine: frozenset[str], theirs: frozenset[str]) -> bool:
    return bool(mine - theirs) and bool(theirs - mine)


def roles_disagree(a: Memory, b: Memory) -> bool:
    """Two facts: as first or as target, each memory names a thing the other does not name there,
    or two things one memory names only in one order the other names only in the reverse order."""
    (ra, pa), (rb, pb) = _roles(a.description, a.body), _roles(b.description, b.body)
    if ra is _NONE or rb is _NONE:
        return False
    if _apart(ra[FIRST], rb[FIRST]) or _apart(ra[TARGET], rb[TARGET]):
        return True
    return any((y, x) in pb and (x, y) not in pb and (y, x) not in pa for x, y in pa)


def values_apart(a: Memory, b: Memory) -> bool:
    """Each memory names a value the other does not: not one note written twice (maybe a new value)."""
    ra, rb = memory_roles(a), memory_roles(b)
    return ra is not _NONE and rb is not _NONE and _apart(ra[VALUE], rb[VALUE])


def clear_caches() -> None:
    _roles.cache_clear()
    _read.cache_clear()
