"""Checking citations against the work tree: the normalised text and its hash, a citation anchored to
the text as it is, a cited range found again where lines moved above it, and the marks drift leaves.

A check finds a cited range whose text moved (lines inserted above) again by its hash: it still holds.
Text that changed, or a file that is gone, is *drift*, which readers show as a mark before the memory's
text. The per-prompt path imports this module: no ``re``, ``json`` or ``pathlib`` here.
"""

from __future__ import annotations

import os
import stat

from ..errors import InputRejected
from ..frozen import FrozenValue
from .evidence import (
    CHANGED,
    DRIFT,
    GONE,
    HOLDS,
    MAX_CITED_BYTES,
    MAX_RANGE,
    MOVED,
    RENAMED,
    SETTLED_NS,
    UNCHECKED,
    Cite,
    from_row,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any


# Normalised text and its hash.

def normal_lines(data: bytes) -> list[str]:
    text = data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
    return [" ".join(line.split()) for line in text.split("\n")]


def digest(lines: Sequence[str]) -> str:
    from ..fsutil import sha256_bytes

    return sha256_bytes("\n".join(lines).encode("utf-8", "surrogatepass"))


def _whole(lines: list[str]) -> list[str]:
    end = len(lines)
    while end and not lines[end - 1]:
        end -= 1
    return lines[:end]


def anchor(path: str, data: bytes, start: int | None, end: int | None) -> Cite:
    """A citation of ``data`` (the file at ``path`` now): its lines ``start``-``end``, or the whole file."""
    lines = normal_lines(data)
    if start is None:
        return Cite(path, None, None, digest(_whole(lines)))
    last = len(_whole(lines))
    if end is None:
        end = start
    if start < 1 or end < start or end > last:
        raise InputRejected(f"{path} has {last} lines; {start}-{end} is not a range of them",
                            code="evidence.range", hint=f"cite lines between 1 and {last}")
    if end - start + 1 > MAX_RANGE:
        raise InputRejected(f"{path}:{start}-{end} is over {MAX_RANGE} lines", code="evidence.range",
                            hint="cite the few lines the memory depends on")
    window = lines[start - 1:end]
    if not any(window):
        raise InputRejected(f"{path}:{start}-{end} holds only blank lines", code="evidence.range",
                            hint="cite the lines that hold what the memory says")
    return Cite(path, start, end, digest(window))


class Found(FrozenValue):
    """What a check found for one citation: its status, and where the text is now (path and lines)."""

    __slots__ = ("cite", "status", "path", "start", "end")
    cite: Cite
    status: str
    path: str
    start: int | None
    end: int | None

    def __init__(self, cite: Cite, status: str, path: str | None = None, start: int | None = None,
                 end: int | None = None) -> None:
        self._set(cite=cite, status=status, path=cite.path if path is None else path, start=start, end=end)

    @property
    def drifted(self) -> bool:
        return self.status in DRIFT

    @property
    def at(self) -> str:
        """Where the cited text is now (or was: the cited place, for text that changed)."""
        if self.start is None:
            return self.path
        return f"{self.path}:{self.start}" if self.end == self.start else f"{self.path}:{self.start}-{self.end}"

    def mark(self) -> str | None:
        """The note before a memory's text for the model (None: nothing to say)."""
        if self.status == CHANGED:
            return f"[code changed since this was written: {self.cite.where}]"
        if self.status == GONE:
            return f"[cited file is gone: {self.cite.path}]"
        if self.status == RENAMED:
            if self.start is None and self.cite.start is not None:
                return f"[code changed since this was written: {self.cite.where}, file now {self.path}]"
            return f"[cited file moved: {self.cite.path} is now {self.path}]"
        return None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {**self.cite.as_dict(), "cited": self.cite.where, "status": self.status}
        if self.status in (MOVED, RENAMED):
            out["now"] = self.at
        if self.status == RENAMED:
            out["nowPath"] = self.path
        return out


def locate(cite: Cite, data: bytes, path: str | None = None) -> Found:
    """Where ``cite``'s text is in ``data`` (the bytes of ``path``, by default the cited file)."""
    path = cite.path if path is None else path
    if cite.sha256 is None:
        return Found(cite, HOLDS, path)
    lines = normal_lines(data)
    if cite.start is None or cite.end is None:
        return Found(cite, HOLDS if digest(_whole(lines)) == cite.sha256 else CHANGED, path)
    size = cite.end - cite.start + 1
    at = cite.start - 1
    if digest(lines[at:at + size]) == cite.sha256 and at + size <= len(lines):
        return Found(cite, HOLDS, path, cite.start, cite.end)
    # Moved: the nearest window of the same number of lines with the same hash.
    for distance in range(1, len(lines) + 1):
        for begin in (at + distance, at - distance):
            if 0 <= begin and begin + size <= len(lines) and digest(lines[begin:begin + size]) == cite.sha256:
                return Found(cite, MOVED, path, begin + 1, begin + size)
        if at - distance < 0 and at + distance + size > len(lines):
            break
    return Found(cite, CHANGED, path, cite.start, cite.end)


def read_cited(root: str, path: str) -> bytes | None:
    """The cited file's bytes, or None when it is gone, not a regular file, or lies outside ``root``
    once links are resolved; a file over ``MAX_CITED_BYTES`` reads as b"" (never hashed)."""
    full = os.path.join(root, path)
    try:
        real = os.path.realpath(full)
        base = os.path.realpath(root)
        if real != base and not real.startswith(base.rstrip(os.sep) + os.sep):
            return None
        # Opened without following a link and without blocking, then judged by what was opened: a file
        # swapped for a link or a FIFO after the realpath neither leads outside nor hangs the reader.
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return None
    with os.fdopen(fd, "rb") as fh:
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return None
            if st.st_size > MAX_CITED_BYTES:
                return b""
            return fh.read(MAX_CITED_BYTES + 1)
        except OSError:
            return None


def check(root: str, cites: Sequence[Cite], follow: Callable[[str], str | None] | None = None) -> list[Found]:
    """Each citation checked against the files under ``root`` now. ``follow`` names where git saw a
    gone file move to (a rename), or None; without it a gone file is just gone."""
    out = []
    for cite in cites:
        data = read_cited(root, cite.path)
        if data is None:
            moved = follow(cite.path) if follow is not None else None
            moved_data = read_cited(root, moved) if moved else None
            if moved is None or moved_data is None:
                out.append(Found(cite, GONE))
                continue
            found = locate(cite, moved_data, moved)
            holds = found.status in (HOLDS, MOVED)
            out.append(Found(cite, RENAMED, moved, found.start if holds else None, found.end if holds else None))
            continue
        if not data and cite.sha256 is not None and os.path.getsize(os.path.join(root, cite.path)) > 0:
            out.append(Found(cite, UNCHECKED))
            continue
        out.append(locate(cite, data))
    return out


def marks(found: Iterable[Found]) -> list[str]:
    return [m for f in found if (m := f.mark()) is not None]


def identity(root: str, path: str) -> str:
    """What changes whenever the cited file may have: its stat (inode, size, mtime, ctime), or absent."""
    try:
        st = os.stat(os.path.join(root, path))
    except OSError:
        return "absent"
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def settled(key: str, now: int) -> bool:
    parts = key.split(":")
    if len(parts) != 4:
        return key == "absent"
    return now - max(int(parts[2]), int(parts[3])) > SETTLED_NS


class Marker:
    """The marks of each served memory's citations, for the block the model reads.

    A cache, kept with the memory's row in its store's search index (the ``proof`` column): the marks
    found, under the identity (inode, size, mtime, ctime) of every file the memory cites, or ``absent``
    (with ``follow_key``'s answer, when renames are followed: git's index and HEAD). A cited file that
    changes in any way, in place or by rename, changes its identity, and a changed memory file gets a
    new row, so a kept answer is served only while every input it was found from is as it was. An
    identity still within two seconds of its last change (a second write could keep it) is never
    kept. A prompt then pays a stat per cited file, and reads only the files that changed.
    ``proofs`` lists each cited file with its identity, for a cache of the whole block.
    """

    def __init__(self, root: str, follow: Callable[[str], str | None] | None = None,
                 follow_key: Callable[[], list[tuple[str, str]]] | None = None) -> None:
        self.root = root
        self.follow = follow
        self.follow_key = follow_key
        self.proofs: list[tuple[str, str | None, int]] = []
        self._git: list[tuple[str, str]] | None = None

    def __call__(self, source: Any, row: Any) -> list[str]:
        if not row.evidence or source.kind == "global":
            return []
        import time

        cites = from_row(row.evidence)
        paths = list(dict.fromkeys(c.path for c in cites))
        keys = [identity(self.root, p) for p in paths]
        now = time.time_ns()
        extra: list[tuple[str, str]] = []
        if "absent" in keys and self.follow_key is not None:
            if self._git is None:
                self._git = self.follow_key()
            extra = self._git
        steady = all(settled(k, now) for k in keys) and all(settled(k, now) for _, k in extra)
        for path, key in [*((os.path.join(self.root, p), k) for p, k in zip(paths, keys, strict=True)), *extra]:
            self.proofs.append((path, key, 0 if settled(key, now) else 1))
        head = "\t".join([*keys, *(k for _, k in extra)])
        if row.proof:
            kept_head, _, kept = row.proof.partition("\n")
            if kept_head == head:
                return kept.split("\x1f") if kept else []
        found = marks(check(self.root, cites, self.follow))
        if steady:
            row.proof = head + "\n" + "\x1f".join(found)
            source.index.settle("UPDATE docs SET proof = ? WHERE id = ? AND sha = ?", (row.proof, row.id, row.sha))
        return found
