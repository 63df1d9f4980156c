"""Retrieval quality on the labelled set: recall@5 and MRR for search and for per-prompt relevance."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..store.memory import Memory

DEFAULT_SET = Path(__file__).resolve().parents[2] / "tests" / "retrieval"
NON_ENGLISH = ("de", "ru", "zh", "ja")
K = 5
# Prompt relevance is measured on the query inside a prompt's usual words, which match memories by
# chance; the frames rotate, so no one frame's words decide the figure.
PROMPT_FRAMES = (
    "Before you change anything here, look at this: {query}. What did we decide about it last time?",
    "{query} - can you fix this properly this time and explain why?",
    "Quick one while I am on the feature branch: {query}",
    "I keep running into {query} again, what is our approach in this repo?",
)

Ranker = Callable[[str], Sequence[str]]


def load_set(directory: Path = DEFAULT_SET) -> tuple[dict[str, Memory], list[dict[str, Any]]]:
    """The memories (by file name) and the queries, each with the files that should come first."""
    rows = json.loads((directory / "memories.json").read_text(encoding="utf-8"))
    memories = {r["file"]: Memory(r["name"], r["description"], type=r["file"].split("_", 1)[0], body=r["body"])
                for r in rows}
    queries = json.loads((directory / "queries.json").read_text(encoding="utf-8"))
    return memories, queries


def score(ranker: Ranker, queries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """recall@5 (any expected file in the first five), MRR, and the non-English exact-word misses."""
    hits = 0
    reciprocal = 0.0
    missed: list[str] = []
    by_kind: dict[str, list[int]] = {}
    for item in queries:
        ranked = list(ranker(item["query"]))
        expected = set(item["expect"])
        first = next((i for i, name in enumerate(ranked) if name in expected), None)
        found = first is not None and first < K
        hits += found
        reciprocal += 0.0 if first is None else 1.0 / (first + 1)
        kind = by_kind.setdefault(item["kind"], [0, 0])
        kind[0] += found
        kind[1] += 1
        if not found and item["kind"] in NON_ENGLISH:
            missed.append(item["query"])
    total = max(len(queries), 1)
    return {"queries": len(queries), "recallAt5": round(hits / total, 3), "mrr": round(reciprocal / total, 3),
            "byKind": {k: round(v[0] / v[1], 3) for k, v in sorted(by_kind.items())},
            "nonEnglishMissed": missed}


def fts_ranker(memories: dict[str, Memory]) -> Ranker:
    from ..store.searchcache import Index

    index = Index.of_memories(memories)
    return lambda query: [row.file for row, _ in index.ranked(query, 20)]


def prompt_ranker(memories: dict[str, Memory]) -> Ranker:
    """What the per-prompt hook would add for the query as a prompt: the bodies it selects, in order."""
    from ..store.inject import relevant
    from ..store.searchcache import Index

    index = Index.of_memories(memories)
    asked = [0]

    def rank(query: str) -> list[str]:
        asked[0] += 1
        prompt = PROMPT_FRAMES[asked[0] % len(PROMPT_FRAMES)].format(query=query)
        return [row.file for row in relevant(index.ranked(prompt, 20), 20)]

    return rank


def run(directory: Path = DEFAULT_SET) -> dict[str, Any]:
    memories, queries = load_set(directory)
    return {"memories": len(memories), "search": score(fts_ranker(memories), queries),
            "prompt": score(prompt_ranker(memories), queries)}


def format_result(result: dict[str, Any]) -> str:
    lines = [f"retrieval set: {result['memories']} memories, {result['search']['queries']} queries",
             f"{'path':<8} {'recall@5':>9} {'MRR':>6}  by kind (recall@5)"]
    for path in ("search", "prompt"):
        row = result[path]
        kinds = " ".join(f"{k}={v}" for k, v in row["byKind"].items())
        lines.append(f"{path:<8} {row['recallAt5']:>9} {row['mrr']:>6}  {kinds}")
        if row["nonEnglishMissed"]:
            lines.append(f"         non-English queries missed: {', '.join(row['nonEnglishMissed'])}")
    return os.linesep.join(lines) + os.linesep
