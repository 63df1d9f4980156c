"""The transaction skeleton: layout, run id, lock, recovery first, and I/O errors as apply.io."""

from __future__ import annotations

import datetime as dt
import errno
from pathlib import Path

import pytest
from conftest import Env

from pipeline.apply.commit import Services
from pipeline.apply.journal import PENDING
from pipeline.apply.runs import RUN_ID_RE
from pipeline.apply.skeleton import transaction
from pipeline.errors import ApplyFailed, LockHeld
from pipeline.paths import make_layout
from pipeline.store.state import Limits
from pipeline.timing import Timings

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)


def _services(env: Env) -> Services:
    return Services(make_layout(env.home, env.project), Limits(), lambda: NOW, None)


def test_it_creates_the_layout_and_holds_the_lock_for_a_fresh_run_id(env: Env) -> None:
    svc = _services(env)
    with transaction(svc, "init", lock_timeout=0) as tx:
        assert tx.created is True and tx.recovered is None
        assert RUN_ID_RE.match(tx.run_id) and tx.run_id.startswith("20261130T120000Z-")
        assert svc.layout.harness.is_dir() and svc.layout.mirror is not None and svc.layout.mirror.is_dir()
        with pytest.raises(LockHeld):
            with transaction(svc, "add", lock_timeout=0):
                pytest.fail("entered while the lock was held")
    with transaction(svc, "add", lock_timeout=0) as again:
        assert again.created is False and again.run_id != tx.run_id


def test_an_os_error_inside_becomes_apply_io_and_the_lock_is_released(env: Env) -> None:
    svc = _services(env)
    with pytest.raises(ApplyFailed) as exc:
        with transaction(svc, "import", lock_timeout=0):
            raise OSError(errno.ENOSPC, "No space left on device")
    assert exc.value.code == "apply.io" and exc.value.exit_code == 6
    assert exc.value.message == "import failed before its commit point and changed nothing: No space left on device"
    assert svc.layout.lock_info.read_bytes() == b""  # no owner left behind
    with transaction(svc, "add", lock_timeout=0):
        pass


def test_an_unwritable_home_is_apply_io_too(env: Env, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    svc = Services(make_layout(blocker / "home", env.project), Limits(), lambda: NOW, None)
    with pytest.raises(ApplyFailed) as exc:
        with transaction(svc, "init", lock_timeout=0):
            pytest.fail("entered without a home")
    assert exc.value.code == "apply.io"


def test_recovery_runs_before_the_body_and_is_timed(env: Env) -> None:
    assert env.run("add", "project_a", "-d", "a fact").code == 0
    svc = _services(env)
    # A run killed after it staged a file and before its commit point: a pending marker, no journal.
    stray = svc.layout.harness / ".memfold-0123456789ab-project_b.md.tmp"
    stray.write_bytes(b"half-written")
    (svc.layout.project_home / PENDING).write_text("20261130T115959Z-0000beef")
    timings = Timings()
    with transaction(svc, "consolidate", lock_timeout=0, timings=timings) as tx:
        assert not stray.exists()
        assert tx.recovered == "discarded run 20261130T115959Z-0000beef"
    assert not (svc.layout.project_home / PENDING).exists()
    assert "recover" in timings.stages
