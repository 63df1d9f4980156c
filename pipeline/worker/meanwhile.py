"""Work of the later stages that the parent does while the worker runs, on the core the worker leaves idle."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def meanwhile(*steps: Callable[[], object]) -> Iterator[None]:
    """Run ``steps`` in order in a thread for the length of the block, and wait for them at its end.

    While the worker plans, this process only waits on the worker's pipes. Steps are work a later
    stage does anyway and whose result it keeps (modules imported, patterns compiled, a validator
    built), so doing it here changes no outcome, only when it is paid. A step that fails is left to
    fail again, with its real error, where its result is needed; the steps after it are skipped.
    """

    def run() -> None:
        for step in steps:
            try:
                step()
            except Exception:
                return

    thread = threading.Thread(target=run, name="memfold-meanwhile", daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join()
