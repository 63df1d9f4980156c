"""`memfold doctor`: every file of a scope that memfold cannot use, where it is, and how to fix it."""

from __future__ import annotations

from typing import Any

from ..errors import MemfoldError
from ..paths import Layout
from ..state import PreState, read_pre
from .state import Limits


def diagnose(layout: Layout, limits: Limits) -> dict[str, Any]:
    """Broken memory files, stray files in the private store, and every difference of the mirror."""
    try:
        pre = read_pre(layout, limits)
    except MemfoldError as exc:
        # The store cannot be read as a whole (a symlink, a case collision, the count bound).
        fix = exc.hint or "see the message"
        return {"ok": False, "broken": [], "stray": [], "mirror": [],
                "store": [{"code": exc.code, "problem": exc.message, "fix": fix}]}
    return {"ok": not _problems(pre, layout), "broken": [b.as_dict() for b in pre.broken.values()],
            "stray": _stray(pre, layout), "mirror": _mirror(pre, layout), "store": []}


def _stray(pre: PreState, layout: Layout) -> list[dict[str, str]]:
    out = [{"path": str(layout.harness / n), "problem": "not a memory file name",
            "fix": "rename it to letters, digits, '_' and '-' ending in .md, or move it out of the store"}
           for n in pre.harness.ignored]
    out += [{"path": str(layout.harness / n), "problem": "a leftover temporary file",
             "fix": "`memfold recover` removes it"} for n in pre.harness.temps]
    return out


def _mirror(pre: PreState, layout: Layout) -> list[dict[str, str]]:
    """Differences of the mirror (one only behind the store, as after a write in another worktree, is none)."""
    if not pre.mirrored:
        return []
    from ..mirror.check import BEHIND, differences

    return [{"code": i.code, "path": i.path, "problem": i.message,
             "fix": "the next memfold transaction rewrites the mirror from the private store; move a hand "
                    "edit into the store with `memfold update` first"}
            for i in differences(pre, layout) if i.code != BEHIND]


def _problems(pre: PreState, layout: Layout) -> bool:
    return bool(pre.broken or pre.harness.ignored or pre.harness.temps or _mirror(pre, layout))
