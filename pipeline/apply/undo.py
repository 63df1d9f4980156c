"""Undo a run: put back its pre-state from the run's backup, as a new receipted transaction."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..errors import MemfoldError, StaleState, UsageError
from ..fsutil import read_bounded, sha256_bytes
from ..paths import find_run
from ..receipts.receipt import load_receipt, normalize_maps
from ..state.model import Operation, PreState
from ..store.jsontext import read_json
from ..store.memory import INDEX_NAME, parse_memory
from ..store.state import find_name
from .journal import backup_path


def undo_ops(runs_dir: Path, run_id: str) -> Callable[[PreState], list[Operation]]:
    run_dir = find_run(runs_dir, run_id)
    receipt_path = run_dir / "post-receipt.json"
    if not receipt_path.exists():
        raise UsageError(f"run {run_id} never committed; there is nothing to undo", code="usage.no-receipt")
    receipt = load_receipt(receipt_path)
    source = normalize_maps(receipt.get("sourceHashes"))["harness"]
    final = normalize_maps(receipt.get("finalHashes"))["harness"]
    touched = sorted(n for n in set(source) | set(final) if n != INDEX_NAME and source.get(n) != final.get(n))

    def build(pre: PreState) -> list[Operation]:
        changed = [n for n in touched if pre.harness.hashes.get(n) != final.get(n)]
        if changed and all(pre.harness.hashes.get(n) == source.get(n) for n in touched):
            by = _undone_by(runs_dir, run_id)
            raise StaleState(
                f"run {run_id} is already undone{f' by run {by}' if by else ''}: its files are as they were "
                "before it", code="undo.already-undone",
                hint=f"nothing to undo; `memfold undo {by}` would redo it" if by else "nothing to undo",
                data={"undoneBy": by} if by else None,
            )
        if changed:
            raise StaleState(
                f"cannot undo run {run_id}: {', '.join(changed[:5])} changed since that run",
                code="undo.stale",
                hint="undo the later runs first (newest first), or edit the memories by hand",
            )
        operations = []
        for name in touched:
            if name not in source:
                operations.append(Operation(name, "delete", None))
                continue
            data = read_bounded(backup_path(run_dir, "harness", name))
            if sha256_bytes(data) != source[name]:
                raise StaleState(f"the backup of {name} in run {run_id} does not match its receipt",
                                 code="undo.backup-mismatch")
            memory = parse_memory(data, name)
            clash = find_name(pre.memories.keys(), name)
            if clash is not None and clash != name:
                raise StaleState(f"{name} now clashes with {clash}", code="undo.stale")
            kind = "rewrite" if name in pre.memories else "create"
            operations.append(Operation(name, kind, memory.visibility, data))
        return operations

    return build


def _undone_by(runs_dir: Path, run_id: str) -> str | None:
    """The newest committed undo run of ``run_id``: its snapshot names the run it undid."""
    try:
        names = sorted((p.name for p in runs_dir.iterdir() if p.name != run_id), reverse=True)
    except OSError:
        return None
    for name in names:
        try:
            snapshot = read_json(runs_dir / name / "snapshot.json", 1 << 20)
        except (OSError, ValueError, MemfoldError):
            continue
        if (isinstance(snapshot, dict) and snapshot.get("undoes") == run_id
                and (runs_dir / name / "post-receipt.json").exists()):
            return name
    return None
