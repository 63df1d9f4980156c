"""Stage timings of one transaction, for `memfold bench` and the --json summary."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class Timings:
    """``on_stage`` is told each stage's name as it starts (a host showing progress); it must not raise."""

    def __init__(self, on_stage: Callable[[str], None] | None = None) -> None:
        self.stages: dict[str, float] = {}
        self.on_stage = on_stage

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Add the wall time (milliseconds) of the ``with`` body to ``name``, also when it raises."""
        if self.on_stage is not None:
            self.on_stage(name)
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, (time.perf_counter() - start) * 1000)

    def add(self, name: str, milliseconds: float) -> None:
        self.stages[name] = round(self.stages.get(name, 0.0) + milliseconds, 3)
