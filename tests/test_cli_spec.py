"""One command-line table: typer and the fast path agree on every option, default and usage error."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, Env, Result

from pipeline import __version__, cli
from pipeline.commands import quick
from pipeline.commands._app import app
from pipeline.commands.spec import COMMANDS, GLOBAL, PANEL_ORDER, PANELS, VERSION
from pipeline.commands.typed import click_command


def _click_params(name: str | None) -> dict[str, Any]:
    root = click_command(app)
    command = root if name is None else root.commands[name]  # type: ignore[attr-defined]
    return {p.name: p for p in command.params}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_typer_declares_exactly_the_tables_parameters(name: str) -> None:
    params = _click_params(name)
    spec = COMMANDS[name]
    assert sorted(params) == sorted(p.dest for p in spec.params)
    for p in spec.params:
        made = params[p.dest]
        if p.positional:
            assert made.param_type_name == "argument" and made.required is p.required, p.dest
            continue
        assert (tuple(made.opts), bool(made.is_flag)) == (p.flags, p.kind == "flag"), p.dest
        assert made.required is p.required, p.dest
        assert bool(made.multiple) is (p.kind == "repeat"), p.dest
        if not p.required:
            assert made.default == ([] if p.kind == "repeat" and made.default == [] else p.default), p.dest
        assert made.bare_type() == {"int": "int", "path": "Path", "flag": "bool", "repeat": "list[str]"}.get(
            p.kind, "str"), p.dest


def test_the_global_options_are_the_tables_too() -> None:
    params = _click_params(None)
    for p in (*GLOBAL, VERSION):
        assert tuple(params[p.dest].opts) == p.flags
    assert set(params) - {p.dest for p in (*GLOBAL, VERSION)} == {"install_completion", "show_completion"}


def test_every_command_sits_in_one_of_the_help_groups() -> None:
    root = click_command(app)
    names = set(root.commands)  # type: ignore[attr-defined]
    assert names <= set(PANELS), names - set(PANELS)
    assert set(PANELS.values()) == set(PANEL_ORDER)


def test_the_shells_quick_commands_are_the_table() -> None:
    assert cli.QUICK_COMMANDS == set(COMMANDS)


PARSED = [
    ["add", "project_a", "-d", "a fact"],
    ["--json", "add", "project_a", "--description=a fact", "-t", "user", "--visibility", "safe", "-b", "text",
     "--expires", "2027-01-01", "--allow-publish", "--global"],
    ["--home", "/tmp/h", "--project", "/tmp/p", "update", "project_a", "--body-file", "notes.txt", "--json"],
    ["forget", "project_a"],
    ["--global", "list", "--json"],
    ["search", "deploy", "--limit", "3"],
    ["search", "deploy"],
    ["consolidate"],
    ["consolidate", "--no-context", "--dry-run", "--worker", "mine", "--scope", "all", "--unsafe-no-sandbox"],
    ["consolidate", "--all-projects", "--if-due", "--skip-if-locked", "--allow-publish"],
    ["validate", "--run", "20261130T120000Z-0a1b2c3d"],
    ["validate", "--plan", "p.json", "--manifest", "m.json", "--repo", "/tmp/r", "--json"],
    ["verify"],
    ["verify", "20261130T120000Z-0a1b2c3d", "--global"],
    ["verify", "--attestation", "a.json", "--pubkey", "k.pem"],
    ["audit", "--strict", "--json"],
    ["import", "claude", "memory-dir"],
    ["--json", "import", "harness", "private", "public", "--json"],
    ["export", "claude", "out", "--json"],
    ["consolidate", "--select", "a.md", "--select", "b.md", "--dry-run"],
    ["add", "x", "-d", "d", "--cite", "Makefile:12", "--cite=ci.yml"],
    ["update", "x", "--cite", "Makefile:12-14"],
]


def _record(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []

    def body_of(command: Any) -> Any:
        def record(**kwargs: Any) -> int:
            from pipeline.commands.context import STATE

            calls.append({"command": command.name, **kwargs, "state": (STATE.home, STATE.project, STATE.json,
                                                                       STATE.global_scope)})
            return 0

        return record

    monkeypatch.setattr(quick, "body_of", body_of)
    return calls


@pytest.mark.parametrize("args", PARSED, ids=lambda a: " ".join(a))
def test_the_fast_path_and_typer_call_the_body_with_the_same_values(args: list[str],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _record(monkeypatch)
    run = quick.parse(list(args))
    assert run is not None, "a plain invocation goes the fast way"
    assert run() == 0
    assert cli._full(list(args)) == 0
    fast, typed = calls
    assert fast == typed


UNUSUAL = [
    (["add", "x", "-d"], "usage.option"), (["add", "x", "-d", "a", "-d", "b"], None),
    (["add", "x", "--nope"], "usage.option"), (["add", "x", "y", "-d", "two names"], "usage.command"),
    (["add", "x"], "usage.missing"), (["add"], "usage.missing"), (["search", "q", "--limit", "many"], "usage.value"),
    (["list", "--json=yes"], "usage.option"), (["verify", "a", "b"], "usage.command"), (["audit", "--strict=1"], None),
    (["--home"], "usage.option"),
    (["import", "claude"], "usage.missing"), (["import"], "usage.missing"), (["export", "claude"], "usage.missing"),
]


@pytest.mark.parametrize("args,code", UNUSUAL, ids=lambda a: " ".join(a) if isinstance(a, list) else str(a))
def test_anything_unusual_is_left_to_typer_which_answers_in_one_style(args: list[str], code: str | None,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    assert quick.parse(list(args)) is None
    if code is None:  # valid for typer (a repeated option, a flag with a value click accepts, --select)
        calls = _record(monkeypatch)
        cli._full(list(args))
        assert len(calls) <= 1
        return
    for as_json in (False, True):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            rc = cli.main(["--json", *args] if as_json and args != ["--home"] else args)
        assert rc == 2
        if as_json and args != ["--home"]:
            answer = json.loads(out.getvalue())
            assert (answer["ok"], answer["exitCode"], answer["code"]) == (False, 2, code)
            assert err.getvalue() == ""
        else:
            assert err.getvalue().startswith(f"memfold: error [{code}]: ")
            assert "--help` lists the options" in err.getvalue()


def test_version_and_short_help(env: Env) -> None:
    for flag in ("--version", "-V"):
        result = env.spawn(flag)
        assert (result.code, result.out) == (0, f"memfold {__version__}\n")
    long, short = env.spawn("add", "--help"), env.spawn("add", "-h")
    assert long.code == short.code == 0 and long.out == short.out
    assert "--description" in long.out and "<bool>" not in long.out


def test_the_help_groups_commands_and_renders_flags_without_a_type(env: Env) -> None:
    result = env.spawn("--help")
    assert result.code == 0
    positions = [result.out.index(f"─ {panel} ") for panel in PANEL_ORDER]
    assert positions == sorted(positions)
    assert "<bool>" not in result.out and "--install-completion" in result.out


def test_shell_completion_answers_from_the_same_commands(env: Env) -> None:
    proc = subprocess.run([sys.executable, "-m", "pipeline"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO), "_MEMFOLD_COMPLETE": "complete_bash",
                               "COMP_WORDS": "memfold aud", "COMP_CWORD": "1"})
    assert "audit" in proc.stdout.split()


def _missing_or_present(args: list[str], env: Env) -> list[str]:
    code = ("import sys\nfrom pipeline.cli import main\n"
            f"rc = main({args if args == ['--version'] else [*env.args(), *args]!r})\n"
            "print('HEAVY', sorted(m for m in ('typer', 'click', 'rich') if m in sys.modules), 'RC', rc, file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("HEAVY")][-1]
    return line.split("RC")[0].removeprefix("HEAVY").strip().strip("[]").replace("'", "").split(", ") \
        if "'" in line else []


@pytest.mark.parametrize("args", [["verify"], ["audit"], ["validate", "--run", "<run>"], ["--version"]])
def test_the_checkers_and_version_never_import_typer(args: list[str], env: Env) -> None:
    assert env.run("add", "project_a", "-d", "a fact").code == 0
    run = json.loads(sorted((env.project_home / "receipts").iterdir())[-1].read_text())["runId"]
    assert _missing_or_present([a.replace("<run>", run) for a in args], env) == []


def test_a_missing_description_and_two_bodies_are_usage_errors_an_empty_one_is_rejected_input(
        env: Env, tmp_path: Path) -> None:
    (tmp_path / "body.txt").write_text("text")
    cases: list[tuple[list[str], int, str]] = [
        (["add", "project_a"], 2, "usage.missing"),
        (["add", "project_a", "-d", "a fact", "-b", "x", "--body-file", str(tmp_path / "body.txt")], 2, "usage.body"),
        (["add", "project_a", "-d", "  "], 1, "memory.description"),
    ]
    for args, rc, code in cases:
        result: Result = env.run("--json", *args)
        assert (result.code, json.loads(result.out)["code"]) == (rc, code), args
    assert not (env.home / "projects").exists() or not list(env.harness.glob("project_a*"))


@pytest.mark.parametrize("args", [["inject", "--bogus"], ["inject", "--max-bytes", "many"]])
def test_the_inject_fast_path_answers_usage_errors_in_the_same_style(args: list[str]) -> None:
    for as_json in (False, True):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            rc = cli.main([*args, "--json"] if as_json else args)
        assert rc == 2
        if as_json:
            answer = json.loads(out.getvalue())
            assert (answer["ok"], answer["code"], answer["exitCode"]) == (False, "usage.option", 2)
        else:
            assert err.getvalue().startswith("memfold: error [usage.option]: ")
            assert err.getvalue().endswith("  hint: `memfold inject --help` lists the options\n")


def test_a_plain_import_and_export_never_import_typer(env: Env, tmp_path: Path) -> None:
    source = tmp_path / "claude"
    source.mkdir()
    (source / "project_a.md").write_text("---\nname: a\ndescription: alpha fact\ntype: project\n---\nbody\n")
    assert _missing_or_present(["import", "claude", str(source)], env) == []
    assert (env.harness / "project_a.md").is_file()
    assert _missing_or_present(["export", "claude", str(tmp_path / "out")], env) == []
    assert (tmp_path / "out" / "project_a.md").read_bytes() == (env.harness / "project_a.md").read_bytes()
