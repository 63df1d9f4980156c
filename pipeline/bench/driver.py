"""``python -m pipeline.bench.driver HOME PROJECT``: one consolidation as the CLI runs it, minus typer.

It runs with the config's own output bounds (the defaults in a bench store): the built-in planner's
plan fits them at every measured size, and the bench shows it does.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from pathlib import Path

from ..worker.extract import ExtractLimits

MiB = 1 << 20


def raised_limits() -> ExtractLimits:
    return ExtractLimits(max_stdout_bytes=1024 * MiB, max_lines=4_000_000, max_line_bytes=64 * MiB,
                         max_plan_bytes=1024 * MiB)


def main(argv: list[str]) -> int:
    from ..apply.commit import Services
    from ..config import load_config
    from ..paths import check_layout, make_layout
    from ..privacy import load_ruleset
    from ..transaction import ConsolidateRequest, consolidate

    home, project = Path(argv[0]), Path(argv[1])
    cfg = load_config(home / "config.yaml")
    layout = make_layout(home, project)
    check_layout(layout)
    svc = Services(layout=layout, limits=cfg.store_limits(), clock=lambda: dt.datetime.now(dt.UTC),
                   ruleset=load_ruleset(cfg.privacy.rules or None, cfg.privacy.allowlist or None),
                   keep_runs=cfg.runs.keep)
    summary = consolidate(svc, ConsolidateRequest(workers=cfg.workers, parent_env=dict(os.environ),
                                                  extract_limits=cfg.extract_limits()))
    sys.stdout.write(json.dumps(summary, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
