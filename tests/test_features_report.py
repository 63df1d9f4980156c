"""Step definitions for features/report.feature: the HTML audit report, read back from disk."""

from __future__ import annotations

import html
import re
import stat
from pathlib import Path
from typing import Any

from conftest import Env
from pytest_bdd import parsers, scenarios, then, when

scenarios("report.feature")


def _report(env: Env, ctx: dict[str, Any]) -> Path:
    path = Path(ctx["result"].json()["report"])
    return path if path.is_absolute() else env.project / path


def _page(env: Env, ctx: dict[str, Any]) -> str:
    return _report(env, ctx).read_text(encoding="utf-8")


@when(parsers.parse('I write the public report to "{name}" beside the project'))
def public_report(env: Env, ctx: dict[str, Any], name: str) -> None:
    # An absolute --out: a relative one is taken from the working directory, as a user expects.
    ctx["result"] = env.run("report", "--public", "--json", "--out", str(env.project.parent / name))


@then("the report has one timeline entry per receipt on disk")
def one_entry_per_receipt(env: Env, ctx: dict[str, Any]) -> None:
    receipts = list((env.project_home / "receipts").iterdir())
    assert _page(env, ctx).count('<li class="receipt') == len(receipts) == ctx["result"].json()["receipts"]


@then(parsers.parse('the report marks {count:d} hand edit naming "{line}"'))
def hand_edit_marked(env: Env, ctx: dict[str, Any], count: int, line: str) -> None:
    page = _page(env, ctx)
    marks = re.findall(r'<li class="gap handedit"[^>]*>(.*?)</li></ul></li>', page)
    assert len(marks) == count and line in marks[0] and "HAND EDIT" in marks[0]
    assert ctx["result"].json()["handEdits"] == count


@then(parsers.parse("the report lies under the memfold home with mode {mode}"))
def under_home(env: Env, ctx: dict[str, Any], mode: str) -> None:
    path = _report(env, ctx)
    assert path.parent == env.home / "reports"
    assert stat.S_IMODE(path.stat().st_mode) == int(mode, 8)


@then(parsers.parse("the report has mode {mode}"))
def has_mode(env: Env, ctx: dict[str, Any], mode: str) -> None:
    assert stat.S_IMODE(_report(env, ctx).stat().st_mode) == int(mode, 8)


@then("the report says it holds private memory text")
def says_private(env: Env, ctx: dict[str, Any]) -> None:
    assert "This report holds private memory text" in _page(env, ctx)


@then(parsers.parse('the report contains "{text}"'))
def contains(env: Env, ctx: dict[str, Any], text: str) -> None:
    assert text in html.unescape(_page(env, ctx))


@then(parsers.parse('the report does not contain "{text}"'))
def lacks(env: Env, ctx: dict[str, Any], text: str) -> None:
    page = _page(env, ctx)
    assert text not in page and text not in html.unescape(page)
