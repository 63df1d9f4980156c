"""When each memory was last used: injected in full, returned by a search, or read through a tool.

Kept in the private home only (``<project home>/usage.log``), never in a memory file (git would see a
change at every prompt), the mirror or a receipt. One line is appended per use, ``<unix seconds>
<kind> <file>``, by one ``write`` on a file opened for appending: a prompt pays one small write, and
two processes appending at once never interleave within a line. When the log passes ``COMPACT_BYTES``
it is rewritten, by rename, as one line per memory and kind (the latest use), after a first line
``# since <seconds>`` that keeps when recording began, so "never used" can be told from "not yet
measured".

The per-prompt path imports this module: ``os`` and ``time`` only.
"""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

NAME = "usage.log"
INJECT, SEARCH, READ = "inject", "search", "read"
KINDS = (INJECT, SEARCH, READ)
COMPACT_BYTES = 256 << 10
MAX_READ = 16 << 20
SINCE = "# since "


def path(project_home: str) -> str:
    return os.path.join(project_home, NAME)


def record(project_home: str, kind: str, files: Iterable[str], now: float | None = None) -> None:
    """Note that ``files`` (memory file names) were used as ``kind`` now. Best effort: a home that cannot
    be written loses the note, never the command."""
    names = [f for f in dict.fromkeys(files) if f and "\n" not in f and " " not in f]
    if not names or not os.path.isdir(project_home):
        return
    stamp = int(time.time() if now is None else now)
    data = "".join(f"{stamp} {kind} {name}\n" for name in names).encode("utf-8", "surrogateescape")
    target = path(project_home)
    try:
        fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            data = f"{SINCE}{stamp}\n".encode() + data
        os.write(fd, data)
    except OSError:
        return
    finally:
        os.close(fd)
    if size + len(data) > COMPACT_BYTES:
        compact(project_home)


class Usage:
    """What the log says: the latest use of each memory by kind, and since when uses are recorded."""

    __slots__ = ("since", "last")

    def __init__(self, since: int | None, last: dict[str, dict[str, int]]) -> None:
        self.since = since
        self.last = last

    def latest(self, file: str) -> int | None:
        uses = self.last.get(file)
        return max(uses.values()) if uses else None

    def as_dict(self, file: str) -> dict[str, object]:
        uses = self.last.get(file, {})
        return {kind: _iso(uses[kind]) for kind in KINDS if kind in uses}


def load(project_home: str) -> Usage:
    try:
        with open(path(project_home), "rb") as fh:
            text = fh.read(MAX_READ).decode("utf-8", "surrogateescape")
    except OSError:
        return Usage(None, {})
    since: int | None = None
    last: dict[str, dict[str, int]] = {}
    for line in text.split("\n"):
        if line.startswith(SINCE):
            value = line[len(SINCE):].strip()
            if value.isdigit():
                since = int(value) if since is None else min(since, int(value))
            continue
        parts = line.split(" ")
        if len(parts) != 3 or not parts[0].isdigit() or parts[1] not in KINDS:
            continue  # a torn last line, or a line from elsewhere
        stamp, kind, file = int(parts[0]), parts[1], parts[2]
        uses = last.setdefault(file, {})
        if uses.get(kind, -1) < stamp:
            uses[kind] = stamp
        if since is None or stamp < since:
            since = stamp
    return Usage(since, last)


def compact(project_home: str) -> None:
    """Rewrite the log as its latest use per memory and kind (appends meanwhile may be lost: a note)."""
    from ..fsutil import replace_unsynced

    known = load(project_home)
    lines = [f"{SINCE}{known.since or int(time.time())}\n"]
    for file in sorted(known.last):
        for kind, stamp in sorted(known.last[file].items()):
            lines.append(f"{stamp} {kind} {file}\n")
    try:
        replace_unsynced(path(project_home), "".join(lines).encode("utf-8", "surrogateescape"))
    except OSError:
        pass


def _iso(stamp: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(stamp))


def dormant(known: Usage, created: dict[str, str | None], days: int, now: float) -> dict[str, str]:
    """The memories not used in the last ``days`` days, each with why: only where the log covers that
    long for the memory (it was recorded, and the memory existed, ``days`` ago)."""
    if known.since is None:
        return {}
    limit = now - days * 86400
    out: dict[str, str] = {}
    for file, made in created.items():
        latest = known.latest(file)
        if latest is not None:
            if latest < limit:
                out[file] = f"last used {_iso(latest)[:10]}, over {days} days ago"
            continue
        start = max(known.since, _day(made) or 0)
        if start < limit:
            out[file] = f"never used since {_iso(start)[:10]} (usage is recorded from then), over {days} days"
    return out


def _day(value: str | None) -> int | None:
    """Seconds since the epoch of a YYYY-MM-DD (or longer stamp) at midnight UTC."""
    if not value or len(value) < 10 or not value[:4].isdigit():
        return None
    import calendar

    try:
        return calendar.timegm(time.strptime(value[:10], "%Y-%m-%d"))
    except ValueError:
        return None
