"""Importing other tools' memory: parsed candidates, the skip rules, and one transaction's operations."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..edits import fold
from ..errors import InputRejected
from ..state import Operation, PreState
from ..store.memory import TYPES, Memory, check_name, render_memory, sanitize_line
from ..store.state import find_name

if TYPE_CHECKING:
    from ..privacy import RuleSet

_SLUG = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class Candidate:
    """One memory found in the source, before the store is consulted."""

    file: str
    memory: Memory
    source: str


@dataclass(frozen=True)
class Skip:
    source: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"source": self.source, "reason": self.reason}


@dataclass
class Parsed:
    candidates: list[Candidate] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)

    def skip(self, source: str, reason: str) -> None:
        self.skipped.append(Skip(source, reason))


def memory_files(path: Path, parsed: Parsed) -> Iterator[Path]:
    """The ``*.md`` files of a source dir but its ``MEMORY.md`` index; a missing dir is one skip."""
    if not path.is_dir():
        parsed.skip(str(path), "not a directory")
        return
    for file in sorted(path.glob("*.md")):
        if file.name.lower() != "memory.md":
            yield file


def slug(text: str, words: int = 6) -> str:
    return "-".join(_SLUG.sub(" ", text.lower()).split()[:words]) or "note"


def safe_file_name(raw: str) -> str:
    """A source file name made into a memory name: other characters become '-'."""
    stem = raw.removesuffix(".md")
    stem = re.sub(r"[^A-Za-z0-9_-]+", "-", stem).strip("-_") or "memory"
    return f"{stem[:120]}.md"


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
    """The build step of the import transaction; fills ``report`` with what was imported and skipped."""

    def build(pre: PreState) -> list[Operation]:
        skipped = list(parsed.skipped)
        ops: list[Operation] = []
        taken: dict[str, Memory] = dict(pre.memories)
        for cand in parsed.candidates:
            why = check_candidate(cand)
            existing_name = find_name(set(taken), cand.file)
            if why is None and existing_name is not None:
                why = ("already imported" if _same(taken[existing_name], cand.memory)
                       else f"{existing_name} already exists with other content (not overwritten)")
            if why is None:
                twin = _twin(taken, cand.memory)
                if twin is not None:
                    why = f"near-duplicate of {twin}"
            content = render_memory(cand.memory) if why is None else b""
            if why is None and cand.memory.is_safe and ruleset is not None:
                why = _privacy(ruleset, content, cand.file)
            if why is not None:
                skipped.append(Skip(cand.source, why))
                continue
            ops.append(Operation(cand.file, "create", cand.memory.visibility, content))
            taken[cand.file] = cand.memory
        report["imported"] = [{"name": op.name, "visibility": op.classification} for op in ops]
        report["skipped"] = [s.as_dict() for s in skipped]
        return ops

    return build


def _twin(taken: dict[str, Memory], memory: Memory) -> str | None:
    description, body = fold(memory.description), fold(memory.body)
    for name, other in sorted(taken.items()):
        if fold(other.description) == description or (body and fold(other.body) == body):
            return name
    return None


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


def ordered(items: Iterable[Candidate]) -> list[Candidate]:
    return sorted(items, key=lambda c: c.file)
