"""Crash torture: SIGKILL at random instants and injected I/O faults across consolidation and add."""

from __future__ import annotations

import errno
import os
import random
import shutil
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Env

from pipeline import fsutil

# Twelve unrelated topics; each is stored once and again as one or two rewordings, so the
# built-in planner has real merges to do while `add` (exact folded match) still accepts them.
TOPICS = [
    ("deploy", "production deploys go through the blue green script in ops deploy",
     "Run ops/deploy.sh with the blue green flag; it waits for health checks before switching traffic."),
    ("testdb", "integration tests must hit a real postgres database not mocks",
     "Mocked database tests passed while the migration broke production last quarter; use the compose db."),
    ("lint", "the linter runs ruff with the strict preset before every commit",
     "Configure ruff through pyproject with the strict preset; pre-commit calls it on staged files."),
    ("release", "releases are tagged from main after the changelog is updated",
     "Update CHANGELOG.md, bump the version in pyproject, tag vX.Y.Z on main and push the tag."),
    ("cache", "the api responses are cached in redis for five minutes",
     "Redis keys use the request path; the ttl of five minutes keeps dashboards fresh enough."),
    ("queue", "background jobs run on the celery queue named default",
     "Celery workers consume the default queue; long exports go to the slow queue instead."),
    ("style", "the user prefers short answers with code first",
     "Lead with the code change, then one or two sentences of explanation; no long preambles."),
    ("review", "pull requests need two approvals before merging",
     "Branch protection requires two approving reviews and green checks on every pull request."),
    ("logging", "structured logging uses json lines with a request id field",
     "Every log line is a json object; the request id comes from the incoming header or is generated."),
    ("docs", "documentation lives in the docs folder built with mkdocs",
     "Run mkdocs serve to preview; the site deploys from the gh-pages branch on every release."),
    ("ci", "continuous integration runs on github actions with a matrix of pythons",
     "The workflow tests python 3.11 and 3.12 on ubuntu; a nightly job runs the slow suite."),
    ("secrets", "service credentials come from the vault agent at startup",
     "Never commit credentials; the vault agent writes them to a tmpfs file the service reads once."),
]


@pytest.fixture
def fast_env(tmp_path: Path) -> Iterator[Env]:
    """Like ``env``, but on /dev/shm when it is a tmpfs: hundreds of restores stay cheap."""
    import subprocess
    import tempfile

    shm = Path("/dev/shm")
    base = Path(tempfile.mkdtemp(prefix="memfold-torture-", dir=shm)) if os.access(shm, os.W_OK) else tmp_path
    project = base / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    yield Env(home=base / "home", project=project)
    if base != tmp_path:
        shutil.rmtree(base, ignore_errors=True)


def _reword(text: str, n: int) -> str:
    words = text.split()
    # Swap two inner words and add a filler: same tokens for the planner, a different folded string.
    if len(words) > 4:
        words[1], words[2] = words[2], words[1]
    return " ".join(words) + (" again" if n == 1 else " as noted")


def seed_store(env: Env, *, topics: int = 12, copies: int = 2) -> int:
    """A realistic store: every topic once plus rewordings (duplicates); half of them safe. Returns the count."""
    env.home.mkdir(parents=True, exist_ok=True)
    # Few run dirs keep each restore cheap; the receipt log (what the audit walks) is never pruned.
    (env.home / "config.yaml").write_text("runs: {keep: 3}\n")
    assert env.run("init").code == 0
    count = 0
    for i, (key, description, body) in enumerate(TOPICS[:topics]):
        kind = "user" if key == "style" else "feedback" if key in ("testdb", "review") else "project"
        visibility = "safe" if i % 2 == 0 else "private"
        for n in range(copies + 1):
            name = f"{kind}_{key}" if n == 0 else f"{kind}_{key}-note{n}"
            desc = description if n == 0 else _reword(description, n)
            text = body if n == 0 else _reword(body, n)
            result = env.run("add", name, "-d", desc, "-t", kind, "--visibility", visibility, "-b", text)
            assert result.code == 0, result.err
            count += 1
    return count


def save(env: Env, saved: Path) -> None:
    shutil.rmtree(saved, ignore_errors=True)
    shutil.copytree(env.home, saved / "home", symlinks=True)
    shutil.copytree(env.project, saved / "project", symlinks=True)


def restore(env: Env, saved: Path) -> None:
    """Put back the home, the mirror and the chain heads beside it (memfold writes nothing else of the
    project's but the .gitattributes block, which a project without git never gets)."""
    for live, name in ((env.home, "home"), (env.mirror, "project/.memory"), (env.heads.parent, "project/.memfold")):
        if not (saved / name).exists():
            shutil.rmtree(live, ignore_errors=True)
            continue
        for _ in range(50):
            try:
                shutil.rmtree(live)
                break
            except FileNotFoundError:
                break
            except OSError:  # a killed run's sandboxed worker may still be exiting
                time.sleep(0.05)
        shutil.copytree(saved / name, live, symlinks=True)


def temps_anywhere(*roots: Path) -> list[str]:
    """Every memfold temp file below the given trees (roots, run dirs, the project home itself)."""
    found = []
    for root in roots:
        for folder, _dirs, files in os.walk(root):
            found += [str(Path(folder) / f) for f in files if f.startswith(fsutil.TEMP_PREFIX)]
    return found


def roots_state(env: Env) -> dict[str, dict[str, str]]:
    return env.snapshot()


def inprocess_worker(choice: Any, *, run_dir: Path, layout: Any, parent_env: Any, unsafe_no_sandbox: bool,
                     limits: Any, launcher: Any = None, started: Any = None, write: Any = None,
                     defer: Any = None) -> Any:
    """The built-in planner called in this process: the parent's I/O is what is under test, not the sandbox.
    (The launcher started ahead is left unused: the transaction stops it.)

    Like the worker stage it stands in for, it writes the plan's exact bytes as the run's plan.json.
    """
    from pipeline.fsutil import write_artifact
    from pipeline.planner.run import plan_run
    from pipeline.worker.extract import extract_plan
    from pipeline.worker.spawn import WorkerOutcome

    if started is not None:
        started()  # as the worker stage does once its worker is on its way
    extracted = extract_plan(plan_run(run_dir), limits)
    (write or write_artifact)(run_dir, "plan.json", extracted.plan_bytes)
    return WorkerOutcome(extracted, {"enforced": False, "reason": "in-process planner (fault injection test)"},
                         0.0, 0.0)


def use_inprocess_worker(mp: pytest.MonkeyPatch) -> None:
    from pipeline import transaction

    mp.setattr(transaction, "run_plan_worker", inprocess_worker)
    mp.setattr(fsutil.ops, "fsync", no_fsync)


OPS = ("write", "fsync", "link", "rename", "unlink")


def no_fsync(_fd: int) -> None:
    """fsync only matters for power loss; a SIGKILL or an injected fault sees the page cache either way."""


def _count_ops(kill_at: int | None, counter: list[int]) -> None:
    """Wrap every fsutil op: count it, and SIGKILL this process on the ``kill_at``-th."""
    fsutil.ops.fsync = no_fsync  # type: ignore[method-assign]
    for name in OPS:
        original = getattr(fsutil.ops, name)

        def inner(*args: Any, _fn: Callable[..., Any] = original, **kwargs: Any) -> Any:
            counter[0] += 1
            if counter[0] == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return _fn(*args, **kwargs)

        setattr(fsutil.ops, name, inner)


def fork_cli(args: list[str], *, kill_at: int | None = None, delay: float | None = None,
             fast_worker: bool = False, report: Path | None = None, log: Path | None = None) -> int | str:
    """Run the real CLI in a forked child; kill it at an op count or after ``delay`` seconds.

    Returns the exit code, or "killed". Forking skips interpreter start-up, so hundreds of
    kills fit in a test run; the child is the same code path as ``python -m pipeline``.
    ``log`` receives the child's stderr (else it goes to /dev/null), for a failure message.
    """
    pid = os.fork()
    if pid == 0:  # child: never returns into pytest
        code = 99
        try:
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            if log is not None:
                os.dup2(os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 2)
            sys.stdout = open(os.devnull, "w")
            sys.stderr = os.fdopen(2, "w", closefd=False) if log is not None else sys.stdout
            if fast_worker:
                from pipeline import transaction

                transaction.run_plan_worker = inprocess_worker  # type: ignore[assignment]
            counter = [0]
            _count_ops(kill_at, counter)
            from pipeline.cli import main

            code = main(args)
            if report is not None:
                report.write_text(str(counter[0]))
        except BaseException:
            code = 98
            import traceback

            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(code)
    if delay is not None:
        time.sleep(delay)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return "killed"
    return os.WEXITSTATUS(status)


CONSOLIDATE = ["consolidate", "--no-context"]
ADD = ["add", "project_fresh-topic", "-d", "the fresh topic is about websocket heartbeats", "--visibility", "safe",
       "-b", "Heartbeats every 20 seconds keep the load balancer from closing idle websockets."]
# The command a user runs after the crash: each recovers under the lock before anything else.
NEXT = [["recover"], ["forget", "project_no-such-memory"], ["init"]]


def _child_log(log: Path) -> str:
    try:
        return log.read_text(encoding="utf-8", errors="replace")[-4000:]
    except OSError:
        return ""


def _full_run(env: Env, command: list[str], fast: bool, tmp: Path) -> tuple[int, float]:
    report, log = tmp / "ops-count", tmp / "child-stderr"
    started = time.monotonic()
    outcome = fork_cli(env.args(*command), fast_worker=fast, report=report, log=log)
    assert outcome == 0, f"{command}: exit {outcome}: {_child_log(log)}"
    return int(report.read_text()), time.monotonic() - started


def torture(env: Env, tmp_path: Path, *, kills_wanted: int, rng: random.Random) -> Counter[str]:
    """Kill consolidate and add at random ops and random instants; check pre-or-post after the next command."""
    seeded = seed_store(env)
    saved = tmp_path / "saved"
    save(env, saved)
    plans: list[tuple[str, list[str], bool]] = [
        ("consolidate", CONSOLIDATE, True), ("consolidate", CONSOLIDATE, False), ("add", ADD, True)]
    reference: dict[tuple[str, bool], tuple[dict[str, Any], dict[str, Any], int, float]] = {}
    for label, command, fast in plans:
        restore(env, saved)
        pre = roots_state(env)
        total, seconds = _full_run(env, command, fast, tmp_path)
        post = roots_state(env)
        assert pre != post, f"{label} must have work to do"
        reference[(label, fast)] = (pre, post, total, seconds)
    figures: Counter[str] = Counter()
    i = 0
    while figures["kills"] < kills_wanted:
        label, command, fast = plans[i % len(plans)]
        i += 1
        pre, post, total, seconds = reference[(label, fast)]
        restore(env, saved)
        if fast:
            outcome = fork_cli(env.args(*command), kill_at=rng.randint(1, total), fast_worker=True)
            assert outcome == "killed", outcome
        else:
            log = tmp_path / "child-stderr"
            outcome = fork_cli(env.args(*command), delay=rng.uniform(0, seconds * 1.1), log=log)
            if outcome != "killed":
                assert outcome == 0, f"{command}: exit {outcome}: {_child_log(log)}"
                figures["finished before the kill"] += 1
        if outcome == "killed":
            figures["kills"] += 1
            figures[f"kills {label}"] += 1
        nxt = NEXT[i % len(NEXT)]
        result = env.run(*nxt)
        assert result.code in (0, 1), (nxt, result.err)
        if nxt[0] == "forget":
            assert "memory.not-found" in result.err, result.err
        state = roots_state(env)
        assert state in (pre, post), f"{label} killed: both roots are a mix of pre and post"
        figures[f"{label} {'post' if state == post else 'pre'}"] += 1
        assert temps_anywhere(env.home, env.project) == []
        audit = env.run("audit", "--json")
        assert audit.code == 0 and audit.json()["drift"] == [], audit.out
        assert not (env.project_home / "pending").exists()
    figures["seeded memories"] = seeded
    return figures


def _print(title: str, figures: Counter[str]) -> None:
    print(f"\n{title}: " + ", ".join(f"{k}={v}" for k, v in sorted(figures.items())))


@pytest.mark.integration
def test_sigkill_at_random_instants_leaves_pre_or_post_state(fast_env: Env, tmp_path: Path) -> None:
    env = fast_env
    figures = torture(env, tmp_path, kills_wanted=50, rng=random.Random(20261130))
    _print("crash torture (CI)", figures)
    assert figures["kills"] >= 50
    assert figures["consolidate pre"] + figures["consolidate post"] > 0


@pytest.mark.integration
@pytest.mark.stress
def test_sigkill_torture_long(fast_env: Env, tmp_path: Path) -> None:
    env = fast_env
    figures = torture(env, tmp_path, kills_wanted=320, rng=random.Random())
    _print("crash torture (stress)", figures)
    assert figures["kills"] >= 300
    assert figures["consolidate pre"] > 0 and figures["consolidate post"] > 0


class CountingFault:
    """Fail the Nth call of one fsutil op with an OSError; counts the calls."""

    def __init__(self, mp: pytest.MonkeyPatch, op: str, nth: int, err: int) -> None:
        self.calls = 0
        original = getattr(fsutil.ops, op)
        lock = threading.Lock()  # fsyncs are issued from worker threads: count each call exactly once

        def failing(*args: Any, **kwargs: Any) -> Any:
            with lock:
                self.calls += 1
                hit = self.calls == nth
            if hit:
                raise OSError(err, os.strerror(err))
            return original(*args, **kwargs)

        mp.setattr(fsutil.ops, op, failing)


def _op_counts(env: Env, command: list[str]) -> tuple[Counter[str], Counter[str]]:
    """Calls of each op in one run, and how many of them came before the apply stage."""
    from pipeline.apply import commit

    counts: Counter[str] = Counter()
    before_apply: Counter[str] = Counter()
    with pytest.MonkeyPatch.context() as mp:
        use_inprocess_worker(mp)
        original_apply = commit.apply_changes

        def apply_changes(*args: Any, **kwargs: Any) -> Any:
            before_apply.update(counts)
            return original_apply(*args, **kwargs)

        mp.setattr(commit, "apply_changes", apply_changes)
        lock = threading.Lock()
        for name in OPS:
            original = getattr(fsutil.ops, name)

            def inner(*args: Any, _fn: Callable[..., Any] = original, _n: str = name, **kwargs: Any) -> Any:
                with lock:
                    counts[_n] += 1
                return _fn(*args, **kwargs)

            mp.setattr(fsutil.ops, name, inner)
        assert env.run(*command).code == 0
    return counts, before_apply


def fault_sweep(env: Env, tmp_path: Path, stride: int) -> Counter[str]:
    seed_store(env, topics=8)
    saved = tmp_path / "saved"
    save(env, saved)
    pre = roots_state(env)
    receipts_before = sorted(p.name for p in (env.project_home / "receipts").iterdir())
    counts, before_apply = _op_counts(env, CONSOLIDATE)
    post = roots_state(env)
    assert pre != post
    figures: Counter[str] = Counter()
    for op in OPS:
        for nth in range(1, counts[op] + 1, stride):
            restore(env, saved)
            err = (errno.EIO, errno.ENOSPC)[nth % 2]
            with pytest.MonkeyPatch.context() as mp:
                use_inprocess_worker(mp)
                fault = CountingFault(mp, op, nth, err)
                result = env.run(*CONSOLIDATE)
            assert env.run("recover").code == 0
            state = roots_state(env)
            if fault.calls < nth:
                # This run needed fewer calls than the counted one (what is re-read or re-synced depends
                # on how old the restored files are): no fault was injected, so it must simply commit.
                figures["not reached: committed"] += 1
                assert result.code == 0 and state == post, f"{op} #{nth}: {result.err}"
            elif result.code == 0:
                figures["faults swept"] += 1
                figures["failed past the commit point: committed"] += 1
                assert state == post, f"{op} #{nth}"
            else:
                figures["faults swept"] += 1
                assert os.strerror(err) in result.err, result.err
                assert result.code == 6, f"{op} #{nth} ({os.strerror(err)}): exit {result.code}: {result.err}"
                figures["rolled back, exit 6" if nth > before_apply[op] else "failed before apply, exit 6"] += 1
                assert state == pre, f"{op} #{nth}"
                assert sorted(p.name for p in (env.project_home / "receipts").iterdir()) == receipts_before
            assert temps_anywhere(env.home, env.project) == [], f"{op} #{nth}"
            audit = env.run("audit", "--json")
            assert audit.code == 0 and audit.json()["drift"] == [], (op, nth, audit.out)
    # Only the last few calls of an op may be missing from a run: the sweep still reaches nearly all.
    assert figures["not reached: committed"] <= max(2, figures["faults swept"] // 20), figures
    figures.update({f"{op} calls in one consolidation": counts[op] for op in OPS})
    figures.update({f"{op} calls before apply": before_apply[op] for op in OPS})
    return figures


def test_a_fault_at_any_io_call_of_a_consolidation_rolls_back_or_commits(fast_env: Env, tmp_path: Path) -> None:
    env = fast_env
    figures = fault_sweep(env, tmp_path, stride=5)
    _print("consolidation fault sweep (CI, every 5th call)", figures)
    assert figures["rolled back, exit 6"] > 0


@pytest.mark.stress
def test_a_fault_at_every_io_call_of_a_consolidation_rolls_back_or_commits(fast_env: Env, tmp_path: Path) -> None:
    env = fast_env
    figures = fault_sweep(env, tmp_path, stride=1)
    _print("consolidation fault sweep (stress, every call)", figures)
    assert figures["rolled back, exit 6"] > 0


def test_an_io_error_while_preparing_a_consolidation_exits_6(env: Env) -> None:
    seed_store(env, topics=2, copies=1)
    before = roots_state(env)
    with pytest.MonkeyPatch.context() as mp:
        use_inprocess_worker(mp)
        CountingFault(mp, "write", 1, errno.ENOSPC)
        result = env.run(*CONSOLIDATE)
    assert roots_state(env) == before
    assert result.code == 6, result.err


def _mount(args: list[str]) -> str | None:
    import subprocess

    proc = subprocess.run(["mount", *args], capture_output=True, text=True)
    return None if proc.returncode == 0 else (proc.stderr.strip() or f"mount exited {proc.returncode}")


def _umount(path: Path) -> None:
    import subprocess

    if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A real 1 MiB tmpfs (needs root or CAP_SYS_ADMIN); unmounted at teardown."""
    mount_point = tmp_path / "small"
    mount_point.mkdir()
    error = _mount(["-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", str(mount_point)])
    if error is not None:
        pytest.skip(f"cannot mount a 1 MiB tmpfs at {mount_point}: {error}")
    yield mount_point
    _umount(mount_point)


def _fill(folder: Path, leave: int) -> None:
    """Fill the filesystem holding ``folder`` so that about ``leave`` bytes stay free."""
    filler = folder / "filler.bin"
    with open(filler, "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\0" * 4096)
        except OSError:
            pass
    size = filler.stat().st_size
    os.truncate(filler, max(size - leave, 0))


@pytest.mark.integration
def test_a_full_disk_during_apply_rolls_back_with_exit_6(small_fs: Path, tmp_path: Path) -> None:
    import subprocess

    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    env = Env(home=small_fs / "home", project=project)
    seed_store(env, topics=4, copies=0)
    saved = tmp_path / "saved"
    save(env, saved)
    body = "websocket heartbeat detail " * 1500  # ~40 KB: the run artifacts and the staged copies need room
    command = ["add", "project_heartbeats", "-d", "heartbeats keep websockets open", "--visibility", "safe",
               "-b", body]
    figures: Counter[str] = Counter()
    for leave in range(0, 240 * 1024, 8 * 1024):
        restore(env, saved)
        (small_fs / "filler.bin").unlink(missing_ok=True)
        pre = roots_state(env)
        _fill(small_fs, leave)
        result = env.run(*command)
        (small_fs / "filler.bin").unlink()
        assert env.run("recover").code == 0
        if result.code == 0:
            figures["enough room: committed"] += 1
            assert (env.harness / "project_heartbeats.md").exists()
        else:
            assert result.code == 6, (leave, result.err)
            assert "No space left on device" in result.err and "hint:" in result.err, result.err
            assert roots_state(env) == pre, leave
            figures["disk full: rolled back, exit 6"] += 1
        assert temps_anywhere(env.home, env.project) == []
        audit = env.run("audit", "--json")
        assert audit.code == 0 and audit.json()["drift"] == [], audit.out
    _print("disk full (1 MiB tmpfs home)", figures)
    assert figures["disk full: rolled back, exit 6"] > 0 and figures["enough room: committed"] > 0


@pytest.mark.integration
def test_a_read_only_mirror_fails_with_exit_6_and_changes_nothing(env: Env) -> None:
    seed_store(env, topics=2, copies=0)
    mirror = env.mirror
    error = _mount(["--bind", str(mirror), str(mirror)])
    if error is not None:
        pytest.skip(f"cannot bind-mount the mirror read-only: {error}")
    try:
        error = _mount(["-o", "remount,bind,ro", str(mirror)])
        if error is not None:
            pytest.skip(f"cannot remount the mirror read-only: {error}")
        pre = roots_state(env)
        receipts = sorted(os.listdir(env.project_home / "receipts"))
        for command in (["add", "project_new", "-d", "a new safe fact", "--visibility", "safe", "-b", "n"],
                        ["forget", "project_deploy"], CONSOLIDATE):
            result = env.run(*command)
            if command is CONSOLIDATE and result.code == 0:
                continue  # nothing to consolidate in the mirror: no write was needed
            assert result.code == 6, (command, result.err)
            assert "Read-only file system" in result.err and "hint:" in result.err, result.err
            assert roots_state(env) == pre
            assert sorted(os.listdir(env.project_home / "receipts")) == receipts
        assert temps_anywhere(env.home) == []
        # A change that touches only the private store still goes through.
        assert env.run("add", "project_private-one", "-d", "only private", "-b", "p").code == 0
    finally:
        _umount(mirror)
    assert env.run("audit").code == 0
    # The chain head lives beside the mirror, not in it: the private-only change moved it on all the same.
    strict = env.run("audit", "--strict", "--json")
    assert strict.code == 0, strict.out
    assert strict.json()["witness"]["head"]["seq"] == len(os.listdir(env.project_home / "receipts"))
