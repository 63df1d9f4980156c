"""Shared fixtures: an isolated home and project, and a runner for the real CLI."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _no_real_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Any write to the default home fails: HOME lies below a regular file."""
    blocker = tmp_path_factory.mktemp("blocked") / "not-a-dir"
    blocker.write_text("HOME is unusable in tests\n")
    monkeypatch.setenv("HOME", str(blocker / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(blocker / "data"))
    monkeypatch.delenv("MEMFOLD_HOME", raising=False)
    monkeypatch.setenv("MEMFOLD_NOW", "2026-11-30T12:00:00Z")


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@dataclass
class Env:
    home: Path
    project: Path

    def args(self, *args: str) -> list[str]:
        return ["--home", str(self.home), "--project", str(self.project), *args]

    def run(self, *args: str, stdin: str | None = None) -> Result:
        """The real CLI, in this process (fast)."""
        from pipeline.cli import main

        out, err = io.StringIO(), io.StringIO()
        old_stdin = sys.stdin
        if stdin is not None:
            sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode()))
        try:
            with redirect_stdout(out), redirect_stderr(err):
                code = main(self.args(*args))
        finally:
            sys.stdin = old_stdin
        return Result(code, out.getvalue(), err.getvalue())

    def spawn(self, *args: str, env: dict[str, str] | None = None, timeout: float = 120) -> Result:
        """The real CLI, as its own process."""
        proc = subprocess.run(
            [sys.executable, "-m", "pipeline", *self.args(*args)],
            capture_output=True, text=True, timeout=timeout, cwd=str(self.project),
            env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)

    @property
    def project_home(self) -> Path:
        homes = list((self.home / "projects").iterdir())
        assert len(homes) == 1, homes
        return homes[0]

    @property
    def harness(self) -> Path:
        return self.project_home / "memory"

    @property
    def mirror(self) -> Path:
        return self.project / ".memory"

    def snapshot(self) -> dict[str, dict[str, str]]:
        """Every file of both roots (names and sha256), temps included."""
        return {"harness": tree_hashes(self.harness), "public": tree_hashes(self.mirror)}


def tree_hashes(root: Path) -> dict[str, str]:
    if not root.exists():
        return {}
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.iterdir()) if p.is_file()}


@pytest.fixture
def env(tmp_path: Path) -> Env:
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    return Env(home=tmp_path / "home", project=project)
