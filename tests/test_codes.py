"""Stable error codes are read from the source: raised ones with their exit code, reported ones by kind."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import Env

from pipeline.commands import codes

SAMPLE = '''
from ..errors import StaleState, UsageError, Issue

SHARED = "sample.shared"


def stale():
    raise StaleState("changed", code="sample.stale", hint="run it again")


def usage():
    raise UsageError("bad", code=SHARED)


def check(report, code):
    report.fail(f"{code}-ahead", "$", "ahead")
    return Issue(f"sample.{code}", "$", "made from a value")


def run(report):
    check(report, "sample.head")
    report.warn("sample.warned", "$", "a warning")
    return "memfold: error [sample.written]: said by hand"


def _usage_code(kind):
    return "sample.kind"


def screen(name):
    return "sample.held", f"{name} is held", "the fix"


def record(name):
    return Sample(name, "sample.record", "a record named after its family")
'''


def _package(tmp_path: Path) -> Path:
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "mod.py").write_text(SAMPLE)
    return root


def test_raised_codes_carry_the_exit_code_of_their_error_class_and_the_hint(tmp_path: Path) -> None:
    found = codes.scan(_package(tmp_path))
    assert (found["sample.stale"].exits, found["sample.stale"].hints) == ({5}, ["run it again"])
    assert found["sample.shared"].exits == {2}  # through a module constant
    assert found["sample.kind"].exits == {2}  # a function that names a usage error's code
    assert found["sample.stale"].modules == {"pkg.sub.mod"}


def test_reported_codes_are_found_by_kind_with_stems_and_values_expanded(tmp_path: Path) -> None:
    found = codes.scan(_package(tmp_path))
    assert found["sample.warned"].kinds == {"warning"} and found["sample.warned"].exits == set()
    assert "sample.head-ahead" in found  # a stem handed to a helper that adds the suffix
    assert found["sample.written"].kinds == {"written"}
    assert found["sample.held"].kinds == {"problem"}  # a code with its message
    assert "sample.record" in found
    assert codes.matches("sample.anything", found)  # sample.<code>
    assert not codes.matches("other.anything", found)


def test_codes_the_cli_reports_are_in_the_scan_with_the_exit_code_the_cli_returns(env: Env) -> None:
    found = codes.scan()
    for args in (("show", "nope"), ("add", "x", "-d", "d", "--expires", "2026-02-30"), ("help", "nowhere")):
        result = env.run("--json", *args)
        error = json.loads(result.out)
        assert error["code"] in found, error
        assert found[error["code"]].exits == {result.code}, error


def test_the_errors_page_lists_every_code_and_every_exit_code() -> None:
    page = codes.errors_page()
    for code in codes.scan():
        assert f"`{code}`" in page, code
    for cls in codes.error_classes():
        assert f"| {cls.exit_code} | `{cls.__name__}` | `{cls.default_code}` |" in page
