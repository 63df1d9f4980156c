"""The real agent CLIs from npm (Claude Code, Pi, Codex), installed once into a cache dir outside HOME."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO

PACKAGES = {
    "claude": "@anthropic-ai/claude-code",
    "pi": "@mariozechner/pi-coding-agent",
    "codex": "@openai/codex",
}
PREFIX_ENV = "MEMFOLD_TEST_NPM_PREFIX"
CACHE = REPO / ".cache" / "npm-clis"


@dataclass(frozen=True)
class RealClis:
    prefix: Path

    @property
    def bin(self) -> Path:
        return self.prefix / "node_modules" / ".bin"

    def version(self, name: str) -> str:
        manifest = self.prefix / "node_modules" / PACKAGES[name] / "package.json"
        return str(json.loads(manifest.read_text(encoding="utf-8"))["version"])


def _installed(prefix: Path) -> bool:
    return all(os.access(prefix / "node_modules" / ".bin" / name, os.X_OK) for name in PACKAGES)


def _install(prefix: Path) -> None:
    """npm install into ``prefix`` under a lock, so parallel test processes install once."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: the real agent CLIs cannot be fetched")
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix.parent / f"{prefix.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _installed(prefix):
            return
        # npm's own cache and config go below the prefix: the tests' HOME is unusable by design.
        env = {**os.environ, "npm_config_cache": str(prefix / ".npm-cache"), "npm_config_update_notifier": "false"}
        done = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix), *PACKAGES.values()],
                              capture_output=True, text=True, env=env, timeout=600, stdin=subprocess.DEVNULL)
        if done.returncode != 0 or not _installed(prefix):
            pytest.fail(f"npm install of the agent CLIs failed ({done.returncode}):\n{done.stderr[-4000:]}")


@pytest.fixture(scope="session")
def real_clis() -> RealClis:
    given = os.environ.get(PREFIX_ENV)
    prefix = Path(given).resolve() if given else CACHE
    if not _installed(prefix):
        _install(prefix)
    return RealClis(prefix)
