"""``python -m pipeline.planner --run-dir DIR`` prints one consolidation plan."""

from __future__ import annotations

from .run import main

raise SystemExit(main())
