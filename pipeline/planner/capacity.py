"""Capacity: merge the oldest memories of one type and topic until the index fits its limits."""

from __future__ import annotations

import heapq
from collections import defaultdict

from ..store.index import capacity, index_line, render_index
from ..store.memory import Memory
from .text import STOPWORDS, name_stem, newness, tokens
from .work import Work

_GENERIC = STOPWORDS | {"note", "notes", "memory", "misc", "general", "info", "prefer", "avoid", "keep", "check",
                        "add", "set", "get", "new", "old", "tip", "rule", "rules", "how", "why"}


def topic(name: str, memory: Memory) -> str:
    """A topic label: the first telling word of the file name, else of the description."""
    for source in (name_stem(name), memory.description):
        for word in source.replace("_", "-").replace("-", " ").lower().split():
            word = "".join(ch for ch in word if ch.isalnum())
            if len(word) > 2 and word not in _GENERIC and not word.isdigit() and tokens(word):
                return word
    return "general"


def cluster_key(name: str, memory: Memory) -> str:
    return f"{memory.type}/{topic(name, memory)}"


def post_state(work: Work) -> dict[str, Memory]:
    return {**work.fixed, **work.live}


def over(work: Work) -> tuple[int, int]:
    """(lines, bytes) the private index is over its limits by; (0, 0) when it fits."""
    cap = capacity(render_index(post_state(work), mirror=False), work.limits)
    return max(0, cap.lines - cap.max_lines), max(0, cap.bytes - cap.max_bytes)


def _line_bytes(name: str, memory: Memory) -> int:
    return len(index_line(name, memory, private_marker=True).encode("utf-8")) + 1


def fit(work: Work) -> bool:
    """Merge pairs oldest first, within a cluster, until the index fits; True when anything merged."""
    lines, extra = over(work)
    if not lines and not extra:
        return False
    clusters: dict[str, list[str]] = defaultdict(list)
    for name in work.live:
        clusters[cluster_key(name, work.live[name])].append(name)
    heap: list[tuple[tuple[str, str, str], str]] = []
    for key, members in clusters.items():
        members.sort(key=lambda n: newness(work.live[n], n))
        if len(members) > 1:
            heap.append((newness(work.live[members[1]], members[1]), key))
    heapq.heapify(heap)
    changed = False
    while (lines > 0 or extra > 0) and heap:
        _, key = heapq.heappop(heap)
        members = clusters[key]
        oldest, target = members[0], members[1]
        before = _line_bytes(oldest, work.live[oldest]) + _line_bytes(target, work.live[target])
        # The newer of the two is the target, so the newest memory of a cluster is never the one removed.
        if work.absorb(target, [oldest], "SUBSUMED", f"index over capacity; merged with the newer {target} "
                       f"of topic {key}"):
            changed = True
            lines -= 1
            extra -= before - _line_bytes(target, work.live[target])
        members.pop(0)
        if len(members) > 1:
            heapq.heappush(heap, (newness(work.live[members[1]], members[1]), key))
    if lines > 0 or extra > 0:
        work.notes.append(f"the index stays over capacity by {max(lines, 0)} lines / {max(extra, 0)} bytes: "
                          "no more same-topic memories can be merged without passing the size bound")
    return changed
