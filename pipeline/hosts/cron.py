"""Unattended consolidation: when a project is due, and one pass over every project home."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..apply.commit import Services
from ..apply.due import DuePolicy, due_state
from ..apply.summary import SETTLED_REASON, settled
from ..errors import LockHeld, MemfoldError
from ..paths import Layout, make_layout
from ..paths.ondisk import adopt_worktree_store
from ..state.read import read_pre
from ..store.jsontext import read_json


@dataclass(frozen=True)
class ProjectEntry:
    """One ``<home>/projects/<scopeKey>/`` and the root its ``project.json`` names."""

    scope_key: str
    root: Path | None
    problem: str | None = None


def project_entries(home: Path) -> list[ProjectEntry]:
    base = home / "projects"
    try:
        homes = sorted(p for p in base.iterdir() if p.is_dir() and not p.is_symlink())
    except FileNotFoundError:
        return []
    out = []
    for project_home in homes:
        try:
            data = read_json(project_home / "project.json", 1 << 16)
            root = Path(data["root"]) if isinstance(data, dict) and isinstance(data.get("root"), str) else None
        except (OSError, ValueError, MemfoldError):
            root = None
        if root is None:
            out.append(ProjectEntry(project_home.name, None, "project.json is missing or names no root"))
        elif not root.is_dir():
            out.append(ProjectEntry(project_home.name, root, "the project root no longer exists"))
        else:
            out.append(ProjectEntry(project_home.name, root))
    return out


ConsolidateFn = Callable[[Services], dict[str, Any]]


def consolidate_one(svc: Services, run: ConsolidateFn, *, policy: DuePolicy | None, skip_if_locked: bool,
                    now: dt.datetime, log: Callable[[str], None]) -> dict[str, Any]:
    """One project: the due check (when a policy is given), then the run; lock contention may be a skip."""
    layout = svc.layout
    line: dict[str, Any] = {"project": str(layout.project_root), "scopeKey": layout.scope_key}
    if policy is not None:
        due = due_state(layout.receipts, policy, now)
        line["due"] = due
        if due["due"] and settled(layout.receipts, read_pre(layout, svc.limits), now.strftime("%Y-%m-%d")):
            due = line["due"] = {**due, "due": False, "reason": SETTLED_REASON}
        if not due["due"]:
            return {**line, "ok": True, "status": "skipped", "reason": f"not due: {due['reason']}", "exitCode": 0}
    try:
        summary = run(svc)
    except LockHeld as exc:
        if not skip_if_locked:
            raise
        log(f"skipped {layout.project_root}: {exc.message}")
        return {**line, "ok": True, "status": "skipped", "reason": "locked", "code": exc.code,
                "holder": exc.data.get("holder") or {}, "exitCode": 0}
    keep = ("runId", "noOp", "verified", "receipt", "selected", "memories", "created", "rewritten", "deleted")
    return {**line, "ok": True, "status": "consolidated", "exitCode": 0,
            **{k: summary[k] for k in keep if k in summary}}


def visit_all(home: Path, make_services: Callable[[Layout], Services], run: ConsolidateFn, *,
              policy: DuePolicy | None, skip_if_locked: bool, now: dt.datetime,
              log: Callable[[str], None]) -> Iterator[dict[str, Any]]:
    """Every project home whose root still exists, in scope-key order; one result line each."""
    for entry in project_entries(home):
        base: dict[str, Any] = {"project": str(entry.root) if entry.root else None, "scopeKey": entry.scope_key}
        if entry.problem is not None or entry.root is None:
            yield {**base, "ok": True, "status": "skipped", "reason": entry.problem, "exitCode": 0}
            continue
        try:
            layout = make_layout(home, entry.root)
            notice = adopt_worktree_store(layout)  # a worktree's store from before worktrees shared one
            if notice is not None:
                log(notice)
                layout = make_layout(home, entry.root)
                if not (home / "projects" / entry.scope_key).exists():
                    entry = ProjectEntry(layout.store_key, entry.root)
            if layout.store_key != entry.scope_key:
                yield {**base, "ok": True, "status": "skipped", "exitCode": 0,
                       "reason": "the root now resolves to another project (moved into a repository?)"}
                continue
            yield consolidate_one(make_services(layout), run, policy=policy, skip_if_locked=skip_if_locked,
                                  now=now, log=log)
        except MemfoldError as exc:
            log(f"failed {entry.root}: [{exc.code}] {exc.message}")
            yield {**base, "ok": False, "status": "failed", "code": exc.code, "message": exc.message,
                   "exitCode": exc.exit_code}


UNIT_NAME = "memfold-consolidate"
CRON_TAIL = ("consolidate", "--all-projects", "--if-due", "--skip-if-locked")


def _shell_word(arg: str) -> str:
    import shlex

    return shlex.quote(arg)


def _systemd_word(arg: str) -> str:
    """systemd's own quoting: double quotes, backslash escapes, and ``%`` doubled (specifier syntax)."""
    escaped = arg.replace("%", "%%")
    if escaped and not any(c in escaped for c in " \t\"'\\;$"):
        return escaped
    return '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'


def crontab_line(memfold: list[str], home: Path, minute: int = 17, logs: Path | None = None) -> str:
    """Hourly: the run itself decides per project whether consolidation is due (logs: ``<home>/logs``)."""
    command = " ".join(_shell_word(a) for a in [*memfold, "--home", str(home), *CRON_TAIL])
    logs = home / "logs" if logs is None else logs
    # The shell opens the log files before memfold runs: on a fresh home the directory must exist
    # first, so the line creates it (private, like the home) before each run.
    # cron treats an unescaped % as a newline; memfold's own words never contain one, paths might.
    line = (f"{minute} * * * * umask 077 && mkdir -p {_shell_word(str(logs))} && {command} "
            f">> {_shell_word(str(logs / 'consolidate.jsonl'))} 2>> {_shell_word(str(logs / 'cron.log'))}")
    return line.replace("%", "\\%")


def systemd_units(memfold: list[str], home: Path) -> dict[str, bytes]:
    """A oneshot service and an hourly, persistent timer (a missed run happens at the next boot)."""
    exec_start = " ".join(_systemd_word(a) for a in [*memfold, "--home", str(home), *CRON_TAIL])
    service = (
        "[Unit]\n"
        "Description=memfold: consolidate the memory of every project where it is due\n\n"
        "[Service]\n"
        "Type=oneshot\n"
        f"ExecStart={exec_start}\n"
        "Nice=10\n"
        "IOSchedulingClass=idle\n"
    )
    timer = (
        "[Unit]\n"
        "Description=memfold: hourly check whether consolidation is due\n\n"
        "[Timer]\n"
        "OnCalendar=hourly\n"
        "RandomizedDelaySec=600\n"
        "Persistent=true\n\n"
        "[Install]\n"
        "WantedBy=timers.target\n"
    )
    return {f"{UNIT_NAME}.service": service.encode("utf-8"), f"{UNIT_NAME}.timer": timer.encode("utf-8")}


def install_units(unit_dir: Path, units: dict[str, bytes]) -> list[Path]:
    from ..fsutil import atomic_write

    unit_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, data in sorted(units.items()):
        atomic_write(unit_dir / name, data, mode=0o644)
        written.append(unit_dir / name)
    return written
