"""Runs features/quality.feature: roles, the mirror's count, lock waits, list, worker parity, grounding,
bounds, the reference's scenarios and background runs, against the real CLI, real processes and hosts."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, Env, Result, _last_run, _receipts, _run
from mcp_client import with_session
from pytest_bdd import given, parsers, scenarios, then, when
from realclis import Host, RealClis, host
from role_store import build

from pipeline.planner.planjson import expanded
from pipeline.store.memory import INDEX_NAME, parse_memory

pytestmark = pytest.mark.integration

scenarios("quality.feature")

FAKE = REPO / "tests" / "workers" / "fake_plan.py"
HOLDER = """\
import sys, time
from pathlib import Path
from pipeline.apply.lock import project_lock
home = Path(sys.argv[1])
with project_lock(home / 'lock', home / 'lock.json', run_id='20261130T120000Z-0badc0de', operation='add',
                  timeout=1, now='2026-11-30T12:00:00Z'):
    print('locked', flush=True)
    time.sleep(float(sys.argv[2]))
"""


@pytest.fixture(autouse=True)
def _pythonpath(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(REPO))


def _child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "/usr/bin:/bin")])
    return {**os.environ, "PYTHONPATH": str(REPO), "PATH": path, **(extra or {})}


def _memory(title: str, description: str, body: str, *, visibility: str = "safe", modified: str = "2026-03-01",
            mtype: str = "project") -> bytes:
    return (f"---\nname: {title}\ndescription: {description}\ntype: {mtype}\nvisibility: {visibility}\n"
            f"created: 2026-01-01\nmodified: {modified}T09:00:00Z\n---\n{body}\n").encode()


def _place(env: Env, name: str, data: bytes) -> None:
    (env.harness / name).write_bytes(data)
    if parse_memory(data, name).is_safe:
        (env.mirror / name).write_bytes(data)


def _config(env: Env, ctx: dict[str, Any], section: str, key: str, value: Any) -> None:
    config = ctx.setdefault("config", {})
    config.setdefault(section, {})[key] = value
    env.home.mkdir(parents=True, exist_ok=True)
    (env.home / "config.yaml").write_text(json.dumps(config) + "\n")


def _remember(env: Env, ctx: dict[str, Any]) -> None:
    ctx["before"] = env.snapshot()
    ctx["receipts"] = [p.name for p in _receipts(env)]
    ctx["runs"] = sorted(p.name for p in (env.project_home / "runs").iterdir())
    ctx["files"] = {p.name: p.read_bytes() for p in env.harness.iterdir()}


def _plan(env: Env) -> dict[str, Any]:
    plan = json.loads((_last_run(env) / "plan.json").read_bytes())
    return expanded(plan, plan["selected"])


def _deletes(env: Env) -> dict[str, str | None]:
    return {op["name"]: op.get("into") for op in _plan(env)["operations"] if op["kind"] == "delete"}


def _spawn(env: Env, *args: str, extra: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "pipeline", *env.args(*args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=str(env.project), env=_child_env(extra))


def _finish(proc: subprocess.Popen[str], timeout: float = 300) -> Result:
    out, err = proc.communicate(timeout=timeout)
    return Result(proc.returncode, out, err)


@when(parsers.parse('I run "{command}"'))
def run_here(env: Env, ctx: dict[str, Any], command: str) -> None:
    """The shared step, with this feature's <transcript> placeholder."""
    if "<transcript>" in command:
        command = command.replace("<transcript>", str(ctx["transcript"]))
    _run(env, ctx, command)


# --- roles -----------------------------------------------------------------------------------------


SWAPS = {
    "project_timeout-chat-cron-catalog-web.md": ("Timeout chat-cron to catalog-web",
                                                 "timeout from chat-cron to catalog-web is 30 seconds"),
    "project_timeout-chat-web-catalog-cron.md": ("Timeout chat-web to catalog-cron",
                                                 "timeout from chat-web to catalog-cron is 30 seconds"),
    "project_timeout-catalog-web-chat-cron.md": ("Timeout catalog-web to chat-cron",
                                                 "timeout from catalog-web to chat-cron is 30 seconds"),
    "project_alias-db-primary.md": ("Alias db-primary", "the db-primary alias points to db-blue"),
    "project_alias-db-blue.md": ("Alias db-blue", "the db-blue alias points to db-primary"),
}


@given("memories that swap pairs, direction, and key and value, and one saved twice")
def swapped(env: Env, ctx: dict[str, Any]) -> None:
    assert env.run("init").code == 0
    for month, (name, (title, description)) in enumerate(sorted(SWAPS.items()), 3):
        _place(env, name, _memory(title, description, f"- The {description}.", modified=f"2026-{month:02d}-01"))
    _place(env, "project_lint.md", _memory("Lint config", "ruff runs with the settings in pyproject.toml",
                                           "Run ruff check before every commit."))
    _place(env, "project_lint-again.md", _memory("Lint config (again)", "ruff runs with the settings in pyproject.toml",
                                                 "Run ruff check before every commit.", modified="2026-09-01"))
    _remember(env, ctx)


@then("the plan deletes only the memory saved twice, into its newer copy")
def only_duplicate(env: Env) -> None:
    assert _deletes(env) == {"project_lint.md": "project_lint-again.md"}


@then("every memory with swapped roles is byte for byte as before")
def swaps_kept(env: Env, ctx: dict[str, Any]) -> None:
    for name in SWAPS:
        assert (env.harness / name).read_bytes() == ctx["files"][name]
        assert (env.mirror / name).read_bytes() == ctx["files"][name]


@given(parsers.parse("a labelled store of {count:d} memories with role swaps and duplicates"))
def labelled(env: Env, ctx: dict[str, Any], count: int) -> None:
    assert env.run("init").code == 0
    store = build(count, seed=11)
    for name, data in store.files.items():
        _place(env, name, data)
    ctx["store"] = store
    ctx["mirror_before"] = {p.name for p in env.mirror.iterdir() if p.name.endswith(".md") and p.name != INDEX_NAME}


@then("the plan merges exactly the labelled duplicates")
def merges_labelled(env: Env, ctx: dict[str, Any]) -> None:
    store = ctx["store"]
    assert _deletes(env) == {n: t for n, t in store.expect.items() if t != "keep"}


def _mirror_memories(env: Env) -> set[str]:
    return {p.name for p in env.mirror.iterdir() if p.name.endswith(".md") and p.name != INDEX_NAME}


@then("the mirror holds exactly the safe memories of the private store, byte for byte")
def mirror_exact(env: Env) -> None:
    after = {p.name: p.read_bytes() for p in env.harness.iterdir() if p.name != INDEX_NAME}
    safe = {n for n, data in after.items() if parse_memory(data, n).is_safe}
    assert _mirror_memories(env) == safe
    assert all((env.mirror / n).read_bytes() == after[n] for n in safe)


@then("the mirror lost exactly the safe labelled duplicates")
def mirror_lost(env: Env, ctx: dict[str, Any]) -> None:
    store = ctx["store"]
    safe_merged = {n for n, t in store.expect.items() if t != "keep" and store.visibility[n] == "safe"}
    assert ctx["mirror_before"] - _mirror_memories(env) == safe_merged and safe_merged


@when("I run the consolidation evaluation")
def evaluation(env: Env, ctx: dict[str, Any]) -> None:
    result = env.spawn("bench", "--eval", "--json", timeout=600)
    assert result.code == 0, result.err
    ctx["eval"] = json.loads(result.out)


@then(parsers.parse('its case kinds include "{a}", "{b}" and "{c}"'))
def eval_kinds(ctx: dict[str, Any], a: str, b: str, c: str) -> None:
    assert {a, b, c} <= set(ctx["eval"]["kindNames"])


@then("its merge precision is 1.0 and its merge recall is reported")
def eval_precision(ctx: dict[str, Any]) -> None:
    figures = ctx["eval"]
    assert figures["mergePrecision"] == 1.0 and figures["wrongMerges"] == []
    assert 0 < figures["mergeRecall"] <= 1.0


# --- lock waits ------------------------------------------------------------------------------------


@given("an initialised project with two exact duplicates")
def two_duplicates(env: Env, ctx: dict[str, Any]) -> None:
    assert env.run("init").code == 0
    _place(env, "project_lint.md", _memory("Lint config", "ruff runs with the settings in pyproject.toml",
                                           "Run ruff check before every commit."))
    _place(env, "project_lint-again.md", _memory("Lint config (again)", "ruff runs with the settings in pyproject.toml",
                                                 "Run ruff check before every commit.", modified="2026-09-01"))
    _remember(env, ctx)


@given(parsers.parse("the config sets {section}.{key} to {value}"))
def config_value(env: Env, ctx: dict[str, Any], section: str, key: str, value: str) -> None:
    _config(env, ctx, section, key, json.loads(value))


@given(parsers.parse("the project lock is held by another process for {seconds:g} seconds"), target_fixture="holder")
def hold_lock(env: Env, ctx: dict[str, Any], seconds: float) -> Any:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(env.project_home), str(seconds)],
                            stdout=subprocess.PIPE, text=True, env=_child_env())
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    ctx["holder"] = proc
    yield proc
    proc.kill()
    proc.wait()


@when("a consolidation starts as its own process")
def consolidation_process(env: Env, ctx: dict[str, Any]) -> None:
    started = time.monotonic()
    ctx["result"] = _finish(_spawn(env, "consolidate", "--no-context"))
    ctx["waited"] = time.monotonic() - started
    ctx["holder_done"] = ctx["holder"].poll() is not None


@then("it exits 0 after the holder let go")
def waited_then_committed(ctx: dict[str, Any]) -> None:
    result = ctx["result"]
    assert result.code == 0, result.err
    assert ctx["holder_done"]  # the holder had ended (it slept 1.5 s) when the run returned


@then("a new receipt is in the log")
def new_receipt(env: Env, ctx: dict[str, Any]) -> None:
    deadline = time.monotonic() + 120
    while len(_receipts(env)) <= len(ctx["receipts"]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(_receipts(env)) == len(ctx["receipts"]) + 1


@then(parsers.parse('it exits 3 with "{code}" naming the holder\'s run and pid'))
def refused_naming(ctx: dict[str, Any], code: str) -> None:
    result = ctx["result"]
    assert result.code == 3, result.err
    assert f"[{code}]" in result.err
    assert "run 20261130T120000Z-0badc0de (add" in result.err and f"pid {ctx['holder'].pid}" in result.err


@then(parsers.parse("it waited at least {seconds:g} seconds"))
def waited(ctx: dict[str, Any], seconds: float) -> None:
    assert ctx["waited"] >= seconds
    assert f"waited {seconds:g} s" in ctx["result"].err


@when(parsers.parse('I run "{command}" as its own process'))
def own_process(env: Env, ctx: dict[str, Any], command: str) -> None:
    ctx["result"] = _finish(_spawn(env, *shlex.split(command)))
    ctx["holder_alive"] = ctx["holder"].poll() is None


@then(parsers.parse('it exits 0 with a skip for "{reason}" while the holder still holds the lock'))
def skipped(ctx: dict[str, Any], reason: str) -> None:
    result = ctx["result"]
    assert result.code == 0, result.err
    (line,) = [json.loads(x) for x in result.out.splitlines()]
    assert line["status"] == "skipped" and line["reason"] == reason
    assert line["holder"]["pid"] == ctx["holder"].pid
    assert ctx["holder_alive"]


@when(parsers.parse("{writers:d} writer processes add {count:d} memories each and a consolidation starts among them"))
def writers_and_consolidation(env: Env, ctx: dict[str, Any], writers: int, count: int) -> None:
    script = ("import subprocess, sys\n"
              "base, tag, count = sys.argv[1:-2], sys.argv[-2], int(sys.argv[-1])\n"
              "for i in range(count):\n"
              "    done = subprocess.run([sys.executable, '-m', 'pipeline', *base, 'add', f'project_{tag}-note-{i}',\n"
              "                           '-d', f'writer {tag} note {i} about queue shard {i}'])\n"
              "    if done.returncode:\n"
              "        sys.exit(done.returncode)\n")
    procs = [subprocess.Popen([sys.executable, "-c", script, *env.args(), f"w{w}", str(count)],
                              env=_child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for w in range(writers)]
    deadline = time.monotonic() + 120
    while len(list(env.harness.glob("project_w*-note-*.md"))) < count // 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    ctx["consolidation"] = _finish(_spawn(env, "consolidate", "--no-context"))
    ctx["writers"] = [(p.wait(timeout=300), p.stderr.read() if p.stderr else "") for p in procs]
    ctx["count"] = writers * count


@then("every writer and the consolidation exited 0")
def all_zero(ctx: dict[str, Any]) -> None:
    assert ctx["consolidation"].code == 0, ctx["consolidation"].err
    assert [code for code, _ in ctx["writers"]] == [0] * len(ctx["writers"]), ctx["writers"]


@then(parsers.parse("the private store holds all {count:d} new memories"))
def all_written(env: Env, count: int) -> None:
    assert len(list(env.harness.glob("project_w*-note-*.md"))) == count


# --- list ------------------------------------------------------------------------------------------


@given(parsers.parse('an initialised project with the memory "{title}"'))
def one_memory(env: Env, ctx: dict[str, Any], title: str) -> None:
    assert env.run("add", title, "-d", f"{title.lower()} is on fridays", "-b", f"{title} body").code == 0
    _remember(env, ctx)


@given(parsers.parse('a memory file that does not parse and a file "{name}" in the private store'))
def unusable_files(env: Env, ctx: dict[str, Any], name: str) -> None:
    (env.harness / "project_broken.md").write_bytes(b"---\nname: broken\n")
    (env.harness / name).write_bytes((env.harness / "project_deploy-day.md").read_bytes())
    ctx["unusable"] = {"project_broken.md": env.harness / "project_broken.md", name: env.harness / name}


@then(parsers.parse('stdout lists "{name}" and neither unusable file'))
def stdout_lists(ctx: dict[str, Any], name: str) -> None:
    out = ctx["result"].out
    assert out.splitlines()[0].startswith(name) and len(out.splitlines()) == 1
    assert not any(bad in out for bad in ctx["unusable"])


@then(parsers.parse('stderr has one line for each unusable file naming its path and "{fix}"'))
def stderr_lines(ctx: dict[str, Any], fix: str) -> None:
    lines = ctx["result"].err.splitlines()
    assert len(lines) == len(ctx["unusable"])
    for path in ctx["unusable"].values():
        (line,) = [x for x in lines if str(path) in x]
        assert fix in line


@then(parsers.parse('the JSON lists {count:d} memory and a "broken" array with both files, their paths and "{fix}"'))
def json_broken(ctx: dict[str, Any], count: int, fix: str) -> None:
    body = ctx["result"].json()
    assert len(body["memories"]) == count and ctx["result"].err == ""
    assert {b["file"]: b["path"] for b in body["broken"]} == {n: str(p) for n, p in ctx["unusable"].items()}
    assert all(fix in b["fix"] and b["problem"] for b in body["broken"])


# --- workers ---------------------------------------------------------------------------------------


@then("no run directory was made and no lock owner was recorded")
def nothing_started(env: Env, ctx: dict[str, Any]) -> None:
    assert sorted(p.name for p in (env.project_home / "runs").iterdir()) == ctx["runs"]
    info = env.project_home / "lock.json"
    assert not info.exists() or info.read_bytes() == b""
    assert [p.name for p in _receipts(env)] == ctx["receipts"]


@given(parsers.parse('the config sets consolidate.worker to "{name}"'))
def config_worker(env: Env, ctx: dict[str, Any], name: str) -> None:
    _config(env, ctx, "consolidate", "worker", name)


@given(parsers.parse('the config names the worker "{name}" as consolidate.worker'))
def scripted_worker(env: Env, ctx: dict[str, Any], name: str) -> None:
    ctx.setdefault("config", {})["workers"] = {name: {"argv": [sys.executable, str(FAKE), "{run_dir}", "plan"],
                                                      "timeout": 120, "env": ["PYTHONPATH"]}}
    _config(env, ctx, "consolidate", "worker", name)


@when(parsers.parse("consolidation runs from {entry}"))
def run_from(env: Env, ctx: dict[str, Any], entry: str) -> None:
    if entry == "the CLI":
        result = env.spawn("consolidate", "--no-context")
    elif entry == "Claude Code's /consolidate":
        result = env.spawn("hooks", "consolidate", "claude", "no-context")
    elif entry == "cron":
        result = env.spawn("consolidate", "--all-projects", "--skip-if-locked")
    else:
        async def body(session: Any) -> Any:
            return await session.call_tool("memory_consolidate", {})

        called = with_session(env.home, env.project, body)
        assert not called.is_error, called.content
        result = Result(0, "", "")
    assert result.code == 0, (result.out, result.err)
    assert "FAILED" not in result.out


@then(parsers.parse('the newest receipt names the worker "{name}"'))
def receipt_worker(env: Env, name: str) -> None:
    receipt = json.loads(_receipts(env)[-1].read_text())
    assert receipt["worker"]["name"] == name and receipt["worker"]["kind"] == "command"


@then(parsers.parse('the output names the log file and "{text}"'))
def names_log(ctx: dict[str, Any], text: str) -> None:
    out = ctx["result"].out
    assert text in out and "started in the background" in out
    (line,) = [x for x in out.splitlines() if x.startswith("progress and result: ")]
    ctx["log"] = Path(line.removeprefix("progress and result: "))


def _wait_for_summary(log: Path) -> dict[str, Any]:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        text = log.read_text() if log.exists() else ""
        start = text.find("\n{\n")
        if start >= 0 and text.rstrip().endswith("}"):
            try:
                value = json.loads(text[start:])
            except ValueError:
                value = None
            if isinstance(value, dict):
                return value
        time.sleep(0.2)
    raise AssertionError(f"no summary in {log}")


@then("the background run ends with a new receipt and its summary in the log file")
def background_done(env: Env, ctx: dict[str, Any]) -> None:
    summary = _wait_for_summary(ctx["log"])
    assert summary["verified"] is True
    new_receipt(env, ctx)
    assert Path(summary["receipt"]).name == _receipts(env)[-1].name
    assert (ctx["log"].stat().st_mode & 0o777) == 0o600


@then("the log file holds the run's progress lines")
def progress_lines(ctx: dict[str, Any]) -> None:
    stages = [json.loads(x)["stage"] for x in ctx["log"].read_text().splitlines() if x.startswith('{"progress"')]
    assert stages[0] == "started" and "worker" in stages and "commit" in stages


# --- grounding and bounds --------------------------------------------------------------------------


@given(parsers.parse('an initialised project {git} with a project memory naming "{path}" and the directory "{folder}"'))
def grounding_project(env: Env, ctx: dict[str, Any], git: str, path: str, folder: str) -> None:
    if git == "without git":
        subprocess.run(["rm", "-rf", str(env.project / ".git")], check=True)
    assert env.run("init").code == 0
    (env.project / path).parent.mkdir(parents=True, exist_ok=True)
    (env.project / path).write_text("#!/bin/sh\n")
    assert (env.project / folder).is_dir()
    _place(env, "project_deploy.md", _memory("Deploy", f"deploys run {path}", f"Run `{path}` from a clean checkout.",
                                             visibility="private"))
    ctx["folder"] = folder


FAULTS = {
    'marks the directory "ops" found': [["set", ["grounding", {"name": "project_deploy.md"}, "observations"],
                                         [{"path": "ops", "status": "found"}]]],
    "marks the memory grounded with no observation": [
        ["set", ["grounding", {"name": "project_deploy.md"}, "observations"], []],
        ["set", ["grounding", {"name": "project_deploy.md"}, "status"], "grounded"]],
    "marks the memory not-applicable without a reason": [
        ["set", ["grounding", {"name": "project_deploy.md"}, "observations"], []],
        ["set", ["grounding", {"name": "project_deploy.md"}, "status"], "not-applicable"],
        ["del", ["grounding", {"name": "project_deploy.md"}, "reason"]]],
}


@given(parsers.parse("a worker whose plan {fault}"))
def faulty(env: Env, ctx: dict[str, Any], fault: str) -> None:
    worker = {"argv": [sys.executable, str(FAKE), "{run_dir}", "patch", json.dumps(FAULTS[fault])], "timeout": 120,
              "env": ["PYTHONPATH"]}
    (env.home / "config.yaml").write_text(json.dumps({"workers": {"fake": worker}}) + "\n")
    _remember(env, ctx)


@given("a project whose memfold home lies inside its .memory directory")
def nested_home(env: Env, ctx: dict[str, Any]) -> None:
    ctx["nested"] = env.project / ".memory" / "home"
    ctx["project_before"] = sorted(str(p) for p in env.project.rglob("*") if ".git" not in p.parts)


@when('I run "init" with that home')
def init_nested(env: Env, ctx: dict[str, Any]) -> None:
    ctx["result"] = Env(ctx["nested"], env.project).run("init")


@then("nothing was created in the project")
def nothing_created(env: Env, ctx: dict[str, Any]) -> None:
    assert sorted(str(p) for p in env.project.rglob("*") if ".git" not in p.parts) == ctx["project_before"]


@when(parsers.parse("I add a {visibility} memory of {size:d} bytes"))
def add_sized(env: Env, ctx: dict[str, Any], visibility: str, size: int) -> None:
    ctx.setdefault("before", env.snapshot())
    body = ("lorem ipsum dolor sit amet " * (size // 27 + 1))[:size]
    _run(env, ctx, f"add project_big-{visibility} -d 'a big {visibility} note' --visibility {visibility} "
                   f"-b {shlex.quote(body)}")


# --- the reference's scenarios ---------------------------------------------------------------------


@given("a project with a missing memfold home")
def missing_home(env: Env, ctx: dict[str, Any], tmp_path: Path) -> None:
    """The default home (no --home): its config lives in the XDG config dir, so it can exist first."""
    data, config = tmp_path / "xdg-data", tmp_path / "xdg-config"
    (config / "memfold").mkdir(parents=True)
    slow = {"argv": [sys.executable, str(FAKE), "{run_dir}", "sleep", "3"], "timeout": 120, "env": ["PYTHONPATH"]}
    (config / "memfold" / "config.yaml").write_text(json.dumps(
        {"workers": {"slow": slow}, "consolidate": {"worker": "slow", "lock_wait": 0}}) + "\n")
    ctx["xdg"] = {"XDG_DATA_HOME": str(data), "XDG_CONFIG_HOME": str(config), "XDG_CACHE_HOME": str(tmp_path / "c"),
                  "XDG_STATE_HOME": str(tmp_path / "s")}
    ctx["data"] = data
    assert not data.exists()


@when("two first runs start at once while the winner's worker takes 3 seconds")
def racing(env: Env, ctx: dict[str, Any]) -> None:
    argv = [sys.executable, "-m", "pipeline", "--project", str(env.project), "consolidate", "--no-context"]
    env_ = _child_env(ctx["xdg"])
    env_.pop("MEMFOLD_HOME", None)
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_,
                              cwd=str(env.project)) for _ in range(2)]
    ctx["race"] = [_finish(p) for p in procs]


@then(parsers.parse('one exits 0 and the other exits 3 with "{code}"'))
def one_wins(ctx: dict[str, Any], code: str) -> None:
    results = sorted(ctx["race"], key=lambda r: r.code)
    assert [r.code for r in results] == [0, 3], [(r.code, r.err) for r in results]
    assert f"[{code}]" in results[1].err
    homes = list((ctx["data"] / "memfold" / "projects").iterdir())
    assert len(homes) == 1 and len(list((homes[0] / "receipts").iterdir())) == 1  # the winner's run


@then("neither reports a setup error")
def no_setup_error(ctx: dict[str, Any]) -> None:
    for result in ctx["race"]:
        assert "apply.io" not in result.err and "Traceback" not in result.err and "path." not in result.err


@given("Claude Code's hooks installed with --prompt, and Codex's")
def hooks_installed(env: Env, ctx: dict[str, Any]) -> None:
    assert env.run("hooks", "install", "claude", "--prompt").code == 0
    assert env.run("hooks", "install", "codex").code == 0
    _remember(env, ctx)


@when("every installed hook command runs with its host's event on stdin")
def run_hooks(env: Env, ctx: dict[str, Any]) -> None:
    commands: list[tuple[str, str]] = []
    for settings in (env.project / ".claude" / "settings.json", env.project / ".codex" / "hooks.json"):
        for event, groups in json.loads(settings.read_text())["hooks"].items():
            commands += [(event, h["command"]) for g in groups for h in g["hooks"]]
    assert {e for e, _ in commands} == {"SessionStart", "UserPromptSubmit"} and len(commands) == 3
    ctx["hooks"], ctx["events"] = [], [e for e, _ in commands]
    for event, command in commands:
        payload = {"session_id": "s1", "transcript_path": "/nonexistent.jsonl", "cwd": str(env.project),
                   "hook_event_name": event, "prompt": "consolidate the memory now please", "source": "startup"}
        ctx["hooks"].append(subprocess.run(["/bin/sh", "-c", command], input=json.dumps(payload), text=True,
                                           capture_output=True, timeout=60, cwd=str(env.project),
                                           env=_child_env({"MEMFOLD_HOME": str(env.home)})))


@then("every hook exits 0")
def hooks_ok(ctx: dict[str, Any]) -> None:
    assert [p.returncode for p in ctx["hooks"]] == [0] * len(ctx["hooks"]), [p.stderr for p in ctx["hooks"]]
    # Session starts get the memory; a prompt's hook may add nothing. None of them consolidates.
    assert all("hookSpecificOutput" in p.stdout for e, p in zip(ctx["events"], ctx["hooks"], strict=True)
               if e == "SessionStart")


@then("no run directory was made and the receipt log is as before")
def no_runs(env: Env, ctx: dict[str, Any]) -> None:
    assert [p.name for p in _receipts(env)] == ctx["receipts"]
    assert sorted(p.name for p in (env.project_home / "runs").iterdir()) == ctx["runs"]
    info = env.project_home / "lock.json"
    assert not info.exists() or info.read_bytes() == b""
    assert env.snapshot() == ctx["before"]


@given("an initialised project with two exact duplicates and two unrelated memories")
def related_store(env: Env, ctx: dict[str, Any]) -> None:
    two_duplicates(env, ctx)
    _place(env, "project_billing.md", _memory("Billing invoices", "invoices are sent on the first of the month",
                                              "Finance signs them off."))
    _place(env, "user_editor.md", _memory("Editor", "the user edits code in neovim", "Keybindings are vim's.",
                                          mtype="user"))
    _remember(env, ctx)


@given("a session transcript that mentions only the duplicates")
def related_transcript(ctx: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    lines = [{"role": "user", "content": "remember: run ruff check before every commit"},
             {"role": "assistant", "content": "Noted: ruff check runs before each commit."}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    ctx["transcript"] = path


@then("the run selected only the duplicates")
def selected_duplicates(env: Env) -> None:
    manifest = json.loads((_last_run(env) / "manifest.json").read_text())
    assert manifest["scope"] == "related"
    assert manifest["selected"] == ["project_lint-again.md", "project_lint.md"]


@then("the duplicates were merged and the unrelated memories are byte for byte as before")
def related_outcome(env: Env, ctx: dict[str, Any]) -> None:
    assert _deletes(env) == {"project_lint.md": "project_lint-again.md"}
    assert not (env.harness / "project_lint.md").exists() and not (env.mirror / "project_lint.md").exists()
    for name in ("project_billing.md", "user_editor.md"):
        assert (env.harness / name).read_bytes() == ctx["files"][name]


KILL_POINTS = {
    "right after the worker answered": ("pipeline.transaction", "run_plan_worker", True),
    "during validation": ("pipeline.validation.plan", "validate_run", False),
    "in the check of the staged post-state": ("pipeline.transaction", "gate", False),
}


def _fork_killed(args: list[str], module: str, name: str, after: bool, out: Path) -> int | str:
    """The real CLI in a forked child, SIGKILLed at ``module.name`` (after it returns, or as it starts)."""
    pid = os.fork()
    if pid == 0:  # the child never returns into pytest
        code = 99
        try:
            fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            sys.stdout = sys.stderr = os.fdopen(1, "w", closefd=False)
            import importlib

            target = importlib.import_module(module)
            original = getattr(target, name)

            def killed(*a: Any, **k: Any) -> Any:
                if after:
                    original(*a, **k)
                sys.stdout.flush()
                os.kill(os.getpid(), signal.SIGKILL)

            setattr(target, name, killed)
            from pipeline.cli import main

            code = main(args)
        finally:
            sys.stdout.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return "killed" if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL else os.WEXITSTATUS(status)


@when(parsers.parse("a consolidation is killed {when}"))
def killed_run(env: Env, ctx: dict[str, Any], when: str, tmp_path: Path) -> None:
    module, name, after = KILL_POINTS[when]
    out = tmp_path / "child-output"
    ctx["outcome"] = _fork_killed(env.args("--json", "consolidate", "--no-context"), module, name, after, out)
    ctx["output"] = out.read_text()


@then("it reported no success")
def no_success(ctx: dict[str, Any]) -> None:
    assert ctx["outcome"] == "killed", ctx["output"]
    assert '"verified"' not in ctx["output"] and '"ok": true' not in ctx["output"]


@then("no new receipt is in the log")
def no_new_receipt(env: Env, ctx: dict[str, Any]) -> None:
    assert [p.name for p in _receipts(env)] == ctx["receipts"]
    assert not any((run / "post-receipt.json").exists() for run in (env.project_home / "runs").iterdir()
                   if run.name not in {json.loads(p.read_text())["runId"] for p in _receipts(env)})


@then(parsers.parse('after "{command}" both roots are unchanged'))
def recovered_unchanged(env: Env, ctx: dict[str, Any], command: str) -> None:
    assert env.run(command).code == 0
    assert env.snapshot() == ctx["before"]
    assert [p.name for p in _receipts(env)] == ctx["receipts"]


@given("a consolidation has committed")
def committed(env: Env, ctx: dict[str, Any]) -> None:
    assert env.run("consolidate", "--no-context").code == 0


@when(parsers.parse('I set "{field}" of the newest receipt to another digest'))
def edit_identity(env: Env, field: str) -> None:
    path = _receipts(env)[-1]
    receipt = json.loads(path.read_text())
    receipt[field] = "0" * 64
    path.write_text(json.dumps(receipt, indent=2, sort_keys=True) + "\n")


@given(parsers.parse('a file marked private placed in the mirror as "{name}"'))
def private_in_mirror(env: Env, name: str) -> None:
    (env.mirror / name).write_bytes(_memory("Leak", "a private note", "my own plans", visibility="private"))


@then(parsers.parse('the private store does not hold "{name}"'))
def harness_lacks(env: Env, name: str) -> None:
    assert not (env.harness / name).exists()


@given(parsers.parse('a file "{name}" in the private store'))
def reserved_name(env: Env, ctx: dict[str, Any], name: str) -> None:
    data = (env.harness / "project_deploy-day.md").read_bytes()
    (env.harness / name).write_bytes(data)
    ctx["placed"] = (name, data)


@then(parsers.parse('"{name}" is byte for byte as placed and the index is "{index}"'))
def reserved_kept(env: Env, ctx: dict[str, Any], name: str, index: str) -> None:
    assert ctx["placed"] == (name, (env.harness / name).read_bytes())
    names = {p.name for p in env.harness.iterdir()}
    assert index in names and names == {index, name, "project_deploy-day.md"}
    assert name not in (env.harness / index).read_text()


@then(parsers.parse('the mirror holds no "{name}"'))
def mirror_lacks_name(env: Env, name: str) -> None:
    assert name not in {p.name for p in env.mirror.iterdir()}


@given("a file outside the store holding a secret word")
def outside_secret(ctx: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "outside.md"
    path.write_bytes(b"---\nname: outside\ndescription: zanzibarquokka lives here\ntype: project\n---\nzanzibarquokka\n")
    ctx["outside"] = (path, path.read_bytes())


@when(parsers.parse('the search index is rebuilt while "{name}" is swapped for a link to that file'))
def swap_during_read(env: Env, ctx: dict[str, Any], name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline import fsutil
    from pipeline.store import indexbuild

    outside, _ = ctx["outside"]
    target = env.harness / name
    original = fsutil.read_bounded
    swaps: list[str] = []

    def swapping(path: Any, limit: Any = None, *, dir_fd: int | None = None) -> bytes:
        if str(path) == name and not swaps:
            # Between the loader's lstat of the entry and its open: the regular file becomes a link.
            target.unlink()
            target.symlink_to(outside)
            swaps.append(name)
        return original(path, limit, dir_fd=dir_fd)

    monkeypatch.setattr(fsutil, "read_bounded", swapping)
    ctx["index"] = env.project_home / "swapped-index.sqlite"
    indexbuild.rebuild(str(env.harness), str(ctx["index"]), 64 * 1024, 4096)
    assert swaps == [name]


@then("the index holds no row with the secret word")
def no_secret_row(ctx: dict[str, Any]) -> None:
    import sqlite3

    conn = sqlite3.connect(ctx["index"])
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            for row in conn.execute(f"SELECT * FROM {table}"):  # the names come from sqlite_master
                assert not any("zanzibarquokka" in str(value) for value in row), (table, row)
    finally:
        conn.close()


@then("the file outside is unchanged")
def outside_kept(ctx: dict[str, Any]) -> None:
    path, data = ctx["outside"]
    assert path.read_bytes() == data


# --- hosts in the background -----------------------------------------------------------------------


def _installed_host(env: Env, ctx: dict[str, Any], clis: RealClis, model: Any, tmp_path: Path, name: str) -> Host:
    """A real host with memfold installed into the project and a store with two exact duplicates."""
    h = host(env, clis, model, tmp_path, name, memfold_home_in_env=name != "claude")
    two_duplicates(env, ctx)
    done = h.memfold("hooks", "install", name)
    assert done.returncode == 0, done.stderr
    return h


@given("Pi with memfold's extension installed and a store with two exact duplicates", target_fixture="pi")
def pi_host(env: Env, ctx: dict[str, Any], real_clis: RealClis, fake_model: Any, tmp_path: Path) -> Host:
    return _installed_host(env, ctx, real_clis, fake_model, tmp_path, "pi")


@when(parsers.parse('Pi in RPC mode is asked for "{command}"'))
def pi_rpc(pi: Host, env: Env, ctx: dict[str, Any], command: str) -> None:
    proc = subprocess.Popen(["pi", "--mode", "rpc", "--no-session"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, cwd=str(env.project), env=pi.vars)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps({"id": "c1", "type": "prompt", "message": command}) + "\n")
    proc.stdin.flush()
    events: list[dict[str, Any]] = []
    receipts_when_accepted: int | None = None
    done = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            events.append(event)
            if event.get("type") == "response" and event.get("id") == "c1":
                nonlocal receipts_when_accepted
                receipts_when_accepted = len(_receipts(env))
            message = str(event.get("message", ""))
            if event.get("method") == "notify" and (message.startswith("memfold: consolidated")
                                                     or "FAILED" in message):
                done.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    finished = done.wait(180)
    proc.stdin.close()
    proc.terminate()
    proc.wait(30)
    assert finished, events
    ctx["events"] = events
    ctx["accepted_with"] = receipts_when_accepted


@then("Pi accepted the command before the consolidation ended")
def accepted_early(ctx: dict[str, Any]) -> None:
    events = ctx["events"]
    response = next(i for i, e in enumerate(events) if e.get("type") == "response" and e.get("id") == "c1")
    ended = next(i for i, e in enumerate(events) if str(e.get("statusText", "")).startswith("memfold: consolidated"))
    assert events[response]["success"] is True and response < ended
    assert ctx["accepted_with"] == len(ctx["receipts"])  # no receipt yet when Pi said it had the command


@then(parsers.parse('the status line showed "{progress}" and then "{end}"'))
def status_line(ctx: dict[str, Any], progress: str, end: str) -> None:
    texts = [e.get("statusText") for e in ctx["events"] if e.get("method") == "setStatus"]
    assert all(e.get("statusKey") == "memfold" for e in ctx["events"] if e.get("method") == "setStatus")
    first_end = next(i for i, t in enumerate(texts) if str(t).startswith(end))
    assert progress in texts[:first_end]


@then("a notification reported the receipt")
def notified(env: Env, ctx: dict[str, Any]) -> None:
    (note,) = [e["message"] for e in ctx["events"] if e.get("method") == "notify" and "receipt:" in e["message"]]
    assert _receipts(env)[-1].name in note


@given("Claude Code with memfold installed and a store with two exact duplicates", target_fixture="claude")
def claude_host(env: Env, ctx: dict[str, Any], real_clis: RealClis, fake_model: Any, tmp_path: Path) -> Host:
    # No MEMFOLD_HOME in the environment: Claude Code takes it from the local settings install wrote.
    return _installed_host(env, ctx, real_clis, fake_model, tmp_path, "claude")


@when(parsers.parse('Claude Code runs "{command}"'))
def claude_runs(claude: Host, ctx: dict[str, Any], command: str) -> None:
    ctx["claude"] = claude.claude(command)


@then(parsers.parse('the model was shown the log file and "{text}"'))
def claude_shown(claude: Host, ctx: dict[str, Any], text: str) -> None:
    assert claude.asked("started in the background") and claude.asked(text)
    (request,) = [r for r in claude.server.model_calls() if "progress and result: " in r.text][:1]
    line = request.text.split("progress and result: ", 1)[1]
    ctx["log"] = Path(line.split("\\n", 1)[0].split("\n", 1)[0])
