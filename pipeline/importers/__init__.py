"""Importing other tools' memory: parsed candidates, the skip rules, and one transaction's operations."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputRejected, MemfoldError
from ..frozen import FrozenValue, Slotted
from ..fsutil import read_bounded
from ..state import Operation, PreState
from ..store.duplicates import fold
from ..store.memory import TYPES, Memory, check_name, render_memory, sanitize_line
from .source import decode, file_name, read_source, to_memory

if TYPE_CHECKING:
    from ..privacy import RuleSet


class Candidate(FrozenValue):
    """One memory found in the source, before the store is consulted (immutable)."""

    __slots__ = ("file", "memory", "source", "notes")
    file: str
    memory: Memory
    source: str
    notes: tuple[str, ...]

    def __init__(self, file: str, memory: Memory, source: str, notes: tuple[str, ...] = ()) -> None:
        self._set(file=file, memory=memory, source=source, notes=notes)


class Skip(FrozenValue):
    __slots__ = ("source", "reason")
    source: str
    reason: str

    def __init__(self, source: str, reason: str) -> None:
        self._set(source=source, reason=reason)

    def as_dict(self) -> dict[str, str]:
        return {"source": self.source, "reason": self.reason}


class Parsed(Slotted):
    """What a parser found: candidates, skips, and the file names given out so far (lower-case)."""

    __slots__ = ("candidates", "skipped", "used")

    def __init__(self) -> None:
        self.candidates: list[Candidate] = []
        self.skipped: list[Skip] = []
        self.used: set[str] = set()

    def skip(self, source: str, reason: str) -> None:
        self.skipped.append(Skip(source, reason))


MAX_SOURCE_BYTES = 4 << 20


def require_dir(path: Path) -> None:
    """A source that is not a directory is the user's mistake: exit 1 before anything is read."""
    if not path.is_dir():
        what = "does not exist" if not path.exists() else "is not a directory"
        raise InputRejected(f"import source {path} {what}", code="import.source",
                            hint="give the directory the tool keeps its memory files in")


def memory_names(path: Path) -> list[str]:
    """The names of a source dir's ``*.md`` files but its ``MEMORY.md`` index, sorted."""
    require_dir(path)
    import os

    with os.scandir(path) as entries:
        names = sorted(e.name for e in entries if e.is_file() and e.name.lower().endswith(".md"))
    return [name for name in names if name.lower() != "memory.md"]


def memory_files(path: Path, parsed: Parsed) -> Iterator[Path]:
    """The ``*.md`` files of a source dir but its ``MEMORY.md`` index."""
    for name in memory_names(path):
        yield path / name


def read_candidate(parsed: Parsed, file: Path | str, *, data: bytes | None = None, default_type: str = "project",
                   visibility: str | None = None) -> None:
    """One source file as its tool reads it: a candidate (with what reading it decided) or a skip.

    ``file`` may be a plain string: thousands of files are cheaper to name without pathlib."""
    import os

    source_name = os.path.basename(file)
    try:
        source = read_source(decode(read_bounded(file, MAX_SOURCE_BYTES) if data is None else data))
        memory = to_memory(source, source_name.removesuffix(".md"), default_type=default_type)
    except (OSError, MemfoldError) as exc:
        parsed.skip(source_name, f"not imported: {getattr(exc, 'message', None) or exc}")
        return
    if visibility is not None:
        memory = memory.with_changes(visibility=visibility)
    name = file_name(source_name, memory, parsed.used)
    notes = list(source.notes)
    if name != source_name:
        notes.append(f"stored as {name}")
    parsed.candidates.append(Candidate(name, memory, source_name, tuple(notes)))


def slug(text: str, words: int = 6) -> str:
    """The first ``words`` words of ``text`` as a file-name slug (any script, transliterated)."""
    from ..store.names import slugify

    return "-".join(slugify(text).split("-")[:words]) or "note"


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


def ordered(items: Iterable[Candidate]) -> list[Candidate]:
    return sorted(items, key=lambda c: c.file)
