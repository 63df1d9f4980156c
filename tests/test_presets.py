"""The shipped worker presets (procedures/workers.example.yaml), end to end with fake agent CLIs."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO, Env

from pipeline.config import load_config
from pipeline.planner.planjson import plan_json
from pipeline.planner.run import plan_run
from pipeline.resources import data_dir

FAKES = REPO / "tests" / "fake_agents"
EXAMPLE = data_dir("procedures") / "workers.example.yaml"
SOURCES = {"pi": "pi-json", "claude": "claude-result", "codex": "codex-json"}


def presets() -> dict[str, Any]:
    return yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))["workers"]  # type: ignore[no-any-return]


def test_the_example_is_a_valid_user_config(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    shutil.copy(EXAMPLE, config)
    workers = load_config(config).workers
    assert set(workers) == set(SOURCES)
    for name, worker in workers.items():
        assert worker.network is True and worker.env, name  # a model needs the network and a key
        assert worker.argv[0] == name


def test_the_example_ships_in_the_wheel() -> None:
    # hatch force-includes the whole procedures/ dir as pipeline/_data/procedures.
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert '"procedures" = "pipeline/_data/procedures"' in pyproject
    assert EXAMPLE.parent.name == "procedures" and EXAMPLE.is_file()


@pytest.mark.parametrize("name", ["pi", "claude", "codex"])
def test_presets_read_only_flags(name: str) -> None:
    argv = presets()[name]["argv"]
    joined = " ".join(argv)
    if name == "pi":
        assert argv[argv.index("--tools") + 1] == "read,grep,find,ls" and "--no-extensions" in argv
    if name == "claude":
        assert argv[argv.index("--permission-mode") + 1] == "dontAsk"
        assert not {"Bash", "Write", "Edit"} & set(argv[argv.index("--allowedTools") + 1].split(","))
    if name == "codex":
        assert argv[argv.index("--sandbox") + 1] == "read-only" and "--json" in argv
    assert "{task}" in joined


@pytest.mark.integration
@pytest.mark.parametrize("name", ["pi", "claude", "codex"])
def test_preset_consolidates_end_to_end(env: Env, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    assert env.run("init").code == 0
    assert env.run("add", "user_tea", "-d", "prefers green tea", "-b", "tea").code == 0
    assert env.run("add", "project_deploy", "-d", "deploys go through ops/deploy.sh", "--visibility", "safe",
                   "-b", "ops/deploy.sh").code == 0
    preset = dict(presets()[name])
    # The fake agents are Python scripts that build the real plan: they need this package.
    preset["env"] = [*preset["env"], "PYTHONPATH"]
    (env.home / "config.yaml").write_text(json.dumps({"workers": {name: preset}}))
    monkeypatch.setenv("PATH", os.pathsep.join([str(FAKES), str(Path(sys.executable).parent), "/usr/bin", "/bin"]))
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-fake")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    before = env.snapshot()

    result = env.run("--json", "consolidate", "--no-context", "--worker", name)

    assert result.code == 0, result.err
    summary = result.json()
    receipt = json.loads(Path(summary["receipt"]).read_text())
    run_dir = Path(summary["runDir"])
    assert receipt["worker"]["name"] == name and receipt["worker"]["kind"] == "command"
    assert receipt["worker"]["planSource"] == SOURCES[name]
    assert receipt["worker"]["argv"][0] == name  # resolved through PATH inside the sandbox
    # The plan the agent put in its final message is exactly what was validated and bound.
    # plan.json holds the validated plan one item a line; the planner printed the same plan packed.
    assert (run_dir / "plan.json").read_bytes() == plan_json(json.loads(plan_run(run_dir)))
    assert receipt["sandbox"]["enforced"] is True and receipt["sandbox"]["network"]["requested"] == "allowed"
    assert receipt["sandbox"]["network"]["sockets"] == "allowed"
    assert env.snapshot() == before  # a verified no-op on two distinct memories
    assert b"sk-fake" not in (run_dir / "stdout.jsonl").read_bytes()


@pytest.mark.integration
def test_a_preset_whose_agent_lacks_its_key_fails_with_exit_4(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    assert env.run("init").code == 0
    preset = {**presets()["claude"], "env": ["PYTHONPATH"]}
    (env.home / "config.yaml").write_text(json.dumps({"workers": {"claude": preset}}))
    monkeypatch.setenv("PATH", os.pathsep.join([str(FAKES), str(Path(sys.executable).parent), "/usr/bin", "/bin"]))
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-fake")  # set, but not named in the worker's env

    result = env.run("consolidate", "--no-context", "--worker", "claude")

    assert result.code == 4 and "worker.exit" in result.err
    stderr = next((env.project_home / "runs").iterdir()) / "stderr.txt"
    assert "no API key" in stderr.read_text()


@pytest.mark.integration
def test_an_agent_installed_outside_the_default_reads_needs_its_read_path(
        env: Env, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Like a CLI under ~/.npm-global: the sandbox lets the worker read only what the config names."""
    prefix = tmp_path / "npm-global" / "bin"
    prefix.mkdir(parents=True)
    for name in ("pi", "_agent.py"):
        shutil.copy2(FAKES / name, prefix / name)
    assert env.run("init").code == 0
    assert env.run("add", "user_tea", "-d", "prefers green tea", "-b", "tea").code == 0
    preset = {**presets()["pi"], "env": [*presets()["pi"]["env"], "PYTHONPATH"]}
    monkeypatch.setenv("PATH", os.pathsep.join([str(prefix), str(Path(sys.executable).parent), "/usr/bin", "/bin"]))
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-fake")

    (env.home / "config.yaml").write_text(json.dumps({"workers": {"pi": preset}}))
    assert env.run("consolidate", "--no-context", "--worker", "pi").code == 4  # not readable in the sandbox

    (env.home / "config.yaml").write_text(json.dumps({"workers": {"pi": {**preset, "read_paths": [str(prefix)]}}}))
    result = env.run("--json", "consolidate", "--no-context", "--worker", "pi")
    assert result.code == 0, result.err
    receipt = json.loads(Path(result.json()["receipt"]).read_text())
    assert receipt["worker"]["readPaths"] == [str(prefix)]

    for opened in (str(env.home), str(env.home.parent), str(tmp_path)):
        (env.home / "config.yaml").write_text(json.dumps({"workers": {"pi": {**preset, "read_paths": [opened]}}}))
        refused = env.run("consolidate", "--no-context", "--worker", "pi")
        assert refused.code == 2 and "usage.worker-read-path" in refused.err, opened

    (env.home / "config.yaml").write_text(json.dumps({"workers": {"pi": {**preset, "read_paths": ["relative/bin"]}}}))
    assert env.run("consolidate", "--no-context", "--worker", "pi").code == 2  # the config check refuses it
