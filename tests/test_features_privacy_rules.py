"""Step definitions for features/privacy_rules.feature (shared steps come from conftest.py)."""

from __future__ import annotations

from typing import Any

from conftest import Env
from pytest_bdd import given, parsers, scenarios, then, when

scenarios("privacy_rules.feature")


@when(parsers.parse('I add a safe memory "{name}" whose body says "{text}"'))
def add_safe(env: Env, ctx: dict[str, Any], name: str, text: str) -> None:
    ctx["result"] = env.run("add", name, "-d", "a note", "--visibility", "safe", "-b", text)


@given(parsers.parse('the private memory "{name}" whose body says "{text}"'))
def add_private(env: Env, name: str, text: str) -> None:
    result = env.run("add", name, "-d", "a note", "--visibility", "private", "-b", text)
    assert result.code == 0, result.err


@then(parsers.parse('the error names the rule "{rule}"'))
def error_names_rule(ctx: dict[str, Any], rule: str) -> None:
    err = ctx["result"].err
    assert f"{rule} (" in err and "line " in err, err


@then(parsers.parse('the error does not show "{value}"'))
def error_hides(ctx: dict[str, Any], value: str) -> None:
    result = ctx["result"]
    assert value not in result.err and value not in result.out


@then(parsers.parse('the output does not show "{value}"'))
def output_hides(ctx: dict[str, Any], value: str) -> None:
    result = ctx["result"]
    assert value not in result.out and value not in result.err


@when("inject runs as its own process")
def inject_process(env: Env, ctx: dict[str, Any]) -> None:
    ctx["result"] = env.spawn("inject", "--query", "deploy", env={"PYTHONPROFILEIMPORTTIME": "1"})


@then("that process imported neither phonenumbers nor stdnum")
def no_pii_imports(ctx: dict[str, Any]) -> None:
    imported = [line.rsplit("|", 1)[-1].strip() for line in ctx["result"].err.splitlines()
                if line.startswith("import time:")]
    assert "re2" in imported, "the rules did not run"
    assert not [m for m in imported if m.split(".")[0] in ("phonenumbers", "stdnum")]


@given(parsers.parse('someone wrote the mirror file "{name}" by hand, saying "{text}"'))
def hand_written(env: Env, name: str, text: str) -> None:
    (env.mirror / f"{name}.md").write_text(f"---\ndescription: deploy notes\nvisibility: safe\n---\n{text}\n")
