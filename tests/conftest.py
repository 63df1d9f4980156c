"""Shared fixtures: an isolated home and project, and a runner for the real CLI."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from noskips import pytest_runtest_makereport  # noqa: F401  (a skip fails where every test must run)
from pytest_bdd import given, parsers, then, when
from unprivileged import ordinary_user  # noqa: F401  (a fixture every test module may use)
from workers.carriers import carriers

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

    @property
    def heads(self) -> Path:
        return self.project / ".memfold" / "heads"

    def receipted(self) -> dict[str, dict[str, str]]:
        """Both roots as a receipt's ``finalHashes`` hash them (the chain head lives beside the mirror)."""
        return {"harness": tree_hashes(self.harness), "public": tree_hashes(self.mirror)}

    def snapshot(self) -> dict[str, dict[str, str]]:
        """Every file of both roots (names and sha256), temps included, and the chain head.

        A chain head stands for what it names: its bytes hold the newest receipt's digest, which differs
        between two runs of the same command (each run has its own id), and an undo moves it on. It
        is in no receipt's hash map (it names the receipt), so it is compared by what it names.
        """
        heads = tree_hashes(self.heads)
        for name in [n for n in heads if not n.startswith(".")]:
            # Named after the chain's first receipt, which also differs from run to run.
            del heads[name]
            heads["<chain head>"] = head_summary(self.heads / name, self.project_home / "receipts")
        return {"harness": tree_hashes(self.harness), "public": tree_hashes(self.mirror), "heads": heads}


def op_path(name: str, dir_fd: int | None = None) -> str:
    """A file an ``fsutil.ops`` call names, as a path: a transaction names a root's files relative to the
    root's open descriptor (``dir_fd``), here spelled out through /proc."""
    return name if dir_fd is None else os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), name)


def survivors(token: str) -> list[int]:
    """Pids whose command line holds ``token``: a worker or descendant that outlived its run."""
    return carriers(token)


def head_summary(head: Path, receipts: Path) -> str:
    """What a chain head names: the newest receipt of the log (by sequence and RFC 8785 digest) or not."""
    import rfc8785

    try:
        data = json.loads(head.read_bytes())
        newest = max(receipts.iterdir())
        digest = hashlib.sha256(rfc8785.dumps(json.loads(newest.read_bytes()))).hexdigest()
    except (OSError, ValueError, IndexError):
        return "unreadable head or log"
    if not isinstance(data, dict) or data.get("receipt") != digest or data.get("seq") != int(newest.name[:8]):
        return f"a head naming another receipt than {newest.name}"
    return "the head of the newest receipt"


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


# Gherkin steps shared by every feature (pytest-bdd finds step definitions through conftest).


@pytest.fixture
def ctx() -> dict[str, Any]:
    return {}


def _run(env: Env, ctx: dict[str, Any], command: str) -> Result:
    if "<last run>" in command:
        command = command.replace("<last run>", _last_run(env).name)
    result = env.run(*shlex.split(command))
    ctx["result"] = result
    return result


def _last_run(env: Env) -> Path:
    newest = json.loads(_receipts(env)[-1].read_text())
    return env.project_home / "runs" / newest["runId"]


def _receipts(env: Env) -> list[Path]:
    return sorted((env.project_home / "receipts").iterdir())


@given("an initialised project")
def initialised(env: Env) -> None:
    assert env.run("init").code == 0


@given(parsers.parse('the memory "{name}" with description "{description}"'))
def private_memory(env: Env, ctx: dict[str, Any], name: str, description: str) -> None:
    assert env.run("add", name, "-d", description, "-b", f"{name} body").code == 0
    ctx["before"] = env.snapshot()


@given(parsers.parse('the safe memory "{name}" with description "{description}"'))
def safe_memory(env: Env, ctx: dict[str, Any], name: str, description: str) -> None:
    assert env.run("add", name, "-d", description, "--visibility", "safe", "-b", f"{name} body").code == 0
    ctx["before"] = env.snapshot()


@given(parsers.parse('the repository holds a symlink "{link}" to a directory outside it'))
def escaping_symlink(env: Env, tmp_path: Path, link: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not the repository's\n")
    (env.project / link).symlink_to(outside, target_is_directory=True)


@given("I remember the state of both roots")
def remember(env: Env, ctx: dict[str, Any]) -> None:
    ctx["remembered"] = env.snapshot()


@given("the project lock is held by another process", target_fixture="holder")
def lock_held(env: Env, ctx: dict[str, Any]) -> Any:
    ctx["before"] = env.snapshot()
    with held_lock(env) as proc:
        yield proc


@contextmanager
def held_lock(env: Env) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the project's lock as a consolidation run would, until the block ends."""
    code = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from pipeline.apply.lock import project_lock\n"
        "home = Path(sys.argv[1])\n"
        "with project_lock(home / 'lock', home / 'lock.json', run_id='20261130T120000Z-0badc0de',"
        " operation='consolidate', timeout=1, now='2026-11-30T12:00:00Z'):\n"
        "    print('locked', flush=True)\n"
        "    time.sleep(30)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(env.project_home)], stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        yield proc
    finally:
        proc.kill()
        proc.wait()


@given("a memory file in the private store that is a symlink to a file outside")
def symlinked_memory(env: Env, ctx: dict[str, Any], tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_bytes(b"---\ndescription: outside\n---\nnot a memory of ours\n")
    (env.harness / "project_link.md").symlink_to(outside)
    ctx["outside"] = (outside, outside.read_bytes())


@when(parsers.parse('I run "{command}"'))
def run_command(env: Env, ctx: dict[str, Any], command: str) -> None:
    _run(env, ctx, command)


@when(parsers.parse('I run "{command}" with a lock timeout of {seconds:f} seconds'))
def run_with_timeout(env: Env, ctx: dict[str, Any], command: str, seconds: float) -> None:
    env.home.mkdir(parents=True, exist_ok=True)
    (env.home / "config.yaml").write_text(f"lock:\n  timeout: {seconds}\n")
    started = time.monotonic()
    _run(env, ctx, command)
    ctx["waited"] = time.monotonic() - started


@when("I undo the last run")
def undo_last(env: Env, ctx: dict[str, Any]) -> None:
    _run(env, ctx, f"undo {_last_run(env).name}")


@when(parsers.parse('I change one byte of the last run\'s "{name}"'))
def change_byte(env: Env, name: str) -> None:
    path = _last_run(env) / name
    data = bytearray(path.read_bytes())
    index = data.index(b'"runId"')
    data[index + 1] = ord("R")
    path.write_bytes(bytes(data))


def _edit_receipt(path: Path, change: Any) -> None:
    receipt = json.loads(path.read_text())
    change(receipt)
    path.write_text(json.dumps(receipt, indent=2, sort_keys=True) + "\n")


@when("I change a final hash in the newest receipt")
def change_newest_final(env: Env) -> None:
    _edit_receipt(_receipts(env)[-1], lambda r: r["finalHashes"]["harness"].update({"user_b.md": "0" * 64}))


@when("I change a final hash in the first receipt")
def change_first_final(env: Env) -> None:
    _edit_receipt(_receipts(env)[0], lambda r: r["finalHashes"]["harness"].update({"MEMORY.md": "1" * 64}))


@when("I set the newest receipt's previous link to another digest")
def change_previous(env: Env) -> None:
    _edit_receipt(_receipts(env)[-1], lambda r: r.update(previous="2" * 64))


@when(parsers.parse('I append a line to the private copy of "{name}"'))
def hand_edit(env: Env, name: str) -> None:
    with open(env.harness / name, "a", encoding="utf-8") as fh:
        fh.write("edited by hand\n")


@then(parsers.parse("the exit code is {code:d}"))
def exit_code(ctx: dict[str, Any], code: int) -> None:
    result = ctx["result"]
    assert result.code == code, (result.out, result.err)


@then(parsers.parse('the private store holds "{name}"'))
def harness_holds(env: Env, name: str) -> None:
    assert (env.harness / name).is_file()


@then(parsers.parse('the private store does not hold "{name}"'))
def harness_lacks(env: Env, name: str) -> None:
    assert name.lower() not in {p.name.lower() for p in env.harness.iterdir()}


@then(parsers.parse('the private copy of "{name}" has the line "{line}"'))
def harness_line(env: Env, name: str, line: str) -> None:
    assert line in (env.harness / name).read_text(encoding="utf-8").splitlines()


@then(parsers.parse('the private store holds only "{name}"'))
def harness_holds_only(env: Env, name: str) -> None:
    assert sorted(p.name for p in env.harness.glob("*.md") if p.name != "MEMORY.md") == [name]


@then(parsers.parse('the mirror does not hold "{name}"'))
def mirror_lacks(env: Env, name: str) -> None:
    assert not (env.mirror / name).exists()


@then(parsers.parse('the private index lists "{name}" as harness only'))
def private_index(env: Env, name: str) -> None:
    lines = (env.harness / "MEMORY.md").read_text().splitlines()
    assert any(f"]({name})" in line and line.endswith("(harness only)") for line in lines), lines


@then(parsers.parse('the mirror index does not mention "{text}"'))
def mirror_index_lacks(env: Env, text: str) -> None:
    index = env.mirror / "MEMORY.md"
    # A mirror without a memory file has no index at all.
    assert not index.exists() if not any(p.name != "MEMORY.md" for p in env.mirror.iterdir()) \
        else text not in index.read_text()


@then(parsers.parse('the mirror index lists "{name}"'))
def mirror_index_lists(env: Env, name: str) -> None:
    assert f"]({name})" in (env.mirror / "MEMORY.md").read_text()


@then(parsers.parse('the mirror copy of "{name}" is byte-identical to the private copy'))
def mirror_identical(env: Env, name: str) -> None:
    assert (env.mirror / name).read_bytes() == (env.harness / name).read_bytes()


@then(parsers.parse('the error names "{text}"'))
@then(parsers.parse('the error mentions "{text}"'))
def error_names(ctx: dict[str, Any], text: str) -> None:
    assert text in ctx["result"].err


@then(parsers.parse('the output mentions "{text}"'))
def output_mentions(ctx: dict[str, Any], text: str) -> None:
    result = ctx["result"]
    assert text in result.out + result.err, (result.out, result.err)


@then("the error names the holder's run")
def names_holder(ctx: dict[str, Any]) -> None:
    assert "run 20261130T120000Z-0badc0de (consolidate" in ctx["result"].err
    assert ctx["waited"] >= 0.2


def syncfs_here() -> bool:
    """Large commits in the temp dir go through syncfs(2): Linux 5.8+ and a local disk filesystem there."""
    import tempfile

    from pipeline.apply import durable

    where = os.stat(tempfile.gettempdir()).st_dev
    return durable.syncfs_reports_errors() and durable._filesystem_type(where) in durable.SYNCFS_TYPES


def fresh_interpreter(env: Env, args: list[str]) -> Result:
    """The CLI in an interpreter of its own, which reports on its last stderr line whether typer was loaded."""
    code = ("import sys\nfrom pipeline.cli import main\n"
            f"rc = main({env.args(*args)!r})\n"
            "print('TYPER', 'typer' in sys.modules, file=sys.stderr)\nraise SystemExit(rc)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    return Result(proc.returncode, proc.stdout, proc.stderr)


@then("the interpreter never imported typer")
def no_typer(ctx: dict[str, Any]) -> None:
    assert ctx["result"].err.splitlines()[-1] == "TYPER False"


@then("no memfold temp file is left")
def no_temps(env: Env) -> None:
    from test_torture import temps_anywhere

    assert temps_anywhere(env.home, env.project) == []


@then(parsers.parse('"{command}" exits 0 without hand edits'))
def clean_audit(env: Env, command: str) -> None:
    result = env.run(command, "--json")
    assert result.code == 0 and result.json()["drift"] == [], result.out


@then("both roots are unchanged")
def unchanged(env: Env, ctx: dict[str, Any]) -> None:
    assert env.snapshot() == ctx["before"]


@then("both roots are as remembered")
def as_remembered(env: Env, ctx: dict[str, Any]) -> None:
    assert env.snapshot() == ctx["remembered"]


@then("the file outside is unchanged")
def outside_unchanged(env: Env, ctx: dict[str, Any]) -> None:
    path, data = ctx["outside"]
    assert path.read_bytes() == data
    assert not (env.harness / "project_y.md").exists()


@then(parsers.parse('the audit reports {count:d} hand edit naming "{name}"'))
def audit_drift(ctx: dict[str, Any], count: int, name: str) -> None:
    body = ctx["result"].json()
    assert body["handEdits"] == count
    assert all(name in d["file"] for d in body["drift"])


# Fixtures of the real-CLI tests; imported last because realclis imports the helpers above.
from realclis import fake_model, real_clis  # noqa: E402, F401


def inotify_count() -> int:
    """How many inotify instances this process holds open. Unreachable watches are collected first: a
    watch dropped by an earlier test is closed when the collector gets to it, which would otherwise
    happen at a random moment of a later test."""
    import gc

    gc.collect()
    def target(fd: str) -> str:
        try:
            return os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return ""

    return sum(1 for fd in os.listdir("/proc/self/fd") if target(fd) == "anon_inode:inotify")


def spawn_probed(env: Env, probe: str, *args: str) -> tuple[int, Any, str]:
    """The real CLI in a fresh interpreter, after ``probe``: code that wraps what a test watches and
    records it in ``seen`` (a JSON value it defines). Nothing proven, parsed or cached in the test's own
    process answers for that one. Returns the exit code, ``seen`` as the command left it, and stderr."""
    script = (f"import json, sys\n{probe}\nfrom pipeline.cli import main\ncode = main(sys.argv[1:])\n"
              "sys.stderr.write('\\nPROBED ' + json.dumps(seen) + '\\n')\nraise SystemExit(code)\n")
    proc = subprocess.run([sys.executable, "-c", script, *env.args(*args)], capture_output=True, text=True,
                          timeout=120, cwd=str(env.project), env={**os.environ, "PYTHONPATH": str(REPO)})
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("PROBED ")]
    assert line, proc.stderr
    return proc.returncode, json.loads(line[-1][len("PROBED "):]), proc.stderr


@pytest.fixture
def scripted_model() -> Any:
    """A model on 127.0.0.1 whose every turn a test scripts (the memory tool's tests)."""
    from fake_model_server import FakeModelServer

    server = FakeModelServer(turns=[]).start()
    yield server
    server.stop()


@pytest.fixture
def tool_session(env: Env, scripted_model: Any) -> Any:
    """The real Anthropic SDK's tool runner with memfold's memory tool on this project, against that model."""
    from memtool_support import Session

    from pipeline.hosts.memory_tool import MemfoldMemoryTool

    tool = MemfoldMemoryTool(env.project, home=env.home)
    yield Session(scripted_model, tool)
    tool.close()
