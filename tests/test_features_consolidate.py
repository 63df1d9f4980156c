"""Runs features/consolidate.feature and features/validate.feature against the real CLI and workers."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, Env, _last_run, _receipts, _run, op_path
from pytest_bdd import given, parsers, scenarios, then, when

pytestmark = pytest.mark.integration

scenarios("consolidate.feature", "validate.feature")

FAKE = REPO / "tests" / "workers" / "fake_plan.py"
# A GitHub classic token shape, written reversed into the worker's config so that only the
# worker's own output can hold it forwards: whatever holds it forwards came from the plan.
TOKEN = "ghp_" + "Zq8Rt4Lm2Vx6Nc0Bp3Kd7Hs1Wy5Fj9Ga2Ue4"
HANG_TOKEN = "memfold-hang-" + hashlib.sha256(str(os.getpid()).encode()).hexdigest()[:16]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _memory(name: str, description: str, visibility: str, body: str, *, mtype: str = "project",
            expires: str | None = None) -> bytes:
    extra = f"expires: {expires}\n" if expires else ""
    return (f"---\nname: {name}\ndescription: {description}\ntype: {mtype}\nvisibility: {visibility}\n"
            f"created: 2026-11-01\nmodified: 2026-11-01T09:00:00Z\n{extra}---\n{body}\n").encode()


def _add(env: Env, *args: str) -> None:
    result = env.run("add", *args)
    assert result.code == 0, result.err


def _remember(env: Env, ctx: dict[str, Any]) -> None:
    ctx["before"] = env.snapshot()
    ctx["receipt_count"] = len(_receipts(env)) if (env.home / "projects").exists() else 0


def _workers(env: Env, ctx: dict[str, Any], name: str, argv: list[str], timeout: float = 60) -> None:
    """The user config names every fake worker of the scenario; PYTHONPATH lets it import the planner."""
    if "receipt_count" not in ctx:
        _remember(env, ctx)
    workers = ctx.setdefault("workers", {})
    workers[name] = {"argv": [sys.executable, str(FAKE), "{run_dir}", *argv], "timeout": timeout,
                     "env": ["PYTHONPATH"]}
    env.home.mkdir(parents=True, exist_ok=True)
    (env.home / "config.yaml").write_text(json.dumps({"workers": workers}, indent=2) + "\n")


def _patch(env: Env, ctx: dict[str, Any], edits: list[list[Any]]) -> None:
    _workers(env, ctx, "fake", ["patch", json.dumps(edits)])


def _newest_run(env: Env) -> Path:
    runs = env.project_home / "runs"
    return max(runs.iterdir(), key=lambda p: (p.stat().st_mtime_ns, p.name))


def _body(ctx: dict[str, Any]) -> dict[str, Any]:
    value = ctx["result"].json()
    assert isinstance(value, dict)
    return value


@pytest.fixture(autouse=True)
def _pythonpath(monkeypatch: pytest.MonkeyPatch) -> None:
    # In-process runs pass os.environ to the worker's allowlist; a fake worker needs the package.
    monkeypatch.setenv("PYTHONPATH", str(REPO))


# --- stores -------------------------------------------------------------------------------------


@given("a store with a duplicate pair, a paraphrase, an expired, a private and a safe memory")
def rich_store(env: Env, ctx: dict[str, Any]) -> None:
    _add(env, "project_deploy", "-d", "Production deploys go through ops/deploy.sh blue/green", "-t", "project",
         "-b", "Deploys run ops/deploy.sh.\nThe script switches blue and green.")
    _add(env, "project_ci", "-d", "CI runs the full test suite on every push to main", "--visibility", "safe",
         "-b", "CI runs make test on every push.")
    _add(env, "project_ci-paraphrase", "-d", "On each push to main the CI runs the complete test suite",
         "--visibility", "safe", "-b", "Every push triggers make test in CI.")
    _add(env, "user_token", "-d", "The staging token lives in the team vault", "-t", "user",
         "-b", "Ask ops for vault access.")
    _add(env, "project_freeze", "-d", "Release freeze until the 2026 launch", "--expires", "2026-06-01",
         "-b", "No releases during the freeze.")
    # `add` refuses an exact duplicate, so the copy arrives the way hosts write it: a file by hand.
    original = (env.harness / "project_deploy.md").read_bytes()
    (env.harness / "project_deploy-copy.md").write_bytes(original.replace(b"name: project_deploy\n",
                                                                          b"name: project_deploy-copy\n"))
    ctx["deploy_facts"] = {b"Deploys run ops/deploy.sh.", b"The script switches blue and green."}
    _remember(env, ctx)


@given(parsers.parse('the memory "{name}" stating "{first}" and "{second}"'))
def stating_memory(env: Env, ctx: dict[str, Any], name: str, first: str, second: str) -> None:
    _add(env, name, "-d", first, "-b", f"{first}.\n{second}.")
    _remember(env, ctx)


@given(parsers.parse('an older hand-written "{name}" stating "{first}" and "{second}"'))
def older_memory(env: Env, ctx: dict[str, Any], name: str, first: str, second: str) -> None:
    data = _memory(name, first, "private", f"{first}.\n{second}.")
    (env.harness / f"{name}.md").write_bytes(data.replace(b"created: 2026-11-01", b"created: 2026-01-01")
                                             .replace(b"modified: 2026-11-01T09:00:00Z", b"modified: 2026-01-01T09:00:00Z"))
    _remember(env, ctx)


@when(parsers.parse('I rewrite "{old}" as "{new}" in "{name}" by hand'))
def rewrite_by_hand(env: Env, old: str, new: str, name: str) -> None:
    path = env.harness / name
    data = path.read_bytes()
    assert old.encode() in data
    path.write_bytes(data.replace(old.encode(), new.encode()))


@then(parsers.parse('the summary\'s dropped lines of "{name}" are "{lines}"'))
def dropped_lines_are(ctx: dict[str, Any], name: str, lines: str) -> None:
    assert _body(ctx)["dropped"] == {name: lines.split("|")}


@then(parsers.parse('"{gone}" is gone and "{kept}" holds "{line}"'))
def gone_and_kept(env: Env, gone: str, kept: str, line: str) -> None:
    assert not (env.harness / gone).exists()
    assert line.encode() in (env.harness / kept).read_bytes().split(b"\n")


@given(parsers.parse('a store of two private memories and one safe memory, and the repository file "{path}"'))
def small_store(env: Env, ctx: dict[str, Any], path: str) -> None:
    target = env.project / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("# Guide\n")
    _add(env, "project_alpha", "-d", "The API server listens on port 8080", "-b", "make run starts it.")
    _add(env, "project_beta", "-d", "Releases are tagged from main", "--visibility", "safe",
         "-b", "git tag vX.Y.Z on main.")
    _add(env, "user_gamma", "-d", "Prefers short commit messages", "-t", "user", "-b", "One line, imperative.")
    _remember(env, ctx)


@given("a transcript that mentions none of the memories", target_fixture="transcript")
def quiet_transcript(env: Env, ctx: dict[str, Any], tmp_path: Path) -> Path:
    _remember(env, ctx)
    path = tmp_path / "session.jsonl"
    lines = [{"role": "user", "content": "What is the weather like on Jupiter?"},
             {"role": "assistant", "content": "Stormy, with ammonia clouds."}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@given(parsers.parse('a transcript that mentions "{name}"'), target_fixture="transcript")
def transcript_naming(tmp_path: Path, name: str) -> Path:
    path = tmp_path / "session.jsonl"
    lines = [{"role": "user", "content": f"Check {name}: the API listens on port 8080."},
             {"role": "assistant", "content": "Confirmed, the API port is 8080."}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@when(parsers.parse('I run "{command}"'))
def run_with_transcript(env: Env, ctx: dict[str, Any], request: pytest.FixtureRequest, command: str) -> None:
    """The shared step, plus the <transcript> and <committed run> placeholders of this feature."""
    if "<transcript>" in command:
        command = command.replace("<transcript>", str(request.getfixturevalue("transcript")))
    if "<committed run>" in command:
        command = command.replace("<committed run>", _last_run(env).name)
    _run(env, ctx, command)
    if ctx["result"].code == 0 and "--json" in command:
        ctx["summary"] = ctx["result"].json()


@given(parsers.parse('the memory "{name}" added in a process of its own, and no state cache'))
def added_without_cache(env: Env, name: str) -> None:
    result = env.spawn("add", name, "-d", f"how {name} work", "-b", "They go through ops/deploy.sh.")
    assert result.code == 0, result.err
    (env.project_home / "cache" / "state.bin").unlink(missing_ok=True)


@when(parsers.parse('I run "{command}" as a process of its own'))
def run_as_process(env: Env, ctx: dict[str, Any], command: str) -> None:
    ctx["spawned"] = env.spawn(*command.split())


@then("that process exited 0 with its whole JSON summary, which names its receipt")
def spawned_summary(ctx: dict[str, Any]) -> None:
    result = ctx["spawned"]
    assert result.code == 0, result.err
    summary = json.loads(result.out)
    assert summary["dryRun"] is False and Path(summary["receipt"]).is_file()


@then("the state cache was written as the process ended")
def state_cache_written(env: Env) -> None:
    # An exit handler writes it: the process ends without the interpreter's teardown, not without them.
    cache = env.project_home / "cache" / "state.bin"
    assert cache.is_file() and cache.stat().st_size > 0


@given("every fsync and rename is recorded")
def record_fsyncs(monkeypatch: pytest.MonkeyPatch, ctx: dict[str, Any]) -> None:
    import threading

    from pipeline import fsutil

    events: list[tuple[str, str]] = []
    lock = threading.Lock()
    real_fsync, real_rename = fsutil.ops.fsync, fsutil.ops.rename

    def fsync(fd: int) -> None:
        real_fsync(fd)
        with lock:  # recorded once durable; run files are fsynced on a thread of their own
            events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))

    def rename(src: str, dst: str, **at: int) -> None:
        with lock:
            events.append(("rename", op_path(dst, at.get("dst_dir_fd"))))
        real_rename(src, dst, **at)

    monkeypatch.setattr(fsutil.ops, "fsync", fsync)
    monkeypatch.setattr(fsutil.ops, "rename", rename)
    ctx["events"] = events


@then("the run's snapshot, manifest, task, plan and validation were fsynced before the journal's commit point")
def run_files_durable_first(env: Env, ctx: dict[str, Any]) -> None:
    run = _last_run(env)
    events = ctx["events"]
    commit = events.index(("rename", str(run / "journal.json")))
    for name in ("snapshot.json", "manifest.json", "task.md", "plan.json", "validation.json"):
        assert ("fsync", str(run / name)) in events[:commit], name
    assert (run / "plan.json").read_bytes() and json.loads((run / "validation.json").read_bytes())["ok"] is True


# --- fake workers -------------------------------------------------------------------------------


@given(parsers.parse("a worker whose plan has {field} set to another value"))
def wrong_identity(env: Env, ctx: dict[str, Any], field: str) -> None:
    value = "20261130T120000Z-00000000" if field == "runId" else "0" * 64
    _patch(env, ctx, [["set", [field], value]])


@given(parsers.parse('a worker whose plan leaves "{name}" out of selected'))
def short_selection(env: Env, ctx: dict[str, Any], name: str) -> None:
    _patch(env, ctx, [["set", ["selected"], sorted(n for n in _memory_names(env) if n != name)]])


def _memory_names(env: Env) -> list[str]:
    return sorted(p.name for p in env.harness.iterdir() if p.name != "MEMORY.md")


_FAULTS: dict[str, Callable[[str], list[list[Any]]]] = {
    "missing a name": lambda art: [["del", [art, 0]]],
    "naming one twice": lambda art: [["dup", [art, 0]]],
    "naming an unknown one": lambda art: [["dup", [art, 0]],
                                          ["set", [art, -1, "files" if art == "clusters" else "name"],
                                           ["project_ghost.md"] if art == "clusters" else "project_ghost.md"]],
}


@given(parsers.parse("a worker whose plan has {artifact} {fault}"))
def artifact_fault(env: Env, ctx: dict[str, Any], artifact: str, fault: str) -> None:
    _patch(env, ctx, _FAULTS[fault](artifact))


@given(parsers.parse('a worker whose plan gives "{name}" the verdict "{verdict}"'))
def bad_verdict(env: Env, ctx: dict[str, Any], name: str, verdict: str) -> None:
    _patch(env, ctx, [["set", ["staleness", {"name": name}, "verdict"], verdict]])


@given(parsers.parse('a worker whose plan observes "{path}" as found'))
def observation(env: Env, ctx: dict[str, Any], path: str) -> None:
    _patch(env, ctx, [["append", ["grounding", 0, "observations"], {"path": path, "status": "found"}]])


def _content(env: Env, name: str) -> str:
    return (env.harness / name).read_text()


def _op(name: str, kind: str, classification: str, content: str | None = None) -> dict[str, Any]:
    op: dict[str, Any] = {"name": name, "kind": kind, "classification": classification}
    if content is not None:
        op["content"] = content
    return op


@given(parsers.parse("a worker whose plan adds {operation}"))
def added_operation(env: Env, ctx: dict[str, Any], operation: str) -> None:
    fresh = _memory("project_new", "A new fact about the build cache", "private", "ccache is on.").decode()
    edits: dict[str, list[list[Any]]] = {
        'a delete of "project_beta.md"': [["append", ["operations"], _op("project_beta.md", "delete", "safe")]],
        'two deletes of "user_gamma.md"': [["append", ["operations"], _op("user_gamma.md", "delete", "private")],
                                           ["append", ["operations"], _op("user_gamma.md", "delete", "private")]],
        'a create of the existing "project_alpha.md"': [
            ["append", ["operations"], _op("project_alpha.md", "create", "private", _content(env, "project_alpha.md"))]],
        'a create of "project_big.md" over the size bound': [
            ["append", ["operations"], _op("project_big.md", "create", "private", fresh)],
            ["pad", ["operations", -1, "content"], 70_000]],
        'a safe create of "project_new.md" whose content is private': [
            ["append", ["operations"], _op("project_new.md", "create", "safe", fresh)]],
    }
    _patch(env, ctx, edits[operation])


@given(parsers.parse('a worker whose plan makes "{name}" safe'))
def publish(env: Env, ctx: dict[str, Any], name: str) -> None:
    content = _content(env, name).replace("visibility: private\n", "visibility: safe\n")
    _patch(env, ctx, [["append", ["operations"], _op(name, "rewrite", "safe", content)]])


@given(parsers.parse('a worker whose plan creates the safe "{name}" carrying the description of "{source}" '
                    'with one character added'))
def near_copy(env: Env, ctx: dict[str, Any], name: str, source: str) -> None:
    description = _content(env, source).split("description: ", 1)[1].split("\n", 1)[0]
    middle = len(description) // 2
    body = f"Reminder: {description[:middle]}x{description[middle:]}."
    content = _memory(name.removesuffix(".md"), "notes for the team", "safe", body).decode()
    _patch(env, ctx, [["append", ["operations"], _op(name, "create", "safe", content)]])


@given(parsers.parse('a worker whose plan creates the safe "{name}" holding a GitHub token'))
def leaky(env: Env, ctx: dict[str, Any], name: str) -> None:
    content = _memory(name.removesuffix(".md"), "The CI token for the release job", "safe",
                      "token: " + TOKEN[::-1]).decode()
    head, tail = content.split(TOKEN[::-1])
    op = _op(name, "create", "safe", "")
    _patch(env, ctx, [["append", ["operations"], op],
                      ["set", ["operations", -1, "content"], head + "@@TOKEN@@" + tail],
                      ["replace", ["operations", -1, "content"], "@@TOKEN@@", {"$rev": TOKEN[::-1]}]])


ACME_RULE = {"id": "acme-internal-token", "category": "credential", "description": "ACME internal service token",
             "pattern": r"\b(acme_[a-z0-9]{16})\b"}


@given(parsers.parse('a worker whose plan creates the safe "{name}" holding an ACME service token'))
def acme_token(env: Env, ctx: dict[str, Any], name: str) -> None:
    content = _memory(name.removesuffix(".md"), "The ACME service the release job calls", "safe",
                      "token: acme_0f3a9c2e7b1d4a68").decode()
    _patch(env, ctx, [["append", ["operations"], _op(name, "create", "safe", content)]])
    ctx["runs_before"] = sorted(p.name for p in (env.project_home / "runs").iterdir())


def _user_rule(env: Env, rule: dict[str, str]) -> None:
    # The worker steps write config.yaml as JSON (a YAML subset); the rule joins what they wrote.
    config = json.loads((env.home / "config.yaml").read_text())
    config["privacy"] = {"rules": [rule]}
    (env.home / "config.yaml").write_text(json.dumps(config, indent=2) + "\n")


@given(parsers.parse('the config adds a privacy rule "{rule_id}" for ACME service tokens'))
def user_privacy_rule(env: Env, rule_id: str) -> None:
    _user_rule(env, {**ACME_RULE, "id": rule_id})


@given(parsers.parse('the config adds a privacy rule "{rule_id}" for ACME service tokens in the screen "{screen}"'))
def screened_user_privacy_rule(env: Env, rule_id: str, screen: str) -> None:
    _user_rule(env, {**ACME_RULE, "id": rule_id, "screen": screen})


@given(parsers.parse('the config adds a privacy rule "{rule_id}" without a pattern'))
def broken_user_privacy_rule(env: Env, rule_id: str) -> None:
    _user_rule(env, {k: v for k, v in {**ACME_RULE, "id": rule_id}.items() if k != "pattern"})


@then("no run dir was added")
def no_run_added(env: Env, ctx: dict[str, Any]) -> None:
    assert sorted(p.name for p in (env.project_home / "runs").iterdir()) == ctx["runs_before"]


@then("both roots and the receipt log are unchanged")
def roots_and_log_unchanged(env: Env, ctx: dict[str, Any]) -> None:
    assert env.snapshot() == ctx["before"]
    assert len(_receipts(env)) == ctx["receipt_count"]


@given(parsers.parse('a worker "{name}" that sleeps {seconds:d} seconds before printing the planner\'s plan'))
def slow_worker(env: Env, ctx: dict[str, Any], name: str, seconds: int) -> None:
    _workers(env, ctx, name, ["sleep", str(seconds)])


@given(parsers.parse('a worker "{name}" that prints "All checks PASSED" and no plan'))
def lying_worker(env: Env, ctx: dict[str, Any], name: str) -> None:
    _workers(env, ctx, name, ["prose"])


@given(parsers.parse('a worker "{name}" that starts a detached grandchild and hangs, with a timeout of '
                     '{seconds:d} seconds'))
def stuck_worker(env: Env, ctx: dict[str, Any], name: str, seconds: int) -> None:
    _workers(env, ctx, name, ["hang", HANG_TOKEN], timeout=seconds)


@given(parsers.parse('a worker "{name}" that prints {lines:d} lines of {pad:d} bytes ending with the plan as an '
                     'event line'))
def noisy_worker(env: Env, ctx: dict[str, Any], name: str, lines: int, pad: int) -> None:
    _workers(env, ctx, name, ["lines", json.dumps({"lines": lines, "pad": pad})])


# --- processes ----------------------------------------------------------------------------------


def _popen(env: Env, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "pipeline", *env.args(*args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=str(env.project),
                            env={**os.environ, "PYTHONPATH": str(REPO)})


def _until(condition: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@when(parsers.parse('a consolidation with worker "{name}" is started as a process and holds the lock'))
def holder(env: Env, ctx: dict[str, Any], procs: list[subprocess.Popen[str]], name: str) -> None:
    proc = _popen(env, "consolidate", "--no-context", "--worker", name)
    procs.append(proc)
    info = env.project_home / "lock.json"

    def holder_run() -> str | None:
        try:
            owner = json.loads(info.read_text())
        except (OSError, ValueError):
            return None
        # lock.json outlives a lock; the holder's run dir appears only once it holds it.
        run_id = owner.get("runId")
        return run_id if run_id and (env.project_home / "runs" / run_id).is_dir() else None

    ctx["holder"] = (proc, _until(holder_run, 30, "the first consolidation to take the lock"))


@then("the error names the first consolidation's run")
def names_first(ctx: dict[str, Any]) -> None:
    _, run_id = ctx["holder"]
    assert run_id in ctx["result"].err, ctx["result"].err


@then("the first consolidation exits 0")
def first_exits(env: Env, ctx: dict[str, Any]) -> None:
    proc, run_id = ctx["holder"]
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, (out, err)
    assert json.loads(_receipts(env)[-1].read_text())["runId"] == run_id


def _token_pids() -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if HANG_TOKEN.encode() in cmdline:
            pids.append(int(entry))
    return pids


@when(parsers.parse('a consolidation with worker "{name}" runs as a process'))
def timed_out(env: Env, ctx: dict[str, Any], procs: list[subprocess.Popen[str]], name: str) -> None:
    proc = _popen(env, "consolidate", "--no-context", "--worker", name, "--json")
    procs.append(proc)
    # Two command lines carry the token: the worker's argv and the grandchild's code.
    ctx["alive"] = _until(lambda: len(_token_pids()) >= 2 and _token_pids(), 20, "the worker and its grandchild")
    out, err = proc.communicate(timeout=60)
    ctx["proc"] = (proc.returncode, out, err)


@then("while it ran the worker and its grandchild were alive")
def were_alive(ctx: dict[str, Any]) -> None:
    assert len(ctx["alive"]) >= 2


@then(parsers.parse('it exited {code:d} naming "{error}"'))
def exited(ctx: dict[str, Any], code: int, error: str) -> None:
    returncode, out, err = ctx["proc"]
    assert returncode == code, (out, err)
    assert json.loads(out)["code"] == error


@then("no process with the worker's token is left")
def none_left() -> None:
    # Killing is synchronous for the group; a reparented grandchild may take a moment to be reaped.
    deadline = time.monotonic() + 5
    while _token_pids() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _token_pids() == []


# --- injected failures --------------------------------------------------------------------------


@when(parsers.parse('the private memory is edited while the worker runs "{command}"'))
def edit_during_worker(env: Env, ctx: dict[str, Any], monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    import pipeline.transaction as transaction

    real = transaction.run_plan_worker
    target = env.harness / "user_token.md"

    def worker_then_edit(*args: Any, **kwargs: Any) -> Any:
        outcome = real(*args, **kwargs)
        with open(target, "ab") as fh:
            fh.write(b"edited while the worker ran\n")
        ctx["edited"] = target.read_bytes()
        return outcome

    monkeypatch.setattr(transaction, "run_plan_worker", worker_then_edit)
    _run(env, ctx, command)


@then("only the hand edit changed the roots")
def only_hand_edit(env: Env, ctx: dict[str, Any]) -> None:
    expected = {**ctx["before"], "harness": dict(ctx["before"]["harness"])}
    expected["harness"]["user_token.md"] = sha(ctx["edited"])
    assert env.snapshot() == expected


@when(parsers.parse('the {nth:d}th rename of the commit fails during "{command}"'))
def failing_rename(env: Env, ctx: dict[str, Any], monkeypatch: pytest.MonkeyPatch, nth: int, command: str) -> None:
    import pipeline.transaction as transaction
    from pipeline.fsutil import ops

    real_commit, real_rename = transaction.commit_run, ops.rename
    done: list[str] = []
    calls = [0]

    def rename(src: str, dst: str, **at: int) -> None:
        # Exactly one failure: the rollback that follows must be able to rename again.
        calls[0] += 1
        if calls[0] == nth:
            raise OSError(28, "No space left on device (injected)")
        real_rename(src, dst, **at)
        done.append(op_path(dst, at.get("dst_dir_fd")))

    def commit(*args: Any, **kwargs: Any) -> Any:
        # Only the commit's renames fail: run-dir artifacts before it are written normally.
        monkeypatch.setattr(ops, "rename", rename)
        try:
            return real_commit(*args, **kwargs)
        finally:
            monkeypatch.setattr(ops, "rename", real_rename)

    monkeypatch.setattr(transaction, "commit_run", commit)
    _run(env, ctx, command)
    ctx["renamed"] = done


@then("some memory was already renamed into place before the failure")
def renamed_first(env: Env, ctx: dict[str, Any]) -> None:
    roots = {str(env.harness), str(env.mirror)}
    landed = [p for p in ctx["renamed"] if str(Path(p).parent) in roots and not Path(p).name.startswith(".")]
    assert landed, ctx["renamed"]


# --- run dir and receipt edits ------------------------------------------------------------------


@when("I rewrite the transcript")
def rewrite_transcript(env: Env, ctx: dict[str, Any], transcript: Path) -> None:
    run = _last_run(env)
    ctx["kept"] = {"snapshot": (run / "snapshot.json").read_bytes(), "receipt": _receipts(env)[-1].read_bytes(),
                   "post": (run / "post-receipt.json").read_bytes()}
    transcript.write_text(json.dumps({"role": "user", "content": "Something else entirely, port 9090."}) + "\n")


@then("the run's snapshot.json and its receipt are byte-identical to before")
def snapshot_kept(env: Env, ctx: dict[str, Any]) -> None:
    run = _last_run(env)
    assert (run / "snapshot.json").read_bytes() == ctx["kept"]["snapshot"]
    assert _receipts(env)[-1].read_bytes() == ctx["kept"]["receipt"]
    assert (run / "post-receipt.json").read_bytes() == ctx["kept"]["post"]
    assert b"9090" not in ctx["kept"]["snapshot"] and b"8080" in ctx["kept"]["snapshot"]


@when("I copy the dry run's plan.json over the committed run's plan.json")
def swap_plan(env: Env, ctx: dict[str, Any]) -> None:
    committed, dry = _last_run(env), _newest_run(env)
    assert dry != committed and not (dry / "post-receipt.json").exists()
    assert (dry / "plan.json").read_bytes() != (committed / "plan.json").read_bytes()
    shutil.copyfile(dry / "plan.json", committed / "plan.json")


def _post_receipt(env: Env, ctx: dict[str, Any]) -> Path:
    """The newest run's post receipt, kept from the first doctoring step on: it is also the log's
    newest entry (one file, two names), so after a doctoring the log no longer says which run it was."""
    path: Path = ctx.setdefault("post_receipt", _last_run(env) / "post-receipt.json")
    return path


@when("I remove the phase from the newest run's post receipt")
def drop_phase(env: Env, ctx: dict[str, Any]) -> None:
    path = _post_receipt(env, ctx)
    receipt = json.loads(path.read_text())
    del receipt["phase"]
    path.write_text(json.dumps(receipt, indent=2, sort_keys=True) + "\n")


@when('I set the phase to "pre" in the newest run\'s post receipt')
def pre_phase(env: Env, ctx: dict[str, Any]) -> None:
    path = _post_receipt(env, ctx)
    receipt = json.loads(path.read_text())
    receipt["phase"] = "pre"
    path.write_text(json.dumps(receipt, indent=2, sort_keys=True) + "\n")


@when("I put the previous run's receipt in place of the newest run's post receipt")
def foreign_receipt(env: Env, ctx: dict[str, Any]) -> None:
    first, _ = _receipts(env)[-2:]
    shutil.copyfile(first, _post_receipt(env, ctx))


@when("I verify the newest run's post receipt file")
def verify_file(env: Env, ctx: dict[str, Any]) -> None:
    ctx["result"] = env.run("verify", str(_post_receipt(env, ctx)))


# --- outcomes -----------------------------------------------------------------------------------


@then(parsers.parse('the plan is rejected with "{code}" at "{path}"'))
def rejected_at(env: Env, ctx: dict[str, Any], code: str, path: str) -> None:
    issues = _rejected(env, ctx)
    assert any(i["code"] == code and i["path"] == path for i in issues), issues


@then(parsers.parse('the plan is rejected with "{code}" in "{artifact}"'))
def rejected_in(env: Env, ctx: dict[str, Any], code: str, artifact: str) -> None:
    issues = _rejected(env, ctx)
    assert any(i["code"] == code and i["path"].startswith(f"$.{artifact}") for i in issues), issues


def _rejected(env: Env, ctx: dict[str, Any]) -> list[dict[str, str]]:
    """Exit 1, nothing written: both roots byte-identical and no receipt added."""
    result = ctx["result"]
    assert result.code == 1, (result.out, result.err)
    body = _body(ctx)
    assert body["ok"] is False and body["exitCode"] == 1
    assert env.snapshot() == ctx["before"]
    assert len(_receipts(env)) == ctx["receipt_count"]
    run = _newest_run(env)
    assert not (run / "post-receipt.json").exists() and not (run / "journal.json").exists()
    assert json.loads((run / "validation.json").read_text())["ok"] is False
    issues: list[dict[str, str]] = body["errors"]
    return issues


@then(parsers.parse('the error code is "{code}"'))
def error_code(ctx: dict[str, Any], code: str) -> None:
    assert _body(ctx)["code"] == code


@then("no receipt was added")
def no_receipt(env: Env, ctx: dict[str, Any]) -> None:
    assert len(_receipts(env)) == ctx["receipt_count"]


@then(parsers.parse("{count:d} receipt was added"))
def receipts_added(env: Env, ctx: dict[str, Any], count: int) -> None:
    assert len(_receipts(env)) == ctx["receipt_count"] + count


@then(parsers.parse("{count:d} receipt was written"))
def receipts_written(env: Env, count: int) -> None:
    assert len(_receipts(env)) == count


@then(parsers.parse("the outcome is {outcome}"))
def outcome(env: Env, ctx: dict[str, Any], outcome: str) -> None:
    body = _body(ctx)
    if outcome == "committed":
        assert body["ok"] is True and Path(body["receipt"]).is_file()
        assert sha((Path(body["runDir"]) / "plan.json").read_bytes()) == body["planDigest"]
    else:
        assert body["code"] == outcome
        assert env.snapshot() == ctx["before"]
        assert len(_receipts(env)) == ctx["receipt_count"]


@then("the duplicate pair is merged into one file that keeps every fact line")
def dup_merged(env: Env, ctx: dict[str, Any]) -> None:
    survivors = [n for n in ("project_deploy.md", "project_deploy-copy.md") if (env.harness / n).exists()]
    assert len(survivors) == 1, survivors
    lines = set((env.harness / survivors[0]).read_bytes().splitlines())
    assert ctx["deploy_facts"] <= lines


@then("the paraphrase is merged into the safe memory")
def paraphrase_merged(env: Env, ctx: dict[str, Any]) -> None:
    summary = ctx["summary"]
    assert "project_ci-paraphrase.md" in summary["merged"]
    assert not (env.harness / "project_ci-paraphrase.md").exists()
    assert not (env.mirror / "project_ci-paraphrase.md").exists()
    assert (env.harness / "project_ci.md").exists()


@then("the expired memory is gone from both roots")
def expired_gone(env: Env, ctx: dict[str, Any]) -> None:
    assert not (env.harness / "project_freeze.md").exists() and not (env.mirror / "project_freeze.md").exists()
    assert "project_freeze.md" in ctx["summary"]["deleted"]
    assert b"project_freeze" not in (env.harness / "MEMORY.md").read_bytes()


@then("the mirror holds exactly the safe memories, byte-identical to the private copies")
def mirror_exact(env: Env) -> None:
    from pipeline.store.memory import parse_memory

    safe = sorted(n for n in _memory_names(env)
                  if parse_memory((env.harness / n).read_bytes(), n).visibility == "safe")
    mirrored = sorted(p.name for p in env.mirror.iterdir() if p.name != "MEMORY.md")
    assert safe == mirrored == ["project_ci.md"]
    for name in safe:
        assert (env.mirror / name).read_bytes() == (env.harness / name).read_bytes()
    assert b"user_token" not in (env.mirror / "MEMORY.md").read_bytes()


@then(parsers.parse("the summary is a verified no-op with {count:d} operations"))
def verified_no_op(env: Env, ctx: dict[str, Any], count: int) -> None:
    summary = ctx["summary"]
    assert summary["noOp"] is True and summary["verified"] is True
    assert summary["merged"] == summary["rewritten"] == summary["created"] == summary["deleted"] == []
    plan = json.loads((Path(summary["runDir"]) / "plan.json").read_bytes())
    assert len(plan["operations"]) == count
    receipt = json.loads(Path(summary["receipt"]).read_bytes())
    assert receipt["operations"] == [] and receipt["phase"] == "post"


@then(parsers.parse('the summary has exactly the keys "{keys}"'))
def summary_keys(ctx: dict[str, Any], keys: str) -> None:
    assert sorted(ctx["summary"]) == sorted(keys.split())


@then("the summary's planDigest is the sha256 of the run's plan.json")
def plan_digest(ctx: dict[str, Any]) -> None:
    summary = ctx["summary"]
    run = Path(summary["runDir"])
    assert sha((run / "plan.json").read_bytes()) == summary["planDigest"]
    assert json.loads(Path(summary["receipt"]).read_bytes())["planDigest"].removeprefix("sha256:") == \
        summary["planDigest"]


@then("the private store holds only an empty index, the mirror nothing, and the chain head is beside it")
def empty_roots(env: Env) -> None:
    assert [p.name for p in env.harness.iterdir()] == ["MEMORY.md"]
    assert (env.harness / "MEMORY.md").read_bytes() == b"# Memory Index\n"
    # No index in a mirror with no memory file: it would stand in the way of a teammate's first commit of one.
    assert list(env.mirror.iterdir()) == []
    assert env.snapshot()["heads"] == {"<chain head>": "the head of the newest receipt"}


@then("the run's manifest selects nothing")
def selects_nothing(env: Env, ctx: dict[str, Any]) -> None:
    manifest = json.loads((Path(ctx["summary"]["runDir"]) / "manifest.json").read_bytes())
    assert manifest["selected"] == [] and manifest["scope"] == "related"
    assert manifest["contextMode"] == "transcript"


@then("the sha256 of the run's snapshot.json is the manifest's artifactHash and snapshotDigest")
def snapshot_digest(env: Env) -> None:
    run = _last_run(env)
    digest = sha((run / "snapshot.json").read_bytes())
    manifest = json.loads((run / "manifest.json").read_bytes())
    assert manifest["artifactHash"] == manifest["snapshotDigest"] == digest


@then("the receipt's artifactHash is the sha256 of the run's snapshot.json")
def receipt_artifact(env: Env) -> None:
    run = _last_run(env)
    receipt = json.loads(_receipts(env)[-1].read_bytes())
    assert receipt["artifactHash"].removeprefix("sha256:") == sha((run / "snapshot.json").read_bytes())


@then("the run's snapshot says the context is disabled")
def disabled(env: Env) -> None:
    snapshot = json.loads((_last_run(env) / "snapshot.json").read_bytes())
    assert snapshot["contextMode"] == "disabled" and snapshot["entries"] == [] and snapshot["candidates"] == []


@then("the token appears in no output and in no file outside the private store and the run dirs")
def no_leak(env: Env, ctx: dict[str, Any], tmp_path: Path) -> None:
    result = ctx["result"]
    assert TOKEN not in result.out and TOKEN not in result.err
    runs = env.project_home / "runs"
    # The worker did print it: the run dir's copy of stdout proves the check below could fail.
    assert any(TOKEN.encode() in (run / "stdout.jsonl").read_bytes() for run in runs.iterdir()
               if (run / "stdout.jsonl").is_file())
    for path in tmp_path.rglob("*"):
        if path.is_symlink() or not path.is_file():
            continue
        if env.harness in path.parents or runs in path.parents:
            continue
        assert TOKEN.encode() not in path.read_bytes(), path


@then("the run dirs are private to their owner")
def private_runs(env: Env) -> None:
    runs = env.project_home / "runs"
    for run in runs.iterdir():
        assert stat.S_IMODE(run.stat().st_mode) == 0o700, run
