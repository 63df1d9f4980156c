"""The threads kept for the process: a job goes to an idle kept thread, a new one starts only when none
is idle, and a failing job leaves its thread for the next. (Other tests of the same process may have
left kept threads idle: the checks are on the set of threads, not on one of them.)"""

from __future__ import annotations

import threading
import time

from pipeline.background import run_beside


def _threads() -> set[int | None]:
    return {t.ident for t in threading.enumerate()}


def test_jobs_one_after_another_start_no_thread_once_one_is_idle() -> None:
    run_beside(lambda: None).join()  # at least one kept thread is idle from here on
    before = _threads()
    seen: list[int] = []
    for _ in range(5):
        run_beside(lambda: seen.append(threading.get_ident())).join()
    assert len(seen) == 5 and set(seen) <= before and threading.get_ident() not in seen
    assert _threads() == before


def test_jobs_at_once_each_get_a_thread_and_a_failure_keeps_its_thread() -> None:
    gate = threading.Event()
    seen: list[int] = []

    def blocked() -> None:
        seen.append(threading.get_ident())
        gate.wait(10)

    jobs = [run_beside(blocked) for _ in range(3)]
    assert all(job.alive() for job in jobs)
    deadline = time.monotonic() + 10
    while len(seen) < 3 and time.monotonic() < deadline:  # all three running at once, each on its own
        time.sleep(0.01)
    gate.set()
    for job in jobs:
        job.join()
    assert len(set(seen)) == 3 and not any(job.alive() for job in jobs)
    before = _threads()

    def failing() -> None:
        raise RuntimeError("a job's own failure")

    for _ in range(3):
        run_beside(failing).join()
    after: list[int] = []
    run_beside(lambda: after.append(threading.get_ident())).join()
    assert after and _threads() == before  # no thread lost to the failures, none added
