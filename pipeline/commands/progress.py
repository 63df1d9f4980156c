"""Progress for long work, on a terminal only: cron, pipes and --json see nothing of it."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Tick = Callable[[], None]


def _nothing() -> None:
    return None


@contextmanager
def progress(label: str, total: int | None, *, quiet: bool = False) -> Iterator[Tick]:
    """A bar on stderr that ``tick()`` advances by one; a no-op unless stderr is a terminal.

    With ``total`` None the bar pulses and counts. It is transient: the command's own output (the
    totals line) is what stays on the screen.
    """
    if quiet or not sys.stderr.isatty():
        yield _nothing
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=total)

        def tick() -> None:
            bar.advance(task)

        yield tick
