"""`memfold doctor`: every file of a scope that memfold cannot use, where it is, and how to fix it."""

from __future__ import annotations

from typing import Any

from .errors import MemfoldError
from .paths import Layout
from .state.model import PreState
from .state.read import read_pre
from .store.state import Limits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .privacy import RuleSet


def diagnose(layout: Layout, limits: Limits, ruleset: RuleSet | None = None) -> dict[str, Any]:
    """Broken memory files, stray files in the private store, and the mirror files held back or in conflict."""
    try:
        pre = read_pre(layout, limits)
    except MemfoldError as exc:
        # The store cannot be read as a whole (a symlink, a case collision, the count bound).
        fix = exc.hint or "see the message"
        return {"ok": False, "broken": [], "stray": [], "mirror": [], "drifted": [],
                "store": [{"code": exc.code, "problem": exc.message, "fix": fix}]}
    mirror = _mirror(pre, layout, limits, ruleset)
    from .evidence.drift import evidence_report

    # Drifted citations are no fault of a file (doctor's exit code): the memory may still hold.
    return {"ok": not _problems(pre, mirror), "broken": [b.as_dict() for b in pre.broken.values()],
            "stray": _stray(pre, layout), "mirror": mirror, "store": [],
            "drifted": evidence_report(layout, pre.memories)}


def _stray(pre: PreState, layout: Layout) -> list[dict[str, str]]:
    out = [{"path": str(layout.harness / n), "problem": "not a memory file name",
            "fix": "rename it to letters, digits, '_' and '-' ending in .md, or move it out of the store"}
           for n in pre.harness.ignored]
    out += [{"path": str(layout.harness / n), "problem": "a leftover temporary file",
             "fix": "`memfold recover` removes it"} for n in pre.harness.temps]
    return out


def _mirror(pre: PreState, layout: Layout, limits: Limits, ruleset: RuleSet | None) -> list[dict[str, str]]:
    """Mirror files memfold holds back and conflicts with the store, each with its problem and fix."""
    if not pre.mirrored:
        return []
    from .mirror.sync import team_report

    team = team_report(layout, limits, ruleset, pre)
    return [*({"code": h["code"], "path": f".memory/{h['name']}", "problem": h["problem"], "fix": h["fix"]}
              for h in team["held"]),
            *({"code": "sync.conflict", "path": f".memory/{c['name']}",
               "problem": f"{c['name']} changed both in the mirror and in your store since they agreed",
               "fix": c["fix"]} for c in team["conflicts"])]


def _problems(pre: PreState, mirror: list[dict[str, str]]) -> bool:
    return bool(pre.broken or pre.harness.ignored or pre.harness.temps or mirror)
