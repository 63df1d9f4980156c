"""One consolidate request: the CLI, cron, /consolidate from a host and the MCP server share its builder."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from conftest import Env

from pipeline.config import load_config
from pipeline.transaction import ConsolidateRequest, consolidate_request

PLAN_BOUND = 4096  # the smallest plan bound the config allows


def _store(env: Env, count: int = 12) -> None:
    for i in range(count):
        assert env.run("add", f"project_note-{i}", "-d", f"note {i} about release step {i} and its checklist",
                       "-b", f"Step {i}: run the release checklist item {i} before tagging.").code == 0


def _bound_the_plan(env: Env) -> None:
    (env.home / "config.yaml").write_text(f"limits:\n  plan_bytes: {PLAN_BOUND}\n", encoding="utf-8")


def test_the_builder_takes_workers_bounds_and_environment_from_the_config(env: Env) -> None:
    env.home.mkdir(parents=True)
    (env.home / "config.yaml").write_text(
        "limits:\n  plan_bytes: 5000\n  worker_output_bytes: 70000\n  worker_output_lines: 100\n"
        "workers:\n  mine:\n    argv: [my-agent, --json]\n", encoding="utf-8")
    cfg = load_config(env.home / "config.yaml")
    request = consolidate_request(cfg, {"PATH": "/bin", "MEMFOLD_SANDBOX_DISABLE": "landlock"}, dry_run=True)
    assert isinstance(request, ConsolidateRequest) and request.dry_run is True
    limits = request.extract_limits
    assert (limits.max_plan_bytes, limits.max_stdout_bytes, limits.max_lines) == (5000, 70000, 100)
    assert request.workers["mine"].argv == ["my-agent", "--json"]
    assert request.parent_env == {"PATH": "/bin", "MEMFOLD_SANDBOX_DISABLE": "landlock"}
    with pytest.raises(TypeError):
        consolidate_request(cfg, {}, extract_limits=None)


@pytest.mark.parametrize("entry", [["hooks", "consolidate", "claude", "no-context"],
                                   ["consolidate", "--no-context"]])
def test_every_entry_point_honours_the_configured_plan_bound(env: Env, entry: list[str]) -> None:
    _store(env)
    _bound_the_plan(env)
    before = sorted(p.name for p in env.harness.iterdir())
    result = env.run("--json", *entry)
    # /consolidate from a host reports a failure in its output with exit 0 (Claude Code drops the output of a
    # failing command); the CLI exits 4.
    assert result.code == (0 if entry[0] == "hooks" else 4), (result.out, result.err)
    assert json.loads(result.out)["ok"] is False
    # The built-in planner never prints past the bound: a store whose smallest part passes it is refused.
    assert json.loads(result.out)["code"] == "planner.plan-bound"
    assert f"cannot fit limits.plan_bytes ({PLAN_BOUND} bytes)" in json.loads(result.out)["message"]
    assert sorted(p.name for p in env.harness.iterdir()) == before


def test_without_the_bound_the_host_entry_point_consolidates(env: Env) -> None:
    _store(env)
    result = env.run("--json", "hooks", "consolidate", "claude", "no-context")
    assert result.code == 0, result.err
    assert json.loads(result.out)["verified"] is True


def test_the_mcp_server_honours_the_configured_plan_bound(env: Env) -> None:
    from pipeline.apply.due import DuePolicy
    from pipeline.commands import _app
    from pipeline.errors import WorkerFailed
    from pipeline.hosts.mcp_server import Backend

    _store(env)
    _bound_the_plan(env)
    _app.STATE.home, _app.STATE.project, _app.STATE.global_scope, _app.STATE.loaded = env.home, env.project, False, None
    cfg: Any = _app.config()
    backend = Backend(svc=_app.services(), lock_timeout=0, workers=cfg.workers, due_policy=DuePolicy(24, 10),
                      request=consolidate_request(cfg, dict(os.environ)))
    with pytest.raises(WorkerFailed) as exc:
        backend.consolidate(None, None, "builtin", False)
    assert exc.value.code == "planner.plan-bound"


def _config(env: Env, text: str) -> Any:
    env.home.mkdir(parents=True, exist_ok=True)
    (env.home / "config.yaml").write_text(text, encoding="utf-8")
    return load_config(env.home / "config.yaml")


WORKERS = "workers:\n  mine:\n    argv: [my-agent, --json]\n  online:\n    argv: [agent]\n    network: true\n"


def test_the_worker_is_the_one_named_else_consolidate_worker_and_either_must_be_allowed(env: Env) -> None:
    from pipeline.errors import ConfigError, UsageError

    cfg = _config(env, WORKERS + "consolidate:\n  worker: mine\n")
    assert consolidate_request(cfg, {}).worker == "mine"
    assert consolidate_request(cfg, {}, worker="builtin").worker == "builtin"
    with pytest.raises(UsageError) as named:
        consolidate_request(cfg, {}, worker="nosuch")
    assert named.value.code == "usage.worker" and "builtin, mine, online" in (named.value.hint or "")
    with pytest.raises(ConfigError) as configured:
        consolidate_request(_config(env, WORKERS + "consolidate:\n  worker: gone\n"), {})
    assert configured.value.code == "config.worker" and "consolidate.worker" in configured.value.message


def test_a_consolidation_waits_consolidate_lock_wait_unless_the_caller_says_otherwise(env: Env) -> None:
    assert consolidate_request(_config(env, "lock:\n  timeout: 1\n"), {}).lock_timeout == 5.0
    cfg = _config(env, "consolidate:\n  lock_wait: 2.5\n")
    assert consolidate_request(cfg, {}).lock_timeout == 2.5
    assert consolidate_request(cfg, {}, lock_timeout=0.0).lock_timeout == 0.0


def test_the_mcp_server_uses_the_configured_worker_and_refuses_one_that_needs_the_network(env: Env) -> None:
    from pipeline.apply.due import DuePolicy
    from pipeline.commands import _app
    from pipeline.errors import InputRejected, UsageError
    from pipeline.hosts.mcp_server import Backend

    assert env.run("init").code == 0
    _config(env, WORKERS + "consolidate:\n  worker: online\n")
    _app.STATE.home, _app.STATE.project, _app.STATE.global_scope, _app.STATE.loaded = env.home, env.project, False, None
    cfg: Any = _app.config()
    backend = Backend(svc=_app.services(), lock_timeout=0, workers=cfg.workers, due_policy=DuePolicy(24, 10),
                      request=consolidate_request(cfg, dict(os.environ)))
    before = env.snapshot()
    with pytest.raises(InputRejected) as network:
        backend.consolidate(None, None, None, True)  # no name: the configured default, which needs the network
    assert network.value.code == "mcp.worker" and "'online'" in network.value.message
    with pytest.raises(UsageError) as unknown:
        backend.consolidate(None, None, "nosuch", True)
    assert unknown.value.code == "usage.worker"
    assert backend.consolidate(None, None, "builtin", True)["dryRun"] is True
    assert env.snapshot() == before
