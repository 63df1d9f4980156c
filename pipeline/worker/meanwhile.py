"""Work of the later stages that the parent does while the worker runs, on the core the worker leaves idle."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def meanwhile(*steps: Callable[[], object]) -> Iterator[Callable[[], None]]:
    """Run ``steps`` in order in a thread once the block calls the ``start`` it is given, and wait
    for them at its end.

    While the worker plans, this process only waits on the worker's pipes. Steps are work a later
    stage does anyway and whose result it keeps (modules imported, patterns compiled, a validator
    built), so doing it here changes no outcome, only when it is paid. The block calls ``start``
    once the worker has what it needs to begin: started earlier, the thread's imports hold the
    interpreter lock while the parent still prepares the policy the worker waits for. A block that
    never starts it (its worker failed to start) runs none of them. A step that fails is left to
    fail again, with its real error, where its result is needed; the steps after it are skipped.
    """

    def run() -> None:
        for step in steps:
            try:
                step()
            except Exception:
                return

    thread = threading.Thread(target=run, name="memfold-meanwhile", daemon=True)

    def start() -> None:
        if thread.ident is None:
            thread.start()

    try:
        yield start
    finally:
        if thread.ident is not None:
            thread.join()
