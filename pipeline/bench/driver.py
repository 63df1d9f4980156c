"""``python -m pipeline.bench.driver HOME PROJECT``: the body of ``memfold --json consolidate --no-context``.

The same function the command line runs (services, cached rules and config, the config's own output
bounds: the built-in planner's plan fits the defaults at every measured size), called without the
command-line shell; its JSON summary carries the stage timings the bench reports.
"""

from __future__ import annotations

import sys
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..worker.extract import ExtractLimits

MiB = 1 << 20


def raised_limits() -> ExtractLimits:
    from ..worker.extract import ExtractLimits

    return ExtractLimits(max_stdout_bytes=1024 * MiB, max_lines=4_000_000, max_line_bytes=64 * MiB,
                         max_plan_bytes=1024 * MiB)


def main(argv: list[str]) -> int:
    from ..commands.consolidation import consolidate
    from ..commands.context import STATE

    STATE.home, STATE.project, STATE.json = Path(argv[0]), Path(argv[1]), True
    return consolidate(no_context=True, json_out=True)


if __name__ == "__main__":
    # As the command line runs it: no cyclic collector, no interpreter teardown after the exit handlers.
    import gc

    from ..errors import exit_after_handlers

    gc.disable()
    exit_after_handlers(main(sys.argv[1:]))
