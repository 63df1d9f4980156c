"""Threads kept for the life of the process for work beside a commit or after its answer.

A warm server commits many times, and each commit started threads of its own: one per search index
it refreshes, one to remove the run dirs it retires. ``Thread.start`` waits until the new thread
runs, about 0.1 ms on an idle machine and milliseconds on a busy one, on every write. Here a job
goes to a thread that is idle, and a thread is started only when none is (the first commits of a
process); threads never exit, so a process holds as many as it ever ran jobs at once.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


class Job:
    """One job handed to the kept threads: wait for it with ``join``."""

    __slots__ = ("_done", "_finished")

    def __init__(self, lock: Any) -> None:
        self._done = lock
        self._finished = False

    def join(self) -> None:
        if not self._finished:
            self._done.acquire()
            self._done.release()
            self._finished = True

    def alive(self) -> bool:
        return not self._finished and bool(self._done.locked())


class _Kept:
    def __init__(self) -> None:
        import threading
        from _queue import SimpleQueue  # the C queue: no import of queue, heapq or collections' deque

        self._threading = threading
        self._jobs: Any = SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0

    def _worker(self) -> None:
        while True:
            fn, done = self._jobs.get()
            try:
                fn()
            except BaseException:  # a job reports its own failures; the thread stays for the next
                pass
            finally:
                with self._lock:
                    self._idle += 1
                done.release()

    def run(self, fn: Callable[[], object], name: str) -> Job:
        done = self._threading.Lock()
        done.acquire()
        with self._lock:
            start = self._idle == 0
            if not start:
                self._idle -= 1
        if start:
            self._threading.Thread(target=self._worker, name=name, daemon=True).start()
        self._jobs.put((fn, done))
        return Job(done)


_KEPT: list[_Kept] = []
_FORK_HOOK: list[bool] = []


def run_beside(fn: Callable[[], object], name: str = "memfold-background") -> Job:
    """Run ``fn`` on a kept thread (exceptions are dropped: ``fn`` records what it must)."""
    if not _KEPT:
        if not _FORK_HOOK:
            # A child forked without exec has none of the parent's threads: it starts its own.
            os.register_at_fork(after_in_child=_KEPT.clear)
            _FORK_HOOK.append(True)
        _KEPT.append(_Kept())
    return _KEPT[0].run(fn, name)
