"""Claude Code memory dirs: topic files with name/description and ``type:`` or ``metadata.type:``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .candidates import Parsed, memory_names, ordered, read_candidate


def parse_dir(path: Path, tick: Callable[[], None] = lambda: None) -> Parsed:
    """Every ``*.md`` but the ``MEMORY.md`` index, read as Claude Code reads it (see ``source``)."""
    import os

    parsed = Parsed()
    folder = os.fspath(path)
    for name in memory_names(path):
        read_candidate(parsed, os.path.join(folder, name))
        tick()
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
