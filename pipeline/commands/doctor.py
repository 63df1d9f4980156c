"""``memfold doctor``: what in this scope's stores memfold cannot use, and the fix for each."""

from __future__ import annotations

from ._app import GlobalOpt, JsonOpt, app, emit, services, use_global, want_json


@app.command()
def doctor(global_: bool = GlobalOpt, json_out: bool = JsonOpt) -> int:
    """List broken memory files (full path, problem, fix), stray files, held mirror files, conflicts; exit 1 if any."""
    from ..doctor import diagnose

    use_global(global_)
    svc = services()  # the rules judge teammates' files in the mirror
    report = diagnose(svc.layout, svc.limits, svc.ruleset)
    lines = []
    for entry in report["store"]:
        lines.append(f"store: {entry['problem']} [{entry['code']}]\n  fix: {entry['fix']}")
    for entry in report["broken"]:
        lines.append(f"{entry['path']}: {entry['problem']} [{entry['code']}]\n  fix: {entry['fix']}")
    for entry in report["stray"]:
        lines.append(f"{entry['path']}: {entry['problem']}\n  fix: {entry['fix']}")
    for entry in report["mirror"]:
        lines.append(f"{svc.layout.project_root / entry['path']}: {entry['problem']} [{entry['code']}]\n"
                     f"  fix: {entry['fix']}")
    from ..evidence.drift import drift_lines

    lines = lines or [f"healthy: {svc.layout.harness}"]
    if report["drifted"]:
        lines.append("memories whose cited code changed (they may no longer hold):")
        lines += [f"  {line}" for line in drift_lines(report["drifted"], "    ")]
        lines.append("  fix: `memfold review` walks them (keep and re-anchor, update, forget)")
    emit(report, "\n".join(lines), as_json=want_json(json_out))
    return 0 if report["ok"] else 1
