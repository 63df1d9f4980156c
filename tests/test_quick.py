"""The typer-free path of the everyday commands: same results as the typer app, fewer imports."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from conftest import REPO, Env, Result, tree_hashes

from pipeline import cli
from pipeline.commands.quick import parse
from pipeline.privacy import loader

HEAVY = ("typer", "click", "pydantic", "jsonschema", "yaml", "portalocker", "rfc8785")


def _run(env: Env, args: list[str], *, typer_only: bool) -> Result:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli._full(env.args(*args)) if typer_only else cli.main(env.args(*args))
    return Result(code, out.getvalue(), err.getvalue())


def _same(text: str) -> str:
    """Output without what differs between two stores: receipt paths, run ids and the work tree."""
    text = re.sub(r"/\S*/receipts/\S+\.json", "<receipt>", text)
    text = re.sub(r'"worktree": "[^"]*"', '"worktree": "<project>"', text)
    return re.sub(r"\d{8}T\d{6}Z-[0-9a-f]{8}", "<run>", text)


SESSION = [
    ["add", "project_build", "-d", "the build uses make", "-b", "make all builds everything"],
    ["add", "--visibility", "safe", "--type=reference", "reference_docs", "--description=docs live in docs/",
     "--body", "see docs/index.md"],
    ["--json", "add", "feedback_tabs", "-d", "tabs, not spaces", "-t", "feedback", "-b", "always tabs"],
    ["update", "project_build", "--body", "make all; make test runs the suite", "--json"],
    ["add", "con.md", "-d", "refused: a device name on Windows"],
    ["add", "project_copy", "-d", "a copy", "-b", "make all; make test runs the suite"],
    ["add", "project_key", "-d", "a key", "-b", "token ghp_Zq8vR2mX4kT9wL1nB6yC3pH7sD0fJ5gA2eKx",
     "--visibility", "safe"],
    ["list"],
    ["list", "--json"],
    ["search", "make", "--limit", "1"],
    ["show", "project_build"],
    ["show", "reference_docs", "--json"],
    ["show", "no_such_memory"],
    ["--global", "add", "user_editor", "-d", "the user edits with vim"],
    ["list", "--global", "--json"],
    ["forget", "reference_docs"],
    ["forget", "no_such_memory", "--json"],
]


def test_a_session_gives_the_same_output_codes_and_bytes_with_and_without_typer(tmp_path: Path) -> None:
    stores = {}
    for typer_only in (False, True):
        project = tmp_path / f"project-{typer_only}"
        project.mkdir()
        env = Env(home=tmp_path / f"home-{typer_only}", project=project)
        assert _run(env, ["init"], typer_only=True).code == 0
        results = [_run(env, args, typer_only=typer_only) for args in SESSION]
        stores[typer_only] = (results, env.snapshot(), tree_hashes(env.home / "global" / "memory"))
    quick, full = stores[False], stores[True]
    for args, a, b in zip(SESSION, quick[0], full[0], strict=False):
        assert (a.code, _same(a.out), _same(a.err)) == (b.code, _same(b.out), _same(b.err)), args
    assert [r.code for r in quick[0]] == [0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1]
    assert quick[1] == full[1] and quick[2] == full[2]  # the same bytes in both roots and the global store
    assert "Zq8vR2mX4kT9" not in quick[0][6].out + quick[0][6].err


@pytest.mark.parametrize("args", [
    ["add", "--help"], ["add", "x", "-d"], ["add", "x", "-d", "--json"], ["add", "x", "y", "-d", "two names"],
    ["add", "x", "-d", "a", "-d", "b"], ["add", "x", "--nope"], ["add", "-dvalue", "x"], ["add", "x", "--", "-d"],
    ["search", "q", "--limit", "many"], ["list", "--json=yes"], ["--home"], ["rename", "a", "b"], ["show"], ["add"],
])
def test_anything_unusual_goes_to_the_typer_app(args: list[str]) -> None:
    assert parse(args) is None


def test_usage_errors_still_come_from_typer(env: Env) -> None:
    result = env.run("add", "project_x", "-d")
    assert result.code == 2 and "requires an argument" in result.err
    assert not any(env.home.rglob("project_x.md"))


def test_status_prints_the_same_with_and_without_typer(env: Env) -> None:
    assert env.run("init").code == 0
    assert env.run("add", "project_s", "-d", "a status probe", "--visibility", "safe", "-b", "body").code == 0
    (env.harness / "broken.md").write_text("no frontmatter here\n")
    for args in (["status"], ["status", "--json"], ["--json", "status"], ["--global", "status"]):
        assert parse(args) is not None, args
        quick, full = _run(env, args, typer_only=False), _run(env, args, typer_only=True)
        assert (quick.code, quick.out, quick.err) == (full.code, full.out, full.err), args
    data = json.loads(_run(env, ["status", "--json"], typer_only=False).out)
    assert (data["memories"], data["safe"], data["mirrorFiles"]) == (1, 1, 1)
    assert (env.mirror / "project_s.md").is_file()
    assert [item["path"].rsplit("/", 1)[-1] for item in data["broken"]] == ["broken.md"]


def _fresh_process(env: Env, commands: list[list[str]], watched: tuple[str, ...]) -> tuple[list[str], list[int]]:
    """Run ``commands`` through cli.main in a fresh interpreter: which ``watched`` modules it loaded, and
    the exit codes."""
    code = ("import json, sys\nfrom pipeline.cli import main\n"
            f"args = ['--home', {str(env.home)!r}, '--project', {str(env.project)!r}]\n"
            f"codes = [main(args + command) for command in {commands!r}]\n"
            f"print(json.dumps([sorted(m for m in {watched!r} if m in sys.modules), codes]))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    loaded, codes = json.loads(proc.stdout.strip().splitlines()[-1])
    return loaded, codes


@pytest.mark.parametrize("with_config", [False, True])
def test_add_list_and_search_import_no_heavy_library(env: Env, with_config: bool) -> None:
    assert env.run("init").code == 0
    # The first write in a home parses the shipped privacy rules and caches them under <home>/cache/.
    assert env.run("add", "project_warm", "-d", "warms the caches").code == 0
    assert Path(loader.rules_cache(env.home)).is_file()
    if with_config:
        (env.home / "config.yaml").write_text("lock: {timeout: 2}\nruns: {keep: 10}\n")
        time.sleep(2.1)  # a config younger than 2 s is never cached
        assert env.run("list").code == 0  # validates once, fills the cache
    commands = [["add", "project_q", "-d", "quick path fact", "-b", "body"], ["list", "--json"], ["search", "quick"],
                ["show", "project_q"], ["status"]]
    assert _fresh_process(env, commands, HEAVY) == ([], [0, 0, 0, 0, 0])
    assert (env.harness / "project_q.md").read_text().startswith("---\nname: project_q\n")


# Both cost ~40 ms of a `memfold add` (dataclasses imports inspect, ast, dis and tokenize, and each
# @dataclass generates code at import): the write path's value types are plain classes. secrets (hmac,
# OpenSSL) and concurrent.futures (logging) are not needed for random names and parallel fsyncs either.
CODEGEN = ("dataclasses", "inspect", "secrets", "concurrent.futures", "logging")


def test_the_write_and_read_commands_import_neither_dataclasses_nor_inspect(env: Env) -> None:
    assert env.run("init").code == 0
    assert env.run("add", "project_warm", "-d", "warms the caches").code == 0
    commands = [["add", "project_q", "-d", "quick path fact", "-b", "body"],
                ["update", "project_q", "--body", "new body"], ["list", "--json"], ["search", "quick"],
                ["forget", "project_warm"], ["--global", "add", "user_q", "-d", "g"]]
    assert _fresh_process(env, commands, CODEGEN) == ([], [0] * 6)
    assert (env.harness / "project_q.md").read_text().endswith("new body\n")
    assert not (env.harness / "project_warm.md").exists()


def test_the_write_commands_do_not_import_typing(env: Env) -> None:
    # typing costs ~2.3 ms to import: annotations name its types under TYPE_CHECKING on this path.
    assert env.run("init").code == 0
    assert env.run("add", "project_warm", "-d", "warms the caches").code == 0
    commands = [["add", "project_q", "-d", "quick path fact", "-b", "body"],
                ["update", "project_q", "--body", "new body"], ["forget", "project_warm"]]
    assert _fresh_process(env, commands, ("typing",)) == ([], [0] * 3)
    assert (env.harness / "project_q.md").read_text().endswith("new body\n")


def test_an_ascii_title_is_slugged_without_the_transliteration_tables(env: Env) -> None:
    # anyascii loads importlib.resources (~25 ms of an add): it is needed only for a title that is not ASCII.
    assert env.run("init").code == 0
    watched = ("anyascii", "importlib.resources")
    assert _fresh_process(env, [["add", "Deploy target", "-d", "where releases go"]], watched) == ([], [0])
    assert (env.harness / "project_deploy-target.md").read_text().startswith("---\nname: Deploy target\n")
    loaded, codes = _fresh_process(env, [["add", "Déploiement cible", "-d", "où vont les versions"]], watched)
    assert (loaded, codes) == (["anyascii", "importlib.resources"], [0])
    assert (env.harness / "project_deploiement-cible.md").is_file()


def test_consolidate_without_typer_commits_the_same_state(tmp_path: Path) -> None:
    seed = [["add", "project_a", "-d", "the api listens on port 8080", "-b", "port 8080"],
            ["add", "project_b", "-d", "the api listens on port 8080 too", "-b", "port 8080"],
            ["add", "project_old", "-d", "an expired reminder", "-b", "x", "--expires", "2020-01-01"]]
    outcomes = {}
    for typer_only in (False, True):
        project = tmp_path / f"project-{typer_only}"
        project.mkdir()
        env = Env(home=tmp_path / f"home-{typer_only}", project=project)
        for args in seed:
            _run(env, args, typer_only=True)
        dry = _run(env, ["consolidate", "--no-context", "--dry-run", "--json"], typer_only=typer_only)
        real = _run(env, ["--json", "consolidate", "--no-context"], typer_only=typer_only)
        outcomes[typer_only] = (dry.code, real.code, sorted(json.loads(real.out)), env.snapshot())
    assert outcomes[False] == outcomes[True]
    assert outcomes[False][:2] == (0, 0)
    assert "project_old.md" not in outcomes[False][3]["harness"]
    assert parse(["consolidate", "--select", "project_a"]) is not None  # repeatable: the fast path's too
    assert parse(["consolidate", "--worker"]) is None


def test_only_a_command_process_turns_the_cyclic_collector_off(env: Env) -> None:
    code = (f"import gc, sys\nsys.argv = ['memfold', '--home', {str(env.home)!r}, '--project', {str(env.project)!r},"
            " 'list']\nfrom pipeline import cli\ncli.main(sys.argv[1:])\nprint('LIBRARY', gc.isenabled())\n"
            "cli.run()\nprint('PROCESS', gc.isenabled())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(REPO)}).stdout
    assert "LIBRARY True" in out and "PROCESS False" in out, out


def test_a_consolidate_process_ends_after_its_exit_handlers_with_its_output_flushed(env: Env) -> None:
    assert env.run("add", "project_deploys", "-d", "how deploys run", "-b", "Deploys go through ops/deploy.sh.").code == 0
    cache = env.project_home / "cache" / "state.bin"
    cache.unlink(missing_ok=True)
    proc = subprocess.run([sys.executable, "-m", "pipeline", "--home", str(env.home), "--project", str(env.project),
                           "--json", "consolidate", "--no-context"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)  # the whole summary, flushed before the process ended
    assert summary["dryRun"] is False and Path(summary["receipt"]).is_file()
    assert cache.is_file() and cache.stat().st_size > 0  # written by an exit handler, which still ran


@pytest.mark.parametrize("args, code", [
    (["add", "project_lint", "-d", "how lint runs", "-b", "Lint runs through make lint."], 0),
    (["update", "project_deploys", "--body", "Deploys go through ops/deploy.sh, then the smoke tests."], 0),
    (["forget", "project_deploys"], 0),
    (["forget", "no_such_memory"], 1),
])
def test_a_write_process_ends_after_its_exit_handlers_with_its_output_and_code(env: Env, args: list[str],
                                                                             code: int) -> None:
    assert env.run("add", "project_deploys", "-d", "how deploys run", "-b", "Deploys go through ops/deploy.sh.").code == 0
    cache = env.project_home / "cache" / "state.bin"
    cache.unlink(missing_ok=True)
    proc = subprocess.run([sys.executable, "-m", "pipeline", "--home", str(env.home), "--project", str(env.project),
                           "--json", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == code, proc.stderr
    if code == 0:
        summary = json.loads(proc.stdout)  # flushed whole before the process ended
        assert summary["ok"] is True and Path(summary["receipt"]).is_file()
        assert cache.is_file() and cache.stat().st_size > 0  # the exit handler that writes it ran
    else:
        assert json.loads(proc.stdout or proc.stderr)["ok"] is False


def test_a_quick_exit_lets_a_thread_that_is_not_a_daemon_finish_first(tmp_path: Path) -> None:
    marker = tmp_path / "finished"
    code = ("import threading, time, pathlib\n"
            "from pipeline.cli import exit_after_handlers\n"
            "def late():\n"
            "    time.sleep(0.3)\n"
            f"    pathlib.Path({str(marker)!r}).write_text('done')\n"
            "threading.Thread(target=late).start()\n"
            "exit_after_handlers(3)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 3, proc.stderr
    assert marker.read_text() == "done"
