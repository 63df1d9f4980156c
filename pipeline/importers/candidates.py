"""What every importer shares: a candidate memory read from another tool's file, and how files are found."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from ..errors import InputRejected, MemfoldError
from ..frozen import FrozenValue, Slotted
from ..fsutil import read_bounded
from ..store.memory import Memory
from .source import decode, file_name, read_source, to_memory


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


def ordered(items: Iterable[Candidate]) -> list[Candidate]:
    return sorted(items, key=lambda c: c.file)
