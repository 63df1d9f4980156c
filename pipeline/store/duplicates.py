"""Near-duplicates: memories whose folded name, description or body equal another's."""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from ..fsutil import sha256_bytes

if TYPE_CHECKING:
    from ..state import PreState
    from .memory import Memory

_TRAILING = re.compile(r"[\s.,;:!?]+$")


def fold(text: str) -> str:
    """Case, whitespace and trailing punctuation folded: the near-duplicate key."""
    return _TRAILING.sub("", " ".join(text.lower().split()))


KEY_KINDS = ("name", "description", "body")
# Folded name, description and body digests (sets, or the lists the state cache holds: anything that is
# not a digest string there simply matches nothing).
Keys = tuple[Collection[Any], Collection[Any], Collection[Any]]
# Folded keys per stored memory: the MCP server checks every add against the same Memory objects.
# Keyed by object identity; the entry holds the object, so its id is not reused meanwhile.
_KEYS: dict[int, tuple[Memory, str, Keys]] = {}
_KEYS_MAX = 20_000


def _fold_keys(name: str, memory: Memory) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """Digests of the folded name, description and body: equal digests, equal folded texts."""
    return (frozenset({_key(name.removesuffix(".md")), _key(memory.name)}), frozenset({_key(memory.description)}),
            frozenset({_key(memory.body)} - {_key("")}))


def _key(text: str) -> str:
    return sha256_bytes(fold(text).encode("utf-8"))[:32]


def _keys(name: str, memory: Memory, pre: PreState) -> Keys:
    hit = _KEYS.get(id(memory))
    if hit is not None and hit[0] is memory and hit[1] == name:
        return hit[2]
    # The state cache keeps them by content hash, so a later process need not fold every body again.
    digest = pre.harness.hashes.get(name)
    slot = f"{name} {digest}"
    stored = pre.cache.get("fold", slot) if pre.cache is not None and digest else None
    if type(stored) is list and len(stored) == 3 and all(type(part) is list for part in stored):
        keys: Keys = (stored[0], stored[1], stored[2])
    else:
        keys = _fold_keys(name, memory)
        if pre.cache is not None and digest:
            pre.cache.put("fold", slot, [sorted(part) for part in keys])
    if len(_KEYS) >= _KEYS_MAX:
        _KEYS.clear()
    _KEYS[id(memory)] = (memory, name, keys)
    return keys


def near_duplicate(pre: PreState, name: str, memory: Memory) -> str | None:
    """The memory ``memory`` would repeat (same folded name, description or body), named with what matched."""
    mine = _fold_keys(name, memory)
    for other, existing in sorted(pre.memories.items()):
        if other == name:
            continue
        theirs = _keys(other, existing, pre)
        for what, ours, their in zip(KEY_KINDS, mine, theirs, strict=True):
            if not ours.isdisjoint(their):
                return f"{other} (same {what})"
    return None
