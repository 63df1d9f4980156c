"""The one transaction skeleton: layout, run id, lock, recovery, and I/O errors as ``apply.io``.

Consolidation, direct edits (add, update, forget, import, undo, ...), ``init`` and ``recover`` all
open their transaction here and then run only their own stages inside it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import ApplyFailed
from ..frozen import Frozen
from ..paths.ondisk import ensure_layout
from ..timing import Timings
from .commit import Services, run_recovery
from .lock import project_lock
from .runs import new_run_id

IO_HINT = "check free space and permissions of the memfold home and the project"


class Transaction(Frozen):
    """An open transaction: its run id, whether the layout was new, what recovery did (immutable)."""

    __slots__ = ("run_id", "operation", "created", "recovered")
    run_id: str
    operation: str
    created: bool
    recovered: str | None

    def __init__(self, run_id: str, operation: str, created: bool, recovered: str | None) -> None:
        self._set(run_id=run_id, operation=operation, created=created, recovered=recovered)


@contextmanager
def transaction(svc: Services, operation: str, *, lock_timeout: float,
                timings: Timings | None = None) -> Iterator[Transaction]:
    """Create the layout, take the project lock for a new run id, finish any interrupted run, then yield.

    An ``OSError`` from anywhere inside (a full disk, a permission) becomes ``ApplyFailed`` with code
    ``apply.io``: the journal makes the commit all or nothing, so the message can say nothing changed
    unless the commit point was passed, where recovery rolls forward under the next lock.
    """
    try:
        layout = svc.layout
        created = ensure_layout(layout)
        run_id = new_run_id(svc.clock())
        with project_lock(layout.lock_path, layout.lock_info, run_id=run_id, operation=operation,
                          timeout=lock_timeout, now=svc.now()):
            with (timings or Timings()).stage("recover"):
                recovered = run_recovery(svc)
            yield Transaction(run_id, operation, created, recovered)
    except OSError as exc:
        raise ApplyFailed(f"{operation} failed before its commit point and changed nothing: {exc.strerror or exc}",
                          code="apply.io", hint=IO_HINT) from exc
