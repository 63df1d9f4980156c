"""Long work shows progress on a terminal only; cron and pipes get the result and nothing else."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

from conftest import REPO, Env

from pipeline.bench.importing import write_claude_dir


def _spawn(env: Env, args: list[str], *, tty: bool) -> tuple[int, str, str]:
    argv = [sys.executable, "-m", "pipeline", *env.args(*args)]
    environ = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "100"}
    if not tty:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=environ)
        return proc.returncode, proc.stdout, proc.stderr
    primary, secondary = pty.openpty()
    proc2 = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=secondary, env=environ)
    os.close(secondary)
    chunks = []
    while True:
        try:
            data = os.read(primary, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    out = proc2.stdout.read().decode() if proc2.stdout else ""
    code = proc2.wait(timeout=120)
    os.close(primary)
    return code, out, b"".join(chunks).decode(errors="replace")


def test_an_import_shows_progress_on_a_terminal_and_nothing_in_a_pipe(env: Env, tmp_path: Path) -> None:
    source = tmp_path / "claude"
    write_claude_dir(source, 60)
    code, out, err = _spawn(env, ["import", "claude", str(source)], tty=True)
    assert code == 0, err
    assert "reading claude" in err and "imported" in out
    assert env.run("forget", "deploy-note-10").code == 0
    code, out, err = _spawn(env, ["import", "claude", str(source)], tty=False)
    assert code == 0 and err == "" and "imported deploy-note-10.md as deploy-note-10.md" in out


def test_audit_shows_progress_on_a_terminal_only(env: Env) -> None:
    assert env.run("add", "project_a", "-d", "the first memory").code == 0
    code, _, err = _spawn(env, ["audit"], tty=True)
    assert code == 0 and "auditing receipts" in err
    code, _, err = _spawn(env, ["audit"], tty=False)
    assert code == 0 and err == ""
