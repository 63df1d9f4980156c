"""Which memories a consolidation selects: all, those related to the session, or named ones."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import InputRejected, UsageError
from ..store.memory import Memory, normalize_name
from ..store.search import score, tokens
from ..store.state import find_name

SCOPES = ("all", "related", "select")


def default_scope(has_context: bool, select: Sequence[str]) -> str:
    if select:
        return "select"
    return "related" if has_context else "all"


def candidate_text(candidate: Mapping[str, Any]) -> str:
    return " ".join(str(candidate.get(k) or "") for k in ("name", "description", "body"))


def select(scope: str, memories: Mapping[str, Memory], snapshot: Mapping[str, Any], names: Sequence[str]) -> list[str]:
    """The sorted selected file names. ``related``: memories sharing words with a candidate."""
    if scope not in SCOPES:
        raise UsageError(f"--scope must be one of {', '.join(SCOPES)}", code="usage.scope")
    if scope == "all":
        return sorted(memories)
    if scope == "select":
        chosen = set()
        for raw in names:
            actual = find_name(memories.keys(), normalize_name(raw))
            if actual is None:
                raise InputRejected(f"--select names {raw}, which is not a memory", code="scope.unknown",
                                    hint="`memfold list` shows the names")
            chosen.add(actual)
        return sorted(chosen)
    chosen = set()
    for candidate in snapshot.get("candidates") or []:
        if not isinstance(candidate, Mapping):
            continue
        wanted = tokens(candidate_text(candidate))
        # Two shared words (or a hit in the name) is enough to be worth a look by the planner.
        for name, memory in memories.items():
            if score(wanted, name, memory) >= 3:
                chosen.add(name)
    return sorted(chosen)
