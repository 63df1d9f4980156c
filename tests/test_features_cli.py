"""Step definitions for features/cli.feature: version, help groups, usage errors, the fast checkers."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from typing import Any

from conftest import REPO, Env, Result
from pytest_bdd import parsers, scenarios, then, when

from pipeline import __version__

scenarios("cli.feature")


@when(parsers.parse('I run "{command}" in a fresh interpreter'))
def run_fresh(env: Env, ctx: dict[str, Any], command: str) -> None:
    code = ("import sys\nfrom pipeline.cli import main\n"
            f"rc = main({env.args(*shlex.split(command))!r})\n"
            "print('TYPER', 'typer' in sys.modules, file=sys.stderr)\nraise SystemExit(rc)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    ctx["result"] = Result(proc.returncode, proc.stdout, proc.stderr)


@then("the interpreter never imported typer")
def no_typer(ctx: dict[str, Any]) -> None:
    assert ctx["result"].err.splitlines()[-1] == "TYPER False"


@then("the output is exactly the package version")
def version(ctx: dict[str, Any]) -> None:
    assert ctx["result"].out == f"memfold {__version__}\n"


@then(parsers.parse("the output lists the groups {groups} in that order"))
def groups_in_order(ctx: dict[str, Any], groups: str) -> None:
    names = [g.strip() for g in groups.replace(" and ", ",").split(",")]
    out = ctx["result"].out
    positions = [out.find(f"─ {name} ") for name in names]
    assert -1 not in positions and positions == sorted(positions), positions


@then(parsers.parse('the output does not show "{text}"'))
def not_shown(ctx: dict[str, Any], text: str) -> None:
    assert text not in ctx["result"].out


@then(parsers.parse('the JSON error code is "{code}"'))
def json_code(ctx: dict[str, Any], code: str) -> None:
    answer = json.loads(ctx["result"].out)
    assert (answer["ok"], answer["code"], answer["exitCode"]) == (False, code, ctx["result"].code)


@then(parsers.parse('the JSON error hint names "{text}"'))
def json_hint(ctx: dict[str, Any], text: str) -> None:
    assert text in json.loads(ctx["result"].out)["hint"]
