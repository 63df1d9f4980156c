"""The threads kept for the process: a job goes to an idle kept thread, a new one starts only when none
is idle, and a failing job leaves its thread for the next."""

from __future__ import annotations

import threading
import time

from pipeline.background import run_beside


def _ident(out: list[int]) -> None:
    out.append(threading.get_ident())


def test_jobs_one_after_another_run_on_one_kept_thread() -> None:
    seen: list[int] = []
    for _ in range(5):
        run_beside(lambda: _ident(seen)).join()
    assert len(seen) == 5 and len(set(seen)) == 1
    assert seen[0] != threading.get_ident()


def test_jobs_at_once_each_get_a_thread_and_a_failure_keeps_its_thread() -> None:
    gate = threading.Event()
    seen: list[int] = []

    def blocked() -> None:
        _ident(seen)
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

    def failing() -> None:
        _ident(seen)
        raise RuntimeError("a job's own failure")

    run_beside(failing).join()
    after: list[int] = []
    run_beside(lambda: _ident(after)).join()
    assert seen[-1] in seen[:3] and after[0] in seen[:3]  # no thread was lost or added
    before = {t.ident for t in threading.enumerate()}
    run_beside(lambda: None).join()
    assert {t.ident for t in threading.enumerate()} == before
