"""The shipped presets with the real agent CLIs from npm, under memfold's sandbox, against a local fake model."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import Env, Result
from fake_model_server import FakeModelServer, Reply, prose_reply, run_dir_of, two_plans_reply
from realclis import RealClis, real_clis  # noqa: F401  (the session fixture)

from pipeline.resources import data_dir

pytestmark = pytest.mark.integration

EXAMPLE = data_dir("procedures") / "workers.example.yaml"
SOURCES = {"pi": "pi-json", "claude": "claude-result", "codex": "codex-json"}
FAKE_KEY = "sk-memfold-fake-key-0123456789"
# Everything each CLI needs to talk to the fake model and to nothing else.
QUIET = {
    "claude": {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
               "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1"},
    "pi": {"PI_OFFLINE": "1"},
    "codex": {},
}


def presets() -> dict[str, Any]:
    return yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))["workers"]  # type: ignore[no-any-return]


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    fake = FakeModelServer().start()
    yield fake
    fake.stop()


def configure(env: Env, clis: RealClis, server: FakeModelServer, monkeypatch: pytest.MonkeyPatch,
              tmp_path: Path, name: str) -> dict[str, Any]:
    """Write config.yaml from the shipped preset, pointed at the fake model; return the worker entry."""
    worker = dict(presets()[name])
    extra: dict[str, str] = dict(QUIET[name])
    read_paths = [str(clis.prefix)]
    if name == "claude":
        extra["ANTHROPIC_BASE_URL"] = server.url
    elif name == "pi":
        # Pi passes its model registry's base URL to the SDK, so ANTHROPIC_BASE_URL is not read:
        # a models.json in its agent dir overrides the provider. The dir is read-only in the sandbox.
        agent = tmp_path / "pi-agent"
        agent.mkdir()
        (agent / "models.json").write_text(json.dumps({"providers": {"anthropic": {"baseUrl": server.url}}}))
        extra["PI_CODING_AGENT_DIR"] = str(agent)
        read_paths.append(str(agent))
    else:
        # A custom provider: Codex's built-in one tries a WebSocket transport first and retries it.
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


def why(result: Result, run_dir: Path) -> str:
    stderr = run_dir / "stderr.txt"
    return f"{result.out}\n{result.err}\n{stderr.read_text()[-3000:] if stderr.exists() else ''}"


@pytest.mark.parametrize("name", ["claude", "pi", "codex"])
def test_a_real_cli_consolidates_through_its_preset_under_the_sandbox(
        env: Env, real_clis: RealClis, server: FakeModelServer, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path, name: str) -> None:
    small_store(env)
    configure(env, real_clis, server, monkeypatch, tmp_path, name)

    result = env.run("--json", "consolidate", "--no-context", "--worker", name)

    run_dir = last_run(env)
    assert result.code == 0, why(result, run_dir)
    receipt = json.loads(Path(result.json()["receipt"]).read_text())
    assert receipt["worker"]["name"] == name and receipt["worker"]["planSource"] == SOURCES[name]
    # The model was asked about this very run, and the plan it answered is the one bound by the receipt.
    calls = server.model_calls()
    assert calls and all(run_dir_of(c.text) == run_dir for c in calls), [c.path for c in server.requests]
    task = (run_dir / "task.md").read_text()
    assert any(str(run_dir / "task.md") in c.text or task.strip()[:200] in c.text for c in calls)
    plan = (run_dir / "plan.json").read_bytes()
    assert json.loads(plan) == json.loads(server.replies[-1])
    assert receipt["planDigest"].removeprefix("sha256:") == hashlib.sha256(plan).hexdigest()
    # The memories on disk are what the plan said: the duplicate is gone from both roots.
    deleted = {op["name"] for op in json.loads(plan)["operations"] if op["kind"] == "delete"}
    assert deleted, json.loads(plan)["operations"]
    for root in (env.harness, env.mirror):
        assert not any((root / n).exists() for n in deleted)
        assert receipt["finalHashes"]["harness" if root == env.harness else "public"].keys() == {
            p.name for p in root.iterdir() if p.is_file()}
    # The key went to the model server only, never into what memfold keeps.
    assert all(FAKE_KEY.encode() not in p.read_bytes() for p in run_dir.iterdir() if p.is_file())


def receipts(env: Env) -> list[str]:
    return sorted(p.name for p in (env.project_home / "receipts").iterdir())


@pytest.mark.parametrize(("name", "reply", "reason"), [
    ("claude", prose_reply, "is prose, not a JSON object"),
    ("pi", prose_reply, "is prose, not a JSON object"),
    ("codex", prose_reply, "is prose, not a JSON object"),
    ("claude", two_plans_reply, "is not exactly one JSON object"),
    ("codex", two_plans_reply, "is not exactly one JSON object"),
])
def test_a_real_cli_whose_model_gives_no_single_plan_changes_nothing(
        env: Env, real_clis: RealClis, server: FakeModelServer, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path, name: str, reply: Reply, reason: str) -> None:
    """An agent's final message is the plan only when it is exactly one JSON plan object."""
    small_store(env)
    configure(env, real_clis, server, monkeypatch, tmp_path, name)
    server.reply = reply
    before, chain = env.snapshot(), receipts(env)

    result = env.run("--json", "consolidate", "--no-context", "--worker", name)

    assert result.code == 4, why(result, last_run(env))
    error = result.json()
    assert error["code"] == "worker.no-plan" and reason in error["message"], error
    assert server.model_calls()  # the CLI really ran and asked the model
    assert env.snapshot() == before and receipts(env) == chain
    assert not (last_run(env) / "plan.json").exists() and not (last_run(env) / "post-receipt.json").exists()


def test_the_sandbox_is_in_force_for_a_real_cli(
        env: Env, real_clis: RealClis, server: FakeModelServer, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    """Pi writes auth.json into its agent dir: without the sandbox it does, inside it cannot."""
    small_store(env)
    configure(env, real_clis, server, monkeypatch, tmp_path, "pi")
    auth = tmp_path / "pi-agent" / "auth.json"

    result = env.run("--json", "consolidate", "--no-context", "--worker", "pi")

    assert result.code == 0, why(result, last_run(env))
    sandbox = json.loads(Path(result.json()["receipt"]).read_text())["sandbox"]
    assert sandbox["enforced"] is True and sandbox["filesystem"] == "landlock" and sandbox["missing"] == []
    assert sandbox["seccomp"]["metadata"] == "denied" and sandbox["seccomp"]["unix_sockets"] == "denied"
    assert sandbox["network"] == {"requested": "allowed", "tcp": "not-restricted", "sockets": "allowed",
                                  "unix": "denied"}
    assert sandbox["no_new_privs"] is True and sandbox["pid_namespace"] is True and sandbox["reads"] == "narrowed"
    assert not auth.exists()
    # The CLI's own state went to the scratch HOME, the only place it may write.
    assert (last_run(env) / "scratch" / "home").is_dir()

    unsandboxed = env.run("--json", "consolidate", "--no-context", "--worker", "pi", "--unsafe-no-sandbox")
    assert unsandboxed.code == 0, why(unsandboxed, last_run(env))
    assert auth.is_file()  # the same CLI, unconfined, does write there
