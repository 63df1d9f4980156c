"""Stage timings of one transaction, for `memfold bench` and the --json summary."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class Timings:
    def __init__(self) -> None:
        self.stages: dict[str, float] = {}

    def run(self, stage: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Call ``fn`` and add its wall time (milliseconds) to ``stage``."""
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            elapsed = (time.perf_counter() - start) * 1000
            self.stages[stage] = round(self.stages.get(stage, 0.0) + elapsed, 3)
