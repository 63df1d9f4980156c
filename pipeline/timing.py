"""Stage timings of one transaction, for `memfold bench` and the --json summary."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


class Timings:
    def __init__(self) -> None:
        self.stages: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Add the wall time (milliseconds) of the ``with`` body to ``name``, also when it raises."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, (time.perf_counter() - start) * 1000)

    def add(self, name: str, milliseconds: float) -> None:
        self.stages[name] = round(self.stages.get(name, 0.0) + milliseconds, 3)
