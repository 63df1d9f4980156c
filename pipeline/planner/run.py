"""The planner as a worker process: read a run directory, print one plan, map failures to exit codes."""

from __future__ import annotations

import gc
import json
import os
import sys
from pathlib import Path

from ..errors import MemfoldError
from ..fsutil import read_bounded
from ..store.memory import Memory, is_memory_name, parse_memory
from ..store.state import read_root
from .bound import bounded, lean, stored_size
from .plan import PlanInputError, limits_of, planned
from .planjson import PRINT_LINE_BUDGET, TooLong, compacted, plan_json

# The planner starts once per consolidation: typing stays out of its imports.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, BinaryIO, TextIO

MAX_MANIFEST_BYTES = 16 << 20
MAX_SNAPSHOT_BYTES = 256 << 20


def _json(path: Path, limit: int) -> dict[str, Any]:
    value = json.loads(read_bounded(path, limit).decode("utf-8"))
    if not isinstance(value, dict):
        raise PlanInputError(f"{path.name} is not a JSON object")
    return value


def _names(root: Path) -> list[str]:
    try:
        return sorted(e.name for e in os.scandir(root) if is_memory_name(e.name))
    except FileNotFoundError:
        return []


def plan_run(run_dir: Path) -> bytes:
    """The plan bytes for one run directory; only reads."""
    manifest = _json(run_dir / "manifest.json", MAX_MANIFEST_BYTES)
    snapshot_path = run_dir / "snapshot.json"
    snapshot = _json(snapshot_path, MAX_SNAPSHOT_BYTES) if snapshot_path.exists() else {}
    roots = manifest["roots"]
    selected = set(manifest.get("selected") or [])
    state = read_root(Path(roots["harness"]), limits_of(manifest), hashed=False)
    memories: dict[str, tuple[bytes, Memory]] = {}
    for name, data in state.memories().items():
        try:
            memories[name] = (data, parse_memory(data, name))
        except MemfoldError:
            if name in selected:
                raise
            # An unreadable memory outside the scope is left alone; its name stays taken.
    public = roots.get("public")
    reserved = [*(_names(Path(public)) if public else []), *state.memories()]
    signals_path = run_dir / "signals.json"
    signals = _json(signals_path, MAX_SNAPSHOT_BYTES) if signals_path.exists() else None
    plan, work = planned(manifest, memories, snapshot, Path(roots["project"]), reserved=reserved, signals=signals)
    bound = (manifest.get("limits") or {}).get("maxPlanBytes")
    half = bound // 2 if isinstance(bound, int) else None
    try:
        if half is None or not _surely_longer(plan, half):
            data = plan_json(plan, PRINT_LINE_BUDGET, limit=half)
            if half is None or len(data) <= half:
                return data
    except TooLong:
        pass
    # Far past the default store bound only the compact shape fits (each reason said once); smaller
    # stores keep the seed shape.
    plan = lean(plan)
    compact = compacted(plan)
    data = plan_json(compact, PRINT_LINE_BUDGET)
    whole = stored_size(data, compact)
    if not isinstance(bound, int) or whole <= bound:
        return data
    # Past the bound itself: the part of the plan that fits, the rest for the next run.
    return plan_json(bounded(plan, work, bound, whole), PRINT_LINE_BUDGET)


def _surely_longer(plan: dict[str, Any], limit: int) -> bool:
    """Whether the full text surely passes ``limit`` characters, from a lower bound of its length.

    Every selected name is printed, quoted, in ``selected``, ``inventory``, a cluster's files and
    the staleness, grounding and report items, each item with its reason or summary; a JSON string
    is never shorter than its text. Past the bound the full text would stop at ``limit`` anyway
    (TooLong), so the plan printed is the same, without building its first ``limit`` characters.
    """
    total = 3 * sum(len(name) + 2 for name in plan["selected"])
    for artifact, field in (("staleness", "reason"), ("grounding", "reason"), ("report", "summary")):
        for item in plan[artifact]:
            total += len(item["name"]) + 2 + len(str(item.get(field, "")))
    return total > limit


def _run_dir(argv: list[str]) -> Path:
    """The ``--run-dir`` argument; anything else (help, a typo) goes through argparse for its message."""
    if len(argv) == 2 and argv[0] == "--run-dir" and argv[1] and not argv[1].startswith("-"):
        return Path(argv[1])
    if len(argv) == 1 and argv[0].startswith("--run-dir=") and argv[0] != "--run-dir=":
        return Path(argv[0].removeprefix("--run-dir="))
    import argparse  # ~20 ms of imports, on every worker start if it were at the top

    parser = argparse.ArgumentParser(prog="python -m pipeline.planner",
                                     description="memfold's built-in deterministic consolidation planner")
    parser.add_argument("--run-dir", required=True, type=Path, help="the run directory (manifest.json, snapshot.json)")
    run_dir: Path = parser.parse_args(argv).run_dir
    return run_dir


def main(argv: list[str] | None = None, stdout: BinaryIO | None = None, stderr: TextIO | None = None) -> int:
    run_dir = _run_dir(sys.argv[1:] if argv is None else argv)
    err = stderr or sys.stderr
    if argv is None:
        # The worker process builds millions of small acyclic objects and lives for one run: cyclic
        # collection would only rescan them (it made planning superlinear), so it stays off there. A
        # caller using main() as a library keeps its collector.
        gc.disable()
    try:
        data = plan_run(run_dir)
    except MemfoldError as exc:
        print(f"memfold planner: {exc} [{exc.code}]", file=err)
        return exc.exit_code or 1
    except KeyError as exc:
        print(f"memfold planner: the manifest lacks the field {exc.args[0]!r}", file=err)
        return 1
    except (PlanInputError, OSError, ValueError, TypeError) as exc:
        print(f"memfold planner: {type(exc).__name__}: {exc}", file=err)
        return 1
    out = stdout or sys.stdout.buffer
    out.write(data)
    out.flush()
    return 0
