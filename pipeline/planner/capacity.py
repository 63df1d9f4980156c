"""Capacity: never merge to make room; say how far over the index is and which memories to review."""

from __future__ import annotations

from ..store.index import capacity, render_index
from ..store.memory import Memory
from .text import newness
from .work import Work

OLDEST_SHOWN = 5


def post_state(work: Work) -> dict[str, Memory]:
    return {**work.fixed, **work.live}


def over(work: Work) -> tuple[int, int]:
    """(lines, bytes) the private index is over its limits by; (0, 0) when it fits."""
    cap = capacity(render_index(post_state(work), mirror=False), work.limits)
    return max(0, cap.lines - cap.max_lines), max(0, cap.bytes - cap.max_bytes)


def oldest(memories: dict[str, Memory], count: int = OLDEST_SHOWN) -> list[str]:
    return sorted(memories, key=lambda n: newness(memories[n], n))[:count]


def advice(lines: int, extra: int, names: list[str]) -> str:
    """The one sentence summary, ``status`` and the plan's notes use for a store that stays over capacity."""
    return (f"the index stays over capacity by {lines} lines / {extra} bytes and nothing more can be merged "
            f"safely (only duplicates and memories on one subject are merged, never by topic); the oldest "
            f"memories are {', '.join(names)}: review them with `memfold show NAME` and remove what is no "
            "longer true with `memfold forget NAME`, or raise limits.index_lines / limits.index_bytes")


def report(work: Work) -> None:
    """Over capacity after every safe merge: a note naming the oldest memories, and no merge by topic."""
    lines, extra = over(work)
    if lines or extra:
        work.notes.append(advice(lines, extra, oldest(post_state(work))))
