"""Near-duplicates: memories whose folded name, description or body equal another's."""

from __future__ import annotations

import re

from ..fsutil import sha256_bytes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from .memory import Memory
    from .statecache import StateCache

_TRAILING = re.compile(r"[\s.,;:!?]+$")


def fold(text: str) -> str:
    """Case, whitespace and trailing punctuation folded: the near-duplicate key."""
    return _TRAILING.sub("", " ".join(text.lower().split()))


KEY_KINDS = ("name", "description", "body")
_PREFIXES = ("n", "d", "b")  # a key's kind, in front of its digest in the state cache's table
Keys = tuple[frozenset[str], frozenset[str], frozenset[str]]


def _fold_keys(name: str, memory: Memory) -> Keys:
    """Digests of the folded name, description and body: equal digests, equal folded texts."""
    return (frozenset({_key(name.removesuffix(".md")), _key(memory.name)}), frozenset({_key(memory.description)}),
            frozenset({_key(memory.body)} - {_key("")}))


def _key(text: str) -> str:
    return sha256_bytes(fold(text).encode("utf-8"))[:32]


def near_duplicate(memories: Mapping[str, Memory], hashes: Mapping[str, str], cache: StateCache | None, name: str,
                   memory: Memory) -> str | None:
    """The memory ``memory`` would repeat (same folded name, description or body) among a store's
    ``memories`` (whose files have ``hashes``), named with what matched: of several, the first by file
    name, with the first kind of key that matched it. ``cache`` keeps the folded keys between processes."""
    mine = _fold_keys(name, memory)
    if cache is None:
        return _first_of(memories, name, mine)
    # The table holds the keys of the contents it was told about: fold the rest now (the files changed
    # since, in C: the store's hash map against the table's), and keep them for later processes.
    for other, digest in hashes.items() - cache.folded.items():
        if other in memories and other != name:
            _enter(cache, other, digest, _fold_keys(other, memories[other]))
    found: dict[str, str] = {}
    for what, prefix, keys in zip(KEY_KINDS, _PREFIXES, mine, strict=True):
        for key in keys:
            for other, digest in cache.holders(prefix + key):
                # A holder counts while its file still holds the content the key was folded from.
                if other != name and other in memories and hashes.get(other) == digest:
                    found.setdefault(other, what)
    if not found:
        return None
    first = min(found)
    return f"{first} (same {found[first]})"


def _enter(cache: StateCache, name: str, digest: str, keys: Keys) -> None:
    cache.put_fold(name, digest, [prefix + key for prefix, part in zip(_PREFIXES, keys, strict=True) for key in part])


def _first_of(memories: Mapping[str, Memory], name: str, mine: Keys) -> str | None:
    """``near_duplicate`` without a state cache: every memory folded."""
    for other, existing in sorted(memories.items()):
        if other == name:
            continue
        for what, ours, theirs in zip(KEY_KINDS, mine, _fold_keys(other, existing), strict=True):
            if not ours.isdisjoint(theirs):
                return f"{other} (same {what})"
    return None
