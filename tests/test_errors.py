"""errors: every failure has a stable code and the exit code of its kind, each explained in the docs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import REPO

from pipeline import errors
from pipeline.errors import InputRejected, Issue, IssueList, MemfoldError

EXPECTED = {"InputRejected": 1, "PrivacyRejected": 1, "UnsafePath": 1, "UsageError": 2, "UnsafeOwner": 2, "ConfigError": 2,
            "LockHeld": 3, "WorkerFailed": 4, "StaleState": 5, "ApplyFailed": 6, "VerifyFailed": 7,
            "RecoveryNeeded": 8}


def _classes() -> dict[str, type[MemfoldError]]:
    return {name: value for name, value in vars(errors).items()
            if isinstance(value, type) and issubclass(value, MemfoldError) and value is not MemfoldError}


def test_every_error_class_has_its_exit_code() -> None:
    assert {name: cls.exit_code for name, cls in _classes().items()} == EXPECTED


def test_the_troubleshooting_page_has_a_section_for_every_failing_exit_code() -> None:
    text = (REPO / "docs" / "troubleshooting.md").read_text(encoding="utf-8")
    sections = {int(m.group(1)) for m in re.finditer(r"^## Exit (\d)\b", text, re.M)}
    assert sections == set(EXPECTED.values())


def test_as_dict_carries_code_exit_code_hint_issues_and_data() -> None:
    exc = InputRejected("bad plan", code="plan.schema", hint="fix it",
                        issues=[Issue("plan.schema", "$.operations[0]", "missing name")], data={"n": 1})
    assert exc.as_dict() == {"ok": False, "code": "plan.schema", "exitCode": 1, "message": "bad plan",
                             "hint": "fix it", "errors": [{"code": "plan.schema", "path": "$.operations[0]",
                                                           "message": "missing name"}], "data": {"n": 1}}
    assert MemfoldError("x").as_dict() == {"ok": False, "code": "error", "exitCode": 1, "message": "x"}


def test_an_issue_list_raises_once_naming_the_first_issue_and_the_count() -> None:
    issues = IssueList()
    issues.raise_if_any(InputRejected, "nothing to report")
    issues.add("a.first", "$.a", "first problem")
    issues.add("b.second", "$.b", "second problem")
    with pytest.raises(InputRejected) as exc:
        issues.raise_if_any(InputRejected, "plan rejected", hint="see the list")
    assert exc.value.code == "a.first"
    assert exc.value.message == "plan rejected: first problem (and 1 more)"
    assert [i.code for i in exc.value.issues] == ["a.first", "b.second"]


def test_an_issue_is_immutable() -> None:
    issue = Issue("c", "$", "m")
    with pytest.raises(AttributeError):
        issue.code = "other"  # type: ignore[misc]
    assert issue == Issue("c", "$", "m")


def test_every_code_raised_in_the_package_is_a_stable_dotted_name() -> None:
    pattern = re.compile(r"""code=["']([^"']+)["']""")
    codes = {m.group(1) for path in Path(REPO / "pipeline").rglob("*.py")
             for m in pattern.finditer(path.read_text(encoding="utf-8"))}
    assert codes
    bad = sorted(c for c in codes if not re.fullmatch(r"[a-z][a-z0-9]*(\.[a-z0-9][a-z0-9-]*)+", c))
    assert bad == []


def test_the_text_form_names_code_message_further_issues_and_hint() -> None:
    exc = InputRejected("plan rejected: first", code="a.first", hint="fix it",
                        issues=[Issue("a.first", "$.a", "first"), Issue("b.second", "$.b", "second")])
    assert exc.text() == ("memfold: error [a.first]: plan rejected: first\n"
                          "  - [b.second] $.b: second\n  hint: fix it\n")
