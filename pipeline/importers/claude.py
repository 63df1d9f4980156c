"""Claude Code memory dirs: topic files with name/description and ``type:`` or ``metadata.type:``."""

from __future__ import annotations

from pathlib import Path

from ..errors import MemfoldError
from ..fsutil import read_bounded
from ..store.memory import parse_memory
from . import Candidate, Parsed, memory_files, ordered, safe_file_name

MAX_SOURCE_BYTES = 4 << 20


def parse_dir(path: Path) -> Parsed:
    """Every ``*.md`` but the ``MEMORY.md`` index; a file that does not parse is skipped whole."""
    parsed = Parsed()
    for file in memory_files(path, parsed):
        try:
            memory = parse_memory(read_bounded(file, MAX_SOURCE_BYTES), file.name)
        except (OSError, MemfoldError) as exc:
            parsed.skip(file.name, f"malformed: {getattr(exc, 'message', None) or exc}")
            continue
        parsed.candidates.append(Candidate(safe_file_name(file.name), memory, file.name))
    parsed.candidates = ordered(parsed.candidates)
    return parsed


def export_dir(files: dict[str, bytes], index: bytes, dest: Path) -> list[Path]:
    """Write memories (their exact bytes) and a ``MEMORY.md`` index into a Claude Code memory dir.

    Files of the same name are replaced; anything else in ``dest`` is left alone.
    """
    from ..fsutil import atomic_write, safe_join

    dest.mkdir(parents=True, exist_ok=True, mode=0o700)
    written = []
    for name, data in sorted(files.items()):
        atomic_write(safe_join(dest, name), data)
        written.append(dest / name)
    atomic_write(dest / "MEMORY.md", index)
    return [*written, dest / "MEMORY.md"]
