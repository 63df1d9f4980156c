"""The body of ``memfold status``, without typer (``spec`` lists it; ``quick`` runs its plain form)."""

from __future__ import annotations

from ..safetext import counted
from .context import config, emit, services, use_global, want_json
from .team import team_lines


def status(global_: bool, json_out: bool) -> int:
    """Roots, counts, capacity, lock holder, last run and pending recovery."""
    use_global(global_)
    from ..apply.due import DuePolicy
    from ..status import project_status

    section = config().consolidate
    # The rules judge teammates' files in the mirror (held back or not).
    data = project_status(services(), DuePolicy(hours=section.due_hours, writes=section.due_writes),
                          int(config().usage.dormant_days))
    lines = [
        f"project      {data['projectRoot']}",
        f"private      {data['harness']} ({counted(data['memories'], 'memory')}: {data['safe']} safe, "
        f"{data['private']} private)",
        f"mirror       {data['mirror'] or 'none (the global store is private only)'} "
        f"({counted(data['mirrorFiles'], 'file')})",
        f"capacity     {data['capacity']['lines']}/{data['capacity']['maxLines']} lines, "
        f"{data['capacity']['bytes']}/{data['capacity']['maxBytes']} bytes",
        "trusted      "
        + ("yes: teammates' memories in the mirror are adopted and injected" if data["trusted"]
           else "no: nothing from the mirror is adopted or injected (`memfold trust`)"),
        f"lock         {data['lock'] or 'free'}",
        f"last run     {data['lastRun'] or 'none'}",
        f"consolidate  {'due' if data.get('due') else 'not due'}"
        + (f" ({data['dueReason']})" if data.get("due") and data.get("dueReason") else ""),
        f"receipts     {data['receipts']}",
    ]
    if data["pendingRecovery"]:
        lines.append(f"RECOVERY     run {data['pendingRecovery']} was interrupted: run `memfold recover`")
    if data["git"] is not None:
        lines.append(f"git          {len(data['git']['tracked'])} mirror files tracked, "
                     f"{len(data['git']['untracked'])} untracked")
    team = data.get("team") or {}
    lines += team_lines({**team, "adopted": team.get("incoming")}, verb="incoming", width=12, indent=" " * 13)
    for item in data.get("broken") or []:
        lines.append(f"broken       {item['path']}: {item['problem']}\n             fix: {item['fix']}")
    from ..evidence.drift import drift_lines

    for line in drift_lines(data["drifted"], "  "):
        lines.append(f"{'' if line.startswith(' ') else 'drifted':<12} {line}")
    if data["drifted"]:
        lines.append(" " * 13 + "fix: `memfold review` walks them (keep and re-anchor, update, forget)")
    unused = data["unused"]
    if unused:
        shown = ", ".join(u["file"] for u in unused[:8]) + (" ..." if len(unused) > 8 else "")
        lines.append(f"unused       {len(unused)} not used in {data['unusedDays']} days: {shown}")
    for warning in data["warnings"]:
        lines.append(f"warning      {warning}")
    emit({"ok": True, **data}, "\n".join(lines), as_json=want_json(json_out))
    return 0
