"""memfold's marked block in the repository's root ``.gitattributes``: which merge git uses for mirror files.

The block names memfold's merge drivers for memory files and chain heads, and git's ``union`` merge for
the mirror index (listed after the memory files, since the later line wins for ``MEMORY.md``); the
next sync rewrites a union-merged index exactly. A driver that is not registered in the repository's
git config (``memfold hooks install git``) leaves git to its own text merge, so the block is harmless
without them. Everything outside the two marker lines is kept byte for byte; a file with CRLF line
endings gets the block with CRLF too.
"""

from __future__ import annotations

import os
import stat

from ..errors import InputRejected, MemfoldError, UnsafePath
from ..fsutil import atomic_write, read_bounded
from ..paths import HEADS_DIR, MIRROR_DIR, STATE_DIR

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

ATTRIBUTES_FILE = ".gitattributes"
MEMORY_DRIVER = "memfold-memory"
HEAD_DRIVER = "memfold-head"
BEGIN = "# memfold: begin"
END = "# memfold: end"
RULES = (
    f"{MIRROR_DIR}/*.md merge={MEMORY_DRIVER}",
    f"{MIRROR_DIR}/MEMORY.md merge=union",
    f"{STATE_DIR}/{HEADS_DIR}/*.json merge={HEAD_DRIVER}",
)
MAX_BYTES = 1 << 20


def _lines(text: str) -> list[str]:
    """The lines of ``text`` with their endings; only LF ends a line (git splits attributes so)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    return [*lines, parts[-1]] if parts[-1] else lines


def _spans(lines: list[str]) -> list[tuple[int, int]]:
    """(first, last) line index of each marked block; refuses markers that do not pair up."""
    spans: list[tuple[int, int]] = []
    start: int | None = None
    for i, line in enumerate(lines):
        marker = line.strip()
        if marker == BEGIN and start is None:
            start = i
        elif marker == END and start is not None:
            spans.append((start, i))
            start = None
        elif marker in (BEGIN, END):
            break
    else:
        if start is None:
            return spans
    raise InputRejected(
        f"{ATTRIBUTES_FILE}: memfold's block markers do not pair up (a '{BEGIN}' line needs its own "
        f"'{END}' line after it)", code="gitattributes.markers",
        hint="delete both marker lines and the memfold lines between them; memfold writes the block again")


def _newline(text: str) -> str:
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def block(newline: str = "\n") -> str:
    return "".join(line + newline for line in (BEGIN, *RULES, END))


def with_block(text: str | None) -> str:
    """``text`` with memfold's block present and current: an outdated block is replaced where it stands
    (a second copy, left by a merge, is dropped), a missing one is appended; nothing else changes,
    except the final newline a last line without one gets."""
    if not text:
        return block()
    newline = _newline(text)
    lines = _lines(text)
    spans = _spans(lines)
    if not spans:
        tail = "" if text.endswith("\n") else newline
        return text + tail + block(newline)
    return _without(lines, spans, replace_first=block(newline))


def without_block(text: str) -> str:
    """``text`` without memfold's block (every copy of it); nothing else changes."""
    lines = _lines(text)
    return _without(lines, _spans(lines), replace_first="")


def _without(lines: list[str], spans: list[tuple[int, int]], replace_first: str) -> str:
    kept: list[str] = []
    at = 0
    for n, (first, last) in enumerate(spans):
        kept.extend(lines[at:first])
        if n == 0:
            kept.append(replace_first)
        at = last + 1
    kept.extend(lines[at:])
    return "".join(kept)


def _read(path: Path) -> str | None:
    """The file's text (undecodable bytes kept as they are), None when absent; a link is refused."""
    try:
        data = read_bounded(path, MAX_BYTES)
    except FileNotFoundError:
        return None
    except UnsafePath as exc:
        raise UnsafePath(f"{path} is a link or not a regular file; memfold does not write through it", code=exc.code,
                         hint="replace it with a regular file, or add memfold's lines to it by hand: "
                              + "; ".join(RULES)) from None
    return data.decode("utf-8", "surrogateescape")


def _write(path: Path, old: str | None, new: str) -> bool:
    if new == old:
        return False
    if not new and old is not None:
        os.unlink(path)  # the file held nothing but memfold's block
        return True
    mode = 0o644 if old is None else stat.S_IMODE(os.lstat(path).st_mode)
    atomic_write(path, new.encode("utf-8", "surrogateescape"), mode=mode)
    return True


def write_block(root: Path) -> bool:
    """Put memfold's block into ``<root>/.gitattributes`` (created if absent); whether it changed anything."""
    path = root / ATTRIBUTES_FILE
    old = _read(path)
    return _write(path, old, with_block(old))


def remove_block(root: Path) -> bool:
    """Take memfold's block out of ``<root>/.gitattributes`` (the file goes when nothing else is left)."""
    path = root / ATTRIBUTES_FILE
    old = _read(path)
    return old is not None and _write(path, old, without_block(old))


def keep_block(root: Path, mirror_has_memories: bool) -> str | None:
    """After a transaction that changed the mirror of a git work tree holding memory files: the block
    present and current. Returns a warning when it cannot be written (the transaction stands: the block
    only spares the team merge conflicts), None otherwise; nothing is written outside git or for a mirror
    without a memory file (a person who used memfold alone can still pull the team's first commit)."""
    if not mirror_has_memories or not os.path.lexists(root / ".git"):
        return None
    try:
        write_block(root)
    except (MemfoldError, OSError) as exc:
        message = exc.message if isinstance(exc, MemfoldError) else str(exc.strerror or exc)
        return f"the merge rules in .gitattributes were not written ({message}); `memfold hooks install git` says why"
    return None
