"""The shipped presets with the real agent CLIs from npm, under memfold's sandbox, against a local fake model."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from conftest import Env
from fake_model_server import FakeModelServer, Reply, drops_facts_reply, prose_reply, run_dir_of, two_plans_reply
from realclis import (
    FAKE_KEY,
    SOURCES,
    RealClis,
    assert_plan_applied,
    configure,
    last_run,
    receipt_files,
    small_store,
    why,
)

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("name", ["claude", "pi", "codex"])
def test_a_real_cli_consolidates_through_its_preset_under_the_sandbox(
        env: Env, real_clis: RealClis, fake_model: FakeModelServer, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path, name: str) -> None:
    small_store(env)
    configure(env, real_clis, fake_model, monkeypatch, tmp_path, name)

    result = env.run("--json", "consolidate", "--no-context", "--worker", name)

    run_dir = last_run(env)
    assert result.code == 0, why(result, run_dir)
    receipt = json.loads(Path(result.json()["receipt"]).read_text())
    assert receipt["worker"]["name"] == name and receipt["worker"]["planSource"] == SOURCES[name]
    # The model was asked about this very run, and the plan it answered is the one bound by the receipt.
    calls = fake_model.model_calls()
    assert calls and all(run_dir_of(c.text) == run_dir for c in calls), [c.path for c in fake_model.requests]
    # Pi inlines task.md (`@{task}`); Claude Code and Codex get the preset's prompt naming it.
    task = (run_dir / "task.md").read_text().strip()
    asked = task[:400] if name == "pi" else f"Read {run_dir / 'task.md'} and follow it exactly."
    assert any(asked in c.text for c in calls)
    plan = (run_dir / "plan.json").read_bytes()
    assert json.loads(plan) == json.loads(fake_model.replies[-1])
    assert receipt["planDigest"].removeprefix("sha256:") == hashlib.sha256(plan).hexdigest()
    # The memories on disk are what the plan said, and the receipt describes exactly those files.
    assert_plan_applied(env, json.loads(plan))
    assert receipt["finalHashes"] == env.receipted()
    # The key went to the model server only, never into what memfold keeps or the server's log.
    assert all(FAKE_KEY not in json.dumps(r.headers) for r in fake_model.requests)
    assert all(FAKE_KEY.encode() not in p.read_bytes() for p in run_dir.iterdir() if p.is_file())


@pytest.mark.parametrize(("name", "reply", "reason"), [
    ("claude", prose_reply, "is prose, not a JSON object"),
    ("pi", prose_reply, "is prose, not a JSON object"),
    ("codex", prose_reply, "is prose, not a JSON object"),
    ("claude", two_plans_reply, "is not exactly one JSON object"),
    ("codex", two_plans_reply, "is not exactly one JSON object"),
])
def test_a_real_cli_whose_model_gives_no_single_plan_changes_nothing(
        env: Env, real_clis: RealClis, fake_model: FakeModelServer, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path, name: str, reply: Reply, reason: str) -> None:
    """An agent's final message is the plan only when it is exactly one JSON plan object."""
    small_store(env)
    configure(env, real_clis, fake_model, monkeypatch, tmp_path, name)
    fake_model.reply = reply
    before, chain = env.snapshot(), receipt_files(env)

    result = env.run("--json", "consolidate", "--no-context", "--worker", name)

    assert result.code == 4, why(result, last_run(env))
    error = result.json()
    assert error["code"] == "worker.no-plan" and reason in error["message"], error
    assert fake_model.model_calls()  # the CLI really ran and asked the model
    assert env.snapshot() == before and receipt_files(env) == chain
    assert not (last_run(env) / "plan.json").exists() and not (last_run(env) / "post-receipt.json").exists()


def test_the_sandbox_is_in_force_for_a_real_cli(
        env: Env, real_clis: RealClis, fake_model: FakeModelServer, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    """Pi writes auth.json into its agent dir: without the sandbox it does, inside it cannot."""
    small_store(env)
    configure(env, real_clis, fake_model, monkeypatch, tmp_path, "pi")
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
    # Scratch, the only place the CLI could write, is deleted after the run.
    assert not (last_run(env) / "scratch").exists()

    unsandboxed = env.run("--json", "consolidate", "--no-context", "--worker", "pi", "--unsafe-no-sandbox")
    assert unsandboxed.code == 0, why(unsandboxed, last_run(env))
    assert auth.is_file()  # the same CLI, unconfined, does write there


@pytest.mark.parametrize("name", ["claude", "pi", "codex"])
def test_a_real_cli_whose_model_drops_a_memory_without_a_successor_is_refused(
        env: Env, real_clis: RealClis, fake_model: FakeModelServer, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path, name: str) -> None:
    """The plan comes out of the real stream intact, and validation holds a third-party plan to the same rule."""
    small_store(env)
    configure(env, real_clis, fake_model, monkeypatch, tmp_path, name)
    fake_model.reply = drops_facts_reply
    before, chain = env.snapshot(), receipt_files(env)

    result = env.run("--json", "consolidate", "--no-context", "--worker", name)

    run_dir = last_run(env)
    assert result.code == 1, why(result, run_dir)
    error = result.json()
    assert error["code"] == "plan.delete.unaccounted" and "user_tea" in error["message"], error
    # What was validated is exactly what the model answered: extraction kept it whole.
    assert json.loads((run_dir / "plan.json").read_bytes()) == json.loads(fake_model.replies[-1])
    assert env.snapshot() == before and receipt_files(env) == chain
