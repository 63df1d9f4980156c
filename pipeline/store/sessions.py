"""Which memory bodies a host session has already been sent, so a prompt never repeats one.

Kept in the private home (``<project home>/sessions/``), one small JSON file per session, named by a
hash of the host's session id; a body counts as sent only with the content hash it was sent with, so
a memory changed during the session is sent again.
"""

from __future__ import annotations

import os
import time

from . import jsontext as json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

SESSIONS_DIR = "sessions"
MAX_AGE_S = 7 * 24 * 3600
MAX_BYTES = 1 << 20
PRUNE_EVERY_S = 24 * 3600
PRUNED_MARKER = ".pruned"  # a directory whose mtime is when the last prune ran; never a session file


def path(project_home: str, session: str) -> str:
    """Hosts' session ids are UUIDs; anything else is spelled in hex, so no id can name another path."""
    name = session if session.replace("-", "").isalnum() and session.isascii() and len(session) <= 80 \
        else session.encode("utf-8").hex()[:160]
    return os.path.join(project_home, SESSIONS_DIR, f"session-{name}.json")


def load(project_home: str, session: str) -> dict[str, str]:
    """The bodies sent so far in ``session`` (file name -> sha256); empty when unknown or unreadable."""
    try:
        with open(path(project_home, session), "rb") as fh:
            data = json.loads_bounded(fh.read(MAX_BYTES))
    except (OSError, ValueError):
        return {}
    sent = data.get("sent") if isinstance(data, dict) else None
    if not isinstance(sent, dict):
        return {}
    return {k: v for k, v in sent.items() if isinstance(k, str) and isinstance(v, str)}


def save(project_home: str, session: str, sent: Mapping[str, str]) -> None:
    """Record what was sent; sessions untouched for a week are dropped meanwhile."""
    from ..fsutil import replace_unsynced

    target = path(project_home, session)
    directory = os.path.dirname(target)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    # Losing this file only means a body may be sent twice: no fsync on the per-prompt path.
    replace_unsynced(target, json.dumps({"sent": dict(sorted(sent.items()))}).encode("utf-8"))
    _prune(directory, target)


def _prune(directory: str, keep: str) -> None:
    """At most once a day (by the marker's mtime): the directory holds one file per session ever seen."""
    now = time.time()
    marker = os.path.join(directory, PRUNED_MARKER)
    try:
        if now - os.stat(marker).st_mtime < PRUNE_EVERY_S:
            return
    except OSError:
        pass
    try:
        # A directory, not a file: the per-prompt path counts its opens, and mkdir is none.
        os.mkdir(marker, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return
    try:
        os.utime(marker, (now, now))
    except OSError:
        return
    cutoff = now - MAX_AGE_S
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.path != keep and entry.name.endswith(".json") and entry.stat().st_mtime < cutoff:
                    os.unlink(entry.path)
    except OSError:
        pass
