"""Duplicate groups: exact (normalised facts) and near (token Jaccard, found through MinHash LSH)."""

from __future__ import annotations

try:
    from _blake2 import blake2b  # the C module itself: hashlib also loads OpenSSL (~4 ms of every start)
except ImportError:  # pragma: no cover - an interpreter built without it
    from hashlib import blake2b
import itertools
from collections import Counter, defaultdict, deque
from collections.abc import Iterable, Iterator
from functools import lru_cache
from itertools import repeat

from ..store.memory import Memory
from .roles import roles_disagree, values_apart
from .text import (
    STOPWORDS,
    VALUE_MARK,
    body_facts,
    distinct_subjects,
    fact_key,
    fact_keys,
    known_keys,
    masked,
    memory_tokens,
    newness,
    subject_tokens,
    tokens,
    value_lines,
)

# Calibrated on tests/data/planner: paraphrases of one note score >= 0.5 on the whole
# text or >= 0.6 on descriptions; unrelated notes of one topic stay below 0.35.
NEAR_THRESHOLD = 0.5
DESCRIPTION_THRESHOLD = 0.6
CONTAINMENT_THRESHOLD = 0.9
MIN_TOKENS = 3
BINS = 32
ROWS = 2
# A bucket this full is boilerplate, not similarity: chain its members instead of pairing all.
MAX_BUCKET = 48
_MASK = (1 << 61) - 1
_EMPTY = _MASK + 1  # above every value: the mark of a bin no token fell into
_BAND_STARTS, _DESC_STARTS = range(0, BINS, ROWS), range(0, BINS, 2 * ROWS)
_BAND, _DESC = ("band",) * len(_BAND_STARTS), ("desc",) * len(_DESC_STARTS)
# Tokens in more than this share of memories (and at least COMMON_MIN) say nothing about similarity.
COMMON_SHARE = 0.02
COMMON_MIN = 50


@lru_cache(maxsize=1 << 20)
def _slot(token: str) -> tuple[int, int]:
    """The token's bin and its value there, both from one 64-bit hash."""
    h = int.from_bytes(blake2b(token.encode(), digest_size=8).digest(), "big")
    return h % BINS, (h // BINS) & _MASK


@lru_cache(maxsize=1 << 16)
def signature(items: frozenset[str]) -> tuple[int, ...]:
    """One-permutation MinHash with rotation densification: one hash per token, BINS minima.

    Kept per token set: the candidates' index and the duplicate grouping's sign the same sets.
    """
    mins = [_EMPTY] * BINS
    for b, v in map(_slot, items):
        if v < mins[b]:
            mins[b] = v
    if _EMPTY not in mins:
        return tuple(mins)
    out = list(mins)
    # An empty bin borrows the next filled bin to its right (circularly), shifted by the distance;
    # right of the last filled bin, the next one is the first filled bin of the next turn.
    nxt = next((j for j in range(BINS) if mins[j] != _EMPTY), None)
    if nxt is None:
        return tuple(out)
    nxt += BINS
    for j in range(BINS - 1, -1, -1):
        if mins[j] != _EMPTY:
            nxt = j
        else:
            out[j] = (mins[nxt % BINS] + (nxt - j) * 0x9E3779B97F4A7C15) & _MASK
    return tuple(out)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def similar(name_a: str, a: Memory, name_b: str, b: Memory) -> bool:
    """Same type and close enough in wording to be one note written twice."""
    if a.type != b.type or distinct_subjects(a, b) or not mergeable(a, b):
        return False
    # The same words with things in other roles ("from a to b", "from b to a"), or other values.
    if roles_disagree(a, b) or values_apart(a, b):
        return False
    ta, tb = memory_tokens(name_a, a), memory_tokens(name_b, b)
    # Each names a subject (a word in its file name and description) the other never mentions:
    # "billing retries three times" and "catalog retries three times" are two facts, not one.
    # A word in a memory's name, description and body is its subject; the other lacking it says "other thing".
    sub_a, sub_b = subject_tokens(name_a, a) - tb, subject_tokens(name_b, b) - ta
    if (sub_a and sub_b) or sub_a & tokens(a.body) or sub_b & tokens(b.body):
        return False
    if len(ta) < MIN_TOKENS or len(tb) < MIN_TOKENS:
        return fact_keys(a) == fact_keys(b)
    if jaccard(ta, tb) >= NEAR_THRESHOLD:
        return True
    da, db = tokens(a.description), tokens(b.description)
    if len(da) >= MIN_TOKENS and len(db) >= MIN_TOKENS and jaccard(da, db) >= DESCRIPTION_THRESHOLD:
        return True
    small, large = (ta, tb) if len(ta) <= len(tb) else (tb, ta)
    return len(small) >= 2 * MIN_TOKENS and len(small & large) / len(small) >= CONTAINMENT_THRESHOLD


def mergeable(a: Memory, b: Memory) -> bool:
    """One visibility, or a private note that only repeats facts a safe one already shows.

    Merging across visibilities would either publish the private facts or hide the safe ones
    in the private store (the team's mirror loses them); neither is a side effect to allow.
    """
    if a.visibility == b.visibility:
        return True
    private, safe = (a, b) if b.is_safe else (b, a)
    return known_keys(private) <= known_keys(safe)


def conflicting(a: Memory, b: Memory) -> bool:
    """The two state one thing with different values: never duplicates, a supersession or a conflict."""
    va, vb = value_lines(a), value_lines(b)
    if len(va) > len(vb):
        va, vb = vb, va
    if any(key in vb and va[key] != vb[key] and not (va[key] & vb[key]) for key in va):
        return True
    return bool(va) and bool(vb) and bool(outdated_lines(a, b))


# Two value lines state the same thing when their words apart from the values mostly agree...
SAME_STATEMENT = 0.5
# ... or when one's words (two at least) nearly all appear in the other: "API port is 8080" and
# "API port is 9090 since the proxy change".
CONTAINED = 0.75


def _statements(memory: Memory) -> tuple[tuple[str, frozenset[str], tuple[str, ...]], ...]:
    """(raw, words apart from values, values) of the description and every body line that has values."""
    return _statements_of(memory.description, memory.body)


@lru_cache(maxsize=1 << 16)
def _statements_of(description: str, body: str) -> tuple[tuple[str, frozenset[str], tuple[str, ...]], ...]:
    out = []
    for raw in [description, *(r for r, _ in body_facts(body) or ((description, ""),))]:
        key, values = masked(raw)
        if values:
            out.append((raw, frozenset(key.split()) - STOPWORDS - {VALUE_MARK}, values))
    return tuple(out)


def _restates(words: frozenset[str], values: tuple[str, ...], newer: _Newer) -> bool:
    """Some newer statement says the same thing as (words, values), with other values.

    Both tests need a shared word, so only the newer statements sharing one are measured.
    """
    statements, postings = newer
    seen: set[int] = set()
    for word in words:
        seen.update(postings.get(word, ()))
    if not seen:
        return False
    value_set = set(values)
    for i in seen:
        other, new_values = statements[i]
        if value_set == new_values:
            continue
        if same_statement(words, other):
            return True
    return False


def same_statement(words: frozenset[str], other: frozenset[str]) -> bool:
    """Two value statements' words (values apart) say the same thing: they mostly agree, or one's
    nearly all appear in the other. One shared word is no subject: "deploy cache 9090" and
    "deploy 8080" are two facts, though half their words agree; equal word sets are one ("deploy
    deploy 9090" says what "deploy 9090" says)."""
    shared, union, smaller = len(words & other), len(words | other), min(len(words), len(other))
    return bool(union) and ((shared / union >= SAME_STATEMENT and (shared >= 2 or shared == union))
                            or (smaller >= 2 and shared / smaller >= CONTAINED))


# A memory's value statements as (words, value set), with which statements use each word.
_Newer = tuple[tuple[tuple[frozenset[str], frozenset[str]], ...], dict[str, tuple[int, ...]]]


@lru_cache(maxsize=1 << 16)
def _newer(description: str, body: str) -> _Newer:
    statements = tuple((words, frozenset(values)) for _, words, values in _statements_of(description, body))
    postings: dict[str, list[int]] = defaultdict(list)
    for i, (words, _) in enumerate(statements):
        for word in words:
            postings[word].append(i)
    return statements, {w: tuple(ids) for w, ids in postings.items()}


def outdated_lines(older: Memory, newer: Memory) -> frozenset[str]:
    """Keys of the older memory's lines (description included) that the newer states with a new value."""
    return _outdated(older.description, older.body, newer.description, newer.body)


@lru_cache(maxsize=1 << 16)
def _outdated(description: str, body: str, newer_description: str, newer_body: str) -> frozenset[str]:
    newer = _newer(newer_description, newer_body)
    if not newer[0]:
        return frozenset()
    return frozenset(fact_key(raw) for raw, words, values in _statements_of(description, body)
                     if _restates(words, values, newer))


# Bucket keys of each memory as one index's common tokens see them, kept across the indexes of one
# plan: the candidates' index and each pass of ``groups`` see the same memories again.
_KEYS: dict[frozenset[str], dict[tuple[str, str, str, str], tuple[tuple[object, ...], ...]]] = {}


def clear_caches() -> None:
    _KEYS.clear()
    for cached in (_statements_of, _newer, _outdated, signature):
        cached.cache_clear()


class Index:
    """LSH buckets over memories; tokens most memories share are left out of the signatures."""

    __slots__ = ("common", "buckets", "_keys")

    def __init__(self, common: frozenset[str]) -> None:
        self.common = common
        self.buckets: dict[tuple[object, ...], list[str]] = defaultdict(list)
        self._keys = _KEYS.setdefault(common, {})

    def keys(self, name: str, memory: Memory) -> tuple[tuple[object, ...], ...]:
        """One bucket for the exact fact set, one per band of the text and description signatures."""
        ident = (name, memory.type, memory.description, memory.body)
        known = self._keys.get(ident)
        if known is None:
            known = self._keys[ident] = self._computed(name, memory)
        return known

    def _computed(self, name: str, memory: Memory) -> tuple[tuple[object, ...], ...]:
        keys: list[tuple[object, ...]] = [("exact", memory.type, tuple(sorted(fact_keys(memory))))]
        rare = memory_tokens(name, memory) - self.common
        if rare:
            sig = signature(rare)
            # ("band", type, band, sig[band : band + ROWS]) for each band, the tuples made by zip in C.
            bands = zip(*(sig[i::ROWS] for i in range(ROWS)), strict=True)
            keys.extend(zip(_BAND, repeat(memory.type, len(_BAND)), _BAND_STARTS, bands, strict=True))
        words = tokens(memory.description)
        if len(words) >= MIN_TOKENS:
            # A description of everyday words only (each common in the store) still meets its copies.
            keys.append(("words", memory.type, tuple(sorted(words))))
        desc = words - self.common
        if len(desc) >= MIN_TOKENS:
            dsig = signature(desc)
            dbands = zip(*(dsig[i :: 2 * ROWS] for i in range(2 * ROWS)), strict=True)
            keys.extend(zip(_DESC, repeat(memory.type, len(_DESC)), _DESC_STARTS, dbands, strict=True))
        return tuple(keys)

    def add(self, name: str, memory: Memory) -> None:
        # Each bucket's list gets the name, without a Python step per key.
        deque(map(list.append, map(self.buckets.__getitem__, self.keys(name, memory)), repeat(name)), maxlen=0)

    def nearest(self, name: str, memory: Memory, memories: dict[str, Memory]) -> str | None:
        """The newest indexed memory that ``memory`` duplicates without conflicting, if any."""
        seen: set[str] = set()
        for key in self.keys(name, memory):
            seen.update(self.buckets.get(key, ())[:MAX_BUCKET])
        matches = [n for n in sorted(seen) if n in memories and similar(name, memory, n, memories[n])
                   and not conflicting(memory, memories[n])]
        return max(matches, key=lambda n: newness(memories[n], n)) if matches else None


def build_index(names: Iterable[str], memories: dict[str, Memory]) -> Index:
    ordered = list(names)
    df: Counter[str] = Counter()
    for name in ordered:
        df.update(memory_tokens(name, memories[name]))
    cut = max(COMMON_MIN, int(len(ordered) * COMMON_SHARE))
    index = Index(frozenset(t for t, n in df.items() if n > cut))
    for name in ordered:
        index.add(name, memories[name])
    return index


def _pairs_in(buckets: Iterable[list[str]]) -> Iterator[tuple[str, str]]:
    for members in buckets:
        if len(members) < 2:
            continue
        if len(members) > MAX_BUCKET:
            yield from itertools.pairwise(members)
            continue
        for i, first in enumerate(members):
            for second in members[i + 1 :]:
                yield first, second


def _dirty_pairs(index: Index, dirty: list[str], memories: dict[str, Memory]) -> Iterator[tuple[str, str]]:
    """Pairs of a changed memory with anything sharing a bucket (stale entries are skipped later)."""
    for name in dirty:
        index.add(name, memories[name])
    for name in dirty:
        for key in index.keys(name, memories[name]):
            for other in index.buckets[key][:MAX_BUCKET]:
                if other != name:
                    yield name, other


def groups(names: Iterable[str], memories: dict[str, Memory], index: Index | None = None,
           dirty: set[str] | None = None) -> tuple[list[list[str]], Index]:
    """Duplicate groups (each sorted newest first), connected through verified similar pairs.

    Given the index of an earlier pass and the names changed since, only pairs with a changed
    member are checked: the others were checked then. Returns the index for the next pass.
    """
    ordered = sorted(names)
    parent = {n: n for n in ordered}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    if index is None or dirty is None:
        index = build_index(ordered, memories)
        # Components do not depend on the order pairs are checked in; dicts keep insertion order anyway.
        pairs = _pairs_in(index.buckets.values())
    else:
        pairs = _dirty_pairs(index, sorted(n for n in dirty if n in parent), memories)
    checked: set[tuple[str, str]] = set()
    for a, b in pairs:
        if a not in parent or b not in parent:
            continue  # removed since the index was built
        pair = (a, b) if a < b else (b, a)
        if pair in checked or find(a) == find(b):
            continue
        checked.add(pair)
        ma, mb = memories[a], memories[b]
        if similar(a, ma, b, mb) and not conflicting(ma, mb):
            ra, rb = find(a), find(b)
            parent[max(ra, rb)] = min(ra, rb)
    out: dict[str, list[str]] = defaultdict(list)
    for name in ordered:
        out[find(name)].append(name)
    result = [sorted(g, key=lambda n: newness(memories[n], n), reverse=True) for g in out.values() if len(g) > 1]
    return sorted(result, key=lambda g: g[0]), index
