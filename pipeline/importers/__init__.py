"""Importing other tools' memory: parsed candidates, the skip rules, and one transaction's operations."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..errors import InputRejected
from ..state.model import Operation, PreState
from ..store.duplicates import fold
from ..store.memory import TYPES, Memory, check_name, render_memory, sanitize_line
from .candidates import Candidate, Parsed, Skip

if TYPE_CHECKING:
    from ..privacy import RuleSet


def check_candidate(candidate: Candidate) -> str | None:
    """Why a candidate cannot become a memory, or None."""
    try:
        check_name(candidate.file)
    except InputRejected as exc:
        return exc.message
    m = candidate.memory
    if not sanitize_line(m.description):
        return "no description"
    if m.type not in TYPES:
        return f"type {m.type!r} is not one of {', '.join(TYPES)}"
    if m.visibility not in ("safe", "private"):
        return f"visibility {m.visibility!r} is not safe or private"
    return None


def _same(a: Memory, b: Memory) -> bool:
    return fold(a.description) == fold(b.description) and fold(a.body) == fold(b.body)


def plan_import(
    parsed: Parsed, ruleset: RuleSet | None, report: dict[str, Any]
) -> Callable[[PreState], list[Operation]]:
    """The build step of the import transaction; fills ``report`` with what was done to each source.

    Every lookup is a dict keyed by the folded name, description or body, so the plan is linear in the
    number of candidates plus the store (each candidate used to be compared with every memory).
    """

    def build(pre: PreState) -> list[Operation]:
        skipped = list(parsed.skipped)
        ops: list[Operation] = []
        imported: list[dict[str, Any]] = []
        taken = _Taken(pre.memories, [*pre.broken, *pre.public.memories()])
        for cand in parsed.candidates:
            why = check_candidate(cand)
            existing_name = taken.name(cand.file) if why is None else None
            if existing_name is not None:
                existing = taken.memories.get(existing_name)
                why = ("already imported" if existing is not None and _same(existing, cand.memory)
                       else f"{existing_name} already exists with other content (not overwritten)")
            keys = taken.keys(cand.memory) if why is None else None
            if keys is not None:
                twin = taken.twin(keys)
                if twin is not None:
                    why = f"near-duplicate of {twin}"
            content = render_memory(cand.memory) if why is None else b""
            if why is None and cand.memory.is_safe and ruleset is not None:
                why = _privacy(ruleset, content, cand.file)
            if why is not None:
                skipped.append(Skip(cand.source, why))
                continue
            ops.append(Operation(cand.file, "create", cand.memory.visibility, content))
            imported.append({"name": cand.file, "source": cand.source, "visibility": cand.memory.visibility,
                             "notes": list(cand.notes)})
            taken.add(cand.file, cand.memory, keys)
        report["imported"] = imported
        report["skipped"] = [s.as_dict() for s in skipped]
        return ops

    return build


class _Taken:
    """The names, descriptions and bodies already in the store or imported in this run, by folded key."""

    def __init__(self, memories: dict[str, Memory], other_names: Iterable[str]) -> None:
        self.memories: dict[str, Memory] = {}
        self.names: dict[str, str] = {n.lower(): n for n in other_names}
        self.descriptions: dict[str, str] = {}
        self.bodies: dict[str, str] = {}
        for name in sorted(memories):
            self.add(name, memories[name])

    @staticmethod
    def keys(memory: Memory) -> tuple[str, str]:
        """The folded description and body, the keys a near-duplicate shares."""
        return fold(memory.description), fold(memory.body)

    def add(self, name: str, memory: Memory, keys: tuple[str, str] | None = None) -> None:
        self.memories[name] = memory
        self.names[name.lower()] = name
        description, body = keys or self.keys(memory)
        self.descriptions.setdefault(description, name)
        if body:
            self.bodies.setdefault(body, name)

    def name(self, file: str) -> str | None:
        return self.names.get(file.lower())

    def twin(self, keys: tuple[str, str]) -> str | None:
        description, body = keys
        hits = [n for n in (self.descriptions.get(description), self.bodies.get(body) if body else None) if n]
        return min(hits) if hits else None


def _privacy(ruleset: RuleSet, content: bytes, name: str) -> str | None:
    from ..privacy import scan_bytes

    findings = scan_bytes(ruleset, content, name)
    if not findings:
        return None
    first = findings[0]
    return f"privacy: safe in the source but rule {first.rule_id} fires at line {first.line}; not imported"


def parsers() -> dict[str, Callable[..., Parsed]]:
    from . import claude, harness, pi

    return {"pi-notes": pi.parse_notes, "pi-memory": pi.parse_memory_dir, "claude": claude.parse_dir,
            "harness": harness.parse_pair}


