"""Step definitions for features/cli.feature: version, help groups, usage errors, the fast checkers."""

from __future__ import annotations

import json
import shlex
from typing import Any

from conftest import Env, fresh_interpreter
from pytest_bdd import parsers, scenarios, then, when

from pipeline import __version__

scenarios("cli.feature")


@when(parsers.parse('I run "{command}" in a fresh interpreter'))
def run_fresh(env: Env, ctx: dict[str, Any], command: str) -> None:
    ctx["result"] = fresh_interpreter(env, shlex.split(command))


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
