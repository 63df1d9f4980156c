"""Due checks over the receipt log, and the crontab line and systemd units."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
from pathlib import Path

from conftest import REPO, Env

from pipeline.apply.due import DuePolicy, due_state
from pipeline.hosts.cron import crontab_line, systemd_units

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)


def _receipts(tmp_path: Path, entries: list[tuple[str, str]]) -> Path:
    root = tmp_path / "receipts"
    root.mkdir()
    for seq, (command, created) in enumerate(entries, 1):
        (root / f"{seq:08d}-20261130T000000Z-{seq:08x}.json").write_text(
            json.dumps({"command": command, "createdAt": created}))
    return root


def test_a_project_without_receipts_is_never_due(tmp_path: Path) -> None:
    state = due_state(tmp_path / "missing", DuePolicy(), NOW)
    assert state["due"] is False and state["reason"] == "no writes yet"


def test_writes_since_the_last_consolidation_make_it_due(tmp_path: Path) -> None:
    root = _receipts(tmp_path, [("add", "2026-11-30T11:00:00Z"), ("consolidate", "2026-11-30T11:30:00Z"),
                                ("add", "2026-11-30T11:40:00Z"), ("update", "2026-11-30T11:50:00Z")])
    assert due_state(root, DuePolicy(hours=24, writes=3), NOW)["due"] is False
    state = due_state(root, DuePolicy(hours=24, writes=2), NOW)
    assert state["due"] is True and state["writesSince"] == 2 and state["lastConsolidation"] == "2026-11-30T11:30:00Z"


def test_hours_count_from_the_first_write_when_never_consolidated(tmp_path: Path) -> None:
    root = _receipts(tmp_path, [("add", "2026-11-29T06:00:00Z")])
    state = due_state(root, DuePolicy(hours=24, writes=20), NOW)
    assert state["due"] is True and state["hoursSince"] == 30.0 and "first write" in state["reason"]


def test_the_crontab_line_quotes_paths_and_escapes_percent() -> None:
    line = crontab_line(["/opt/my tools/memfold"], Path("/home/u/100%/memfold"))
    assert line.startswith("17 * * * * umask 077 && mkdir -p /home/u/100\\%/memfold/logs && "
                           "'/opt/my tools/memfold' --home /home/u/100\\%/memfold consolidate ")
    assert "--all-projects --if-due --skip-if-locked >> " in line


def test_systemd_exec_start_quotes_spaces_and_doubles_percent() -> None:
    units = systemd_units(["/opt/my tools/memfold"], Path("/h/50%"))
    service = units["memfold-consolidate.service"].decode()
    assert 'ExecStart="/opt/my tools/memfold" --home /h/50%% consolidate --all-projects' in service


def test_the_printed_cron_line_works_on_a_fresh_home(env: Env) -> None:
    assert env.run("add", "project_a", "-d", "the first memory").code == 0
    fresh = env.home / "logs"
    assert not fresh.exists()
    line = env.run("--json", "schedule", "--cron").json()["crontab"]
    command = line.split(" ", 5)[5].replace("\\%", "%")  # what cron hands to /bin/sh
    proc = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, cwd="/")
    assert proc.returncode == 0, proc.stderr
    lines = (fresh / "consolidate.jsonl").read_text().splitlines()
    assert lines and json.loads(lines[-1])["project"] == str(env.project)
    assert (fresh.stat().st_mode & 0o777) == 0o700
