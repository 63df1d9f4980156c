"""A skip fails the run where MEMFOLD_TEST_NO_SKIPS=1, and only there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from noskips import FLAG

TESTS = Path(__file__).resolve().parent
SAMPLE = '''
import pytest

def test_runs():
    assert True

@pytest.mark.skipif(True, reason="no frobnicator on this machine")
def test_gated():
    assert True

def test_gated_inside():
    pytest.skip("no widget socket here")
'''


def _run(tmp_path: Path, flag: str | None) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_sample.py").write_text(SAMPLE, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != FLAG and not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = str(TESTS)
    if flag is not None:
        env[FLAG] = flag
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "noskips", "-p", "no:cacheprovider",
                           "--rootdir", str(tmp_path), str(tmp_path / "test_sample.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_a_skip_fails_where_every_test_must_run(tmp_path: Path) -> None:
    result = _run(tmp_path, "1")
    assert result.returncode == 1, result.stdout
    # A skip decided at setup (a marker) fails as an error; one decided inside the test as a failure.
    assert "1 failed, 1 passed, 1 error" in result.stdout
    assert "no frobnicator on this machine" in result.stdout and "no widget socket here" in result.stdout


def test_a_skip_is_a_skip_elsewhere(tmp_path: Path) -> None:
    for flag in (None, "0"):
        result = _run(tmp_path, flag)
        assert result.returncode == 0, result.stdout
        assert "1 passed, 2 skipped" in result.stdout
