"""Step definitions for features/docs.feature: memfold help, and the reference generated from the code."""

from __future__ import annotations

from typing import Any

from pytest_bdd import parsers, scenarios, then, when

from pipeline.commands import codes, reference
from pipeline.commands.registry import root_command

scenarios("docs.feature")


@when("I generate the command reference")
def generate(ctx: dict[str, Any]) -> None:
    ctx["page"] = reference.commands_page(root_command())


@then("it has a section for every command and subcommand of memfold --help")
def every_command(ctx: dict[str, Any]) -> None:
    root = root_command()
    names = reference.command_names(root)
    assert len(names) > 30
    for words in names:
        assert f"\n### memfold {' '.join(words)}\n" in ctx["page"], words


@then(parsers.parse('the generated error reference lists "{code}" with exit code {exit_code:d}'))
def error_listed(code: str, exit_code: int) -> None:
    row = next(line for line in codes.errors_page().splitlines() if line.startswith(f"| `{code}` |"))
    assert row.split("|")[2].strip() == str(exit_code)
