"""The project lock: one exclusive flock per project home, with owner info for diagnostics."""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .errors import LockHeld
from .fsutil import atomic_write, dump_json


def read_owner(info_path: Path) -> dict[str, Any] | None:
    try:
        with open(info_path, "rb") as fh:
            data = json.loads(fh.read(64 * 1024))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def describe_owner(owner: dict[str, Any] | None) -> str:
    if not owner:
        return "another memfold process"
    return (
        f"run {owner.get('runId', '?')} ({owner.get('operation', '?')}, pid {owner.get('pid', '?')} "
        f"on {owner.get('host', '?')}, since {owner.get('since', '?')})"
    )


def _wait_for_owner(info_path: Path) -> dict[str, Any] | None:
    """The holder writes lock.json just after taking the lock: give it a moment to appear."""
    for _ in range(25):
        owner = read_owner(info_path)
        if owner and owner.get("pid") != os.getpid():
            return owner
        time.sleep(0.02)
    return read_owner(info_path)


@contextmanager
def project_lock(
    lock_path: Path,
    info_path: Path,
    *,
    run_id: str,
    operation: str,
    timeout: float,
    now: str,
) -> Iterator[dict[str, Any]]:
    """Hold the lock for the block. Contention past ``timeout`` raises LockHeld naming the holder.

    The descriptor is opened close-on-exec (Python's default), so a worker never inherits it and a
    SIGKILLed holder frees the lock at once.
    """
    import portalocker

    deadline = time.monotonic() + max(timeout, 0.0)
    fh = open(lock_path, "a+b")  # noqa: SIM115 - released in finally
    try:
        while True:
            try:
                portalocker.lock(fh, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING)
                break
            except portalocker.LockException:
                if time.monotonic() >= deadline:
                    owner = _wait_for_owner(info_path)
                    raise LockHeld(
                        f"the project is locked by {describe_owner(owner)}",
                        code="lock.held",
                        hint="wait for it to finish and retry; a crashed holder frees the lock at once",
                        data={"holder": owner or {}},
                    ) from None
                time.sleep(0.02)
        owner = {"runId": run_id, "pid": os.getpid(), "host": socket.gethostname(),
                 "operation": operation, "since": now}
        atomic_write(info_path, dump_json(owner), durable=False)
        try:
            yield owner
        finally:
            try:
                os.unlink(info_path)
            except OSError:
                pass
    finally:
        fh.close()
