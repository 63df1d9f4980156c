"""``memfold status``: what a user needs to know about a project's memory at a glance."""

from __future__ import annotations

import os
import socket
from typing import Any

from .apply.commit import Services
from .apply.due import DuePolicy, due_state
from .apply.journal import PENDING
from .apply.lock import describe_owner, read_owner
from .apply.runs import list_runs
from .apply.summary import SETTLED_REASON, capacity_advice, settled
from .mirror import gitinfo
from .mirror.sync import team_report
from .mirror.trust import is_trusted
from .receipts.log import log_entries
from .state.read import read_pre
from .store.index import capacity, render_index


def _live_owner(svc: Services) -> str | None:
    owner = read_owner(svc.layout.lock_info)
    if not owner:
        return None
    pid = owner.get("pid")
    if owner.get("host") == socket.gethostname() and isinstance(pid, int):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
    return describe_owner(owner)


def _due_policy(svc: Services) -> DuePolicy:
    from .config import load_config

    section = load_config(svc.layout.config).consolidate
    return DuePolicy(hours=section.due_hours, writes=section.due_writes)


def project_status(svc: Services, due_policy: DuePolicy | None = None, dormant_days: int | None = None
                   ) -> dict[str, Any]:
    layout = svc.layout
    due = due_state(layout.receipts, due_policy or _due_policy(svc), svc.clock())
    pre = read_pre(layout, svc.limits)
    safe = sum(1 for m in pre.memories.values() if m.is_safe)
    cap = capacity(render_index(pre.memories, mirror=False), svc.limits)
    runs = list_runs(layout.runs)
    try:
        pending = (layout.project_home / PENDING).read_text(encoding="utf-8").strip() or "?"
    except FileNotFoundError:
        pending = None
    # A store the built-in planner already settled: another run would be a no-op, so say what to do instead.
    still = (cap.over or due["due"]) and settled(layout.receipts, pre, svc.clock().strftime("%Y-%m-%d"))
    if still:
        due = {**due, "due": False, "reason": SETTLED_REASON}
    warnings = [w for w in [capacity_advice(pre.memories, cap) if still and cap.over else cap.warning("private")]
                if w]
    warnings += [f"ignored in the private store: {n}" for n in pre.harness.ignored]
    tracked = gitinfo.tracked(layout.project_root) if layout.mirror else None
    mirror_names = sorted(pre.public.files)
    private_names = {n for n, m in pre.memories.items() if not m.is_safe}
    history = gitinfo.ever_committed(layout.project_root) if tracked is not None else set()
    if history is None:
        warnings.append("the git history of .memory/ could not be read, so past leaks are not checked")
    leaks = sorted(private_names & (history or set()))
    team = team_report(layout, svc.limits, svc.ruleset, pre) if layout.mirror else None
    warnings += [f"{n} is private now but is in the git history of .memory/: rewrite that history" for n in leaks]
    from .evidence.drift import evidence_report, unused_report

    days = dormant_days if dormant_days is not None else _dormant_days(svc)
    return {
        "projectRoot": str(layout.project_root),
        "projectHome": str(layout.project_home),
        "scopeKey": layout.scope_key,
        "harness": str(layout.harness),
        "mirror": str(layout.mirror) if layout.mirror else None,
        "initialised": layout.project_home.is_dir(),
        "memories": len(pre.memories),
        "safe": safe,
        "private": len(pre.memories) - safe,
        "mirrorFiles": len(pre.public.memories()),
        "capacity": {"lines": cap.lines, "bytes": cap.bytes, "maxLines": cap.max_lines,
                     "maxBytes": cap.max_bytes, "over": cap.over},
        "lock": _live_owner(svc),
        "lastRun": runs[-1] if runs else None,
        "receipts": len(log_entries(layout.receipts)),
        "pendingRecovery": pending,
        "team": team,
        "broken": [b.as_dict() for b in pre.broken.values()],
        "trusted": is_trusted(layout.home, layout.project_root),
        "due": due["due"],
        "dueReason": due["reason"],
        "lastConsolidation": due["lastConsolidation"],
        "hoursSinceConsolidation": due["hoursSince"],
        "writesSinceConsolidation": due["writesSince"],
        "git": None if tracked is None else {
            "tracked": tracked, "untracked": [n for n in mirror_names if n not in tracked], "pastLeaks": leaks},
        "warnings": warnings,
        "drifted": evidence_report(layout, pre.memories),
        "unused": unused_report(layout, pre.memories, days, svc.clock().timestamp()),
        "unusedDays": days,
    }


def _dormant_days(svc: Services) -> int:
    from .config import load_config

    return int(load_config(svc.layout.config).usage.dormant_days)
