"""On a machine that must run every test (``MEMFOLD_TEST_NO_SKIPS=1``, set by ``.ci/run``), a skipped
test fails, naming its reason: each skip in the suite is a gate on what the machine has (npm, a kernel
feature, root, chromium), and CI installs or has all of them, so a skip there is a gap, not a pass."""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest

FLAG = "MEMFOLD_TEST_NO_SKIPS"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if os.environ.get(FLAG) != "1" or not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = (f"skipped where {FLAG}=1 asks every test to run: {reason}\n"
                       "install what the reason names (see .ci/run), or unset the variable to allow skips")
