"""The real agent CLIs from npm (Claude Code, Pi, Codex, the MCP Inspector), installed once outside HOME,
and their test setup: as memfold's workers, and as the hosts memfold is installed into."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO, Env, Result
from fake_model_server import FakeModelServer

from pipeline.resources import data_dir

PACKAGES = {
    "claude": "@anthropic-ai/claude-code",
    "pi": "@mariozechner/pi-coding-agent",
    "codex": "@openai/codex",
    "inspector": "@modelcontextprotocol/inspector",
}
# What npm installs: the versions docs/hosts/index.md reports (the same list as .ci/run). The
# Inspector's 1.x and later need Node >= 22.19, so its last Node 20 line is the one pinned.
VERSIONS = {"claude": "2.1.197", "pi": "0.73.1", "codex": "0.171.0", "inspector": "0.15.0"}
SPECS = {name: f"{package}@{VERSIONS[name]}" for name, package in PACKAGES.items()}
# The executable each package puts in node_modules/.bin.
BINS = {"claude": "claude", "pi": "pi", "codex": "codex", "inspector": "mcp-inspector"}
PREFIX_ENV = "MEMFOLD_TEST_NPM_PREFIX"
CACHE = REPO / ".cache" / "npm-clis"
EXAMPLE = data_dir("procedures") / "workers.example.yaml"
SOURCES = {"pi": "pi-json", "claude": "claude-result", "codex": "codex-json"}
FAKE_KEY = "sk-memfold-fake-key-0123456789"
# What keeps each CLI from calling anything but the fake model (update checks, telemetry).
QUIET = {
    "claude": {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
               "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1"},
    "pi": {"PI_OFFLINE": "1"},
    "codex": {},
}


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
    return all(os.access(prefix / "node_modules" / ".bin" / name, os.X_OK) for name in BINS.values())


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
        done = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix), *SPECS.values()],
                              capture_output=True, text=True, env=env, timeout=600, stdin=subprocess.DEVNULL,
                              check=False)
        if done.returncode != 0 or not _installed(prefix):
            pytest.fail(f"npm install of the agent CLIs failed ({done.returncode}):\n{done.stderr[-4000:]}")


@pytest.fixture(scope="session")
def real_clis() -> RealClis:
    given = os.environ.get(PREFIX_ENV)
    prefix = Path(given).resolve() if given else CACHE
    if not _installed(prefix):
        _install(prefix)
    return RealClis(prefix)


@pytest.fixture
def fake_model() -> Iterator[FakeModelServer]:
    server = FakeModelServer().start()
    yield server
    server.stop()


def presets() -> dict[str, Any]:
    return yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))["workers"]  # type: ignore[no-any-return]


def configure(env: Env, clis: RealClis, server: FakeModelServer, monkeypatch: pytest.MonkeyPatch,
              tmp_path: Path, name: str) -> dict[str, Any]:
    """Write config.yaml from the shipped preset, pointed at the fake model; return the worker entry.

    What a user adds for a CLI installed under an npm prefix: the prefix in ``read_paths``,
    and the variables that name the provider's endpoint in ``env``.
    """
    worker = dict(presets()[name])
    extra: dict[str, str] = dict(QUIET[name])
    read_paths = [str(clis.prefix)]
    if name == "claude":
        extra["ANTHROPIC_BASE_URL"] = server.url
    elif name == "pi":
        # Pi hands its model registry's base URL to the SDK, so ANTHROPIC_BASE_URL is never read:
        # a models.json in its agent dir overrides the provider. The dir is read-only in the sandbox.
        agent = tmp_path / "pi-agent"
        agent.mkdir()
        (agent / "models.json").write_text(json.dumps({"providers": {"anthropic": {"baseUrl": server.url}}}))
        extra["PI_CODING_AGENT_DIR"] = str(agent)
        read_paths.append(str(agent))
    else:
        # Codex ignores OPENAI_BASE_URL; a custom provider also skips the WebSocket transport the
        # built-in one tries (and retries for seconds) before falling back to HTTPS.
        provider = f'{{name="fake", base_url="{server.url}/v1", env_key="OPENAI_API_KEY", wire_api="responses"}}'
        argv = list(worker["argv"])
        worker["argv"] = [*argv[:-1], "-c", 'model_provider="fake"', "-c", f"model_providers.fake={provider}",
                          argv[-1]]
    worker["env"] = [*worker["env"], *extra]
    worker["read_paths"] = read_paths
    worker["timeout"] = 60
    env.home.mkdir(parents=True, exist_ok=True)
    (env.home / "config.yaml").write_text(yaml.safe_dump({"workers": {name: worker}}))
    monkeypatch.setenv("PATH", os.pathsep.join([str(clis.bin), "/usr/bin", "/bin"]))
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "CODEX_API_KEY"):
        monkeypatch.setenv(key, FAKE_KEY)
    for key, value in extra.items():
        monkeypatch.setenv(key, value)
    return worker


def small_store(env: Env) -> None:
    """Safe and private memories, one expired and one private copy: a plan with real operations."""
    assert env.run("init").code == 0
    assert env.run("add", "user_tea", "-d", "prefers green tea", "-b", "tea, no sugar").code == 0
    assert env.run("add", "project_deploy", "-d", "deploys go through ops/deploy.sh", "--visibility", "safe",
                   "-b", "run ops/deploy.sh from main").code == 0
    assert env.run("add", "feedback_db", "-d", "integration tests hit a real database", "--visibility", "safe",
                   "-b", "no mocks for the database layer").code == 0
    assert env.run("add", "project_freeze", "-d", "release freeze until the 2026 launch", "--expires", "2026-06-01",
                   "-b", "no releases during the freeze").code == 0
    # `add` refuses an exact duplicate, so the copy arrives the way hosts write it: a file by hand.
    original = (env.harness / "user_tea.md").read_bytes()
    (env.harness / "user_tea-copy.md").write_bytes(original.replace(b"name: user_tea\n", b"name: user_tea-copy\n"))


def last_run(env: Env) -> Path:
    # Run ids share the pinned clock's timestamp: the newest is the one created last.
    return max((env.project_home / "runs").iterdir(), key=lambda p: p.stat().st_mtime_ns)


def receipt_files(env: Env) -> list[str]:
    return sorted(p.name for p in (env.project_home / "receipts").iterdir())


def why(result: Result, run_dir: Path) -> str:
    stderr = run_dir / "stderr.txt"
    return f"{result.out}\n{result.err}\n{stderr.read_text()[-3000:] if stderr.exists() else ''}"


def assert_plan_applied(env: Env, plan: dict[str, Any]) -> None:
    """Both roots hold what the plan's operations say, byte for byte; the plan changed something."""
    assert plan["operations"], "the store was built so that the plan has operations"
    for op in plan["operations"]:
        private, public = env.harness / op["name"], env.mirror / op["name"]
        if op["kind"] == "delete":
            assert not private.exists() and not public.exists(), op["name"]
            continue
        content = op["content"].encode()
        assert private.read_bytes() == content, op["name"]
        assert (public.read_bytes() == content) if op["classification"] == "safe" else not public.exists()


@dataclass
class Host:
    """A user's machine for one real host: its own HOME, a git project, a memfold home, a fake model.

    Every process gets the same environment a user's shell would: the npm CLIs and this memfold on
    PATH (the committed host files run ``memfold`` from PATH), the provider pointed at the fake model.
    """

    env: Env
    clis: RealClis
    server: FakeModelServer
    user_home: Path
    vars: dict[str, str]

    def run(self, *argv: str, timeout: float = 180, extra: dict[str, str] | None = None,
            cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                              cwd=str(cwd or self.env.project), env={**self.vars, **(extra or {})}, check=False)

    def memfold(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run("memfold", "--home", str(self.env.home), *args)

    def claude(self, *args: str) -> dict[str, Any]:
        """``claude -p ARGS --output-format json``: its result object (the run must succeed)."""
        done = self.run("claude", "-p", *args, "--output-format", "json")
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout)  # type: ignore[no-any-return]

    def receipts(self) -> list[Path]:
        """The committed receipts, oldest first: a receipt being written sits beside them under a
        temporary name until its rename, and is not one yet."""
        return sorted(p for p in (self.env.project_home / "receipts").iterdir()
                      if p.name[:8].isdigit() and p.name.endswith(".json"))

    def receipts_once(self, count: int, timeout: float = 180) -> list[Path]:
        """The receipt log once it holds ``count`` receipts: Claude Code's /consolidate starts its run in
        the background and returns, so the receipt may land after the host has answered."""
        import time

        deadline = time.monotonic() + timeout
        while len(self.receipts()) < count and time.monotonic() < deadline:
            time.sleep(0.2)
        return self.receipts()

    def snapshot_of(self, receipt: Path) -> dict[str, Any]:
        run_id = json.loads(receipt.read_text())["runId"]
        return json.loads((self.env.project_home / "runs" / run_id / "snapshot.json").read_text())  # type: ignore[no-any-return]

    def asked(self, text: str) -> bool:
        """Whether any model request so far carried ``text``."""
        return any(text in r.text for r in self.server.model_calls())


def host(env: Env, clis: RealClis, server: FakeModelServer, tmp_path: Path, name: str,
         memfold_home_in_env: bool) -> Host:
    """Set up ``name`` (claude, pi, codex) as a user has it, its provider at the fake model.

    ``memfold_home_in_env``: whether the user exports MEMFOLD_HOME (Claude Code gets it from the
    local settings ``hooks install`` writes instead).
    """
    user_home = tmp_path / "user-home"
    user_home.mkdir(exist_ok=True)
    memfold_bin = Path(sys.executable).parent
    vars_ = {"HOME": str(user_home), "LANG": "C.UTF-8", "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
             "PATH": os.pathsep.join([str(clis.bin), str(memfold_bin), "/usr/bin", "/bin"]),
             "PYTHONPATH": str(REPO), "MEMFOLD_NOW": os.environ.get("MEMFOLD_NOW", ""),
             **QUIET[name]}
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "CODEX_API_KEY"):
        vars_[key] = FAKE_KEY
    if memfold_home_in_env:
        vars_["MEMFOLD_HOME"] = str(env.home)
    if name == "claude":
        vars_["ANTHROPIC_BASE_URL"] = server.url
    elif name == "pi":
        agent = user_home / ".pi" / "agent"
        agent.mkdir(parents=True, exist_ok=True)
        (agent / "models.json").write_text(json.dumps({"providers": {"anthropic": {"baseUrl": server.url}}}))
    elif name == "codex":
        codex = user_home / ".codex"
        codex.mkdir(exist_ok=True)
        (codex / "config.toml").write_text(
            'model_provider = "fake"\n\n[model_providers.fake]\nname = "fake"\n'
            f'base_url = "{server.url}/v1"\nenv_key = "OPENAI_API_KEY"\nwire_api = "responses"\n')
    return Host(env, clis, server, user_home, vars_)


def host_store(h: Host) -> str:
    """An initialised store with one memory; returns the description the model must be shown."""
    description = "production deploys go out on Fridays after 14:00 UTC"
    assert h.memfold("init").returncode == 0
    added = h.memfold("add", "project_deploy-day", "-d", description, "-b", "Deploy on Fridays after 14:00 UTC.")
    assert added.returncode == 0, added.stderr
    return description
