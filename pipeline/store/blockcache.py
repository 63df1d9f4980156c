"""The session-start block as the last session start built it, served again while nothing it shows changed.

A session start without a query shows the same block until a memory changes, yet building it opens
the search index (and with it the SQLite library, a fifth of the interpreter's start). The block is
kept in ``<project home>/index/session-block.json`` (private, like the index) with the proof it was
built on, and served again only when all of it still holds:

- the same inputs: options, config values, the credential rules' identity, the stores taken (trust,
  symlink checks) and the notes they gave;
- each store directory has the stat its index vouched for when the block was built, and that stat
  was settled (older than the racy window): no memory was added, removed or renamed since;
- every file whose text is in the block (index lines and bodies) has the stat its index row vouched
  for, settled when recorded: a hand edit, even one that keeps size and mtime, changes the ctime.

A file whose text is not in the block does not change it: shadowing and counts follow names only
(the directories), and which memories are listed follows the files listed. Anything racy is not
kept, so the next session start builds the block from the index again.
"""

from __future__ import annotations

import os
import time

from . import jsontext

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

FORMAT = "memfold-block-1"
NAME = "session-block.json"
SETTLED_NS = 2_000_000_000
MAX_BYTES = 4 << 20
RESULT_FIELDS = ("text", "included", "sent", "indexed", "omitted", "truncated", "warnings")


def path(project_home: str) -> str:
    return os.path.join(project_home, "index", NAME)


def stat_key(file: str) -> str:
    """The stat an index records for a file or directory (inode, size, mtime, ctime), or why there is none."""
    try:
        st = os.stat(file, follow_symlinks=False)
    except FileNotFoundError:
        return "absent"
    except OSError:
        return "unreadable"
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _settled(key: str | None, now: int) -> bool:
    if key == "absent":
        return True  # a file the block says is gone (a memory's cited file): its coming back is seen
    parts = (key or "").split(":")
    if len(parts) != 4 or not all(p.isdigit() for p in parts):
        return False
    return now - max(int(parts[2]), int(parts[3])) > SETTLED_NS


def load(project_home: str, key: str) -> dict[str, Any] | None:
    """The result kept under exactly ``key``, if every directory and file it shows is as recorded."""
    try:
        with open(path(project_home), "rb") as fh:
            record = jsontext.loads_bounded(fh.read(MAX_BYTES))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("format") != FORMAT or record.get("key") != key:
        return None
    proofs = record.get("dirs", []) + record.get("files", [])
    if not all(isinstance(p, list) and len(p) == 2 and stat_key(str(p[0])) == p[1] for p in proofs):
        return None
    result = record.get("result")
    return result if isinstance(result, dict) and set(result) == set(RESULT_FIELDS) else None


def save(project_home: str, key: str, dirs: Sequence[tuple[str, str | None]],
         served: Sequence[tuple[str, str | None, int]], result: dict[str, Any]) -> None:
    """Keep ``result`` with its proofs: each store dir with the generation its index vouched for, each
    served file with its row's stat. Nothing is kept when any of them is racy or unknown."""
    now = time.time_ns()
    if not all(_settled(generation, now) for _, generation in dirs):
        return
    if not all(st is not None and not racy and _settled(st, now) for _, st, racy in served):
        return
    record = {"format": FORMAT, "key": key, "dirs": [[d, g] for d, g in dirs],
              "files": sorted({(f, st) for f, st, _ in served}), "result": result}
    from ..fsutil import replace_unsynced

    try:
        os.makedirs(os.path.dirname(path(project_home)), mode=0o700, exist_ok=True)
        replace_unsynced(path(project_home), jsontext.dumps(record, ensure_ascii=False).encode("utf-8"))
    except OSError:
        pass  # only the next session start's speed depends on it
