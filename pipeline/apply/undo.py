"""Undo a run: put back its pre-state from the run's backup, as a new receipted transaction."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..errors import StaleState, UsageError
from ..fsutil import read_bounded, sha256_bytes
from ..receipts.receipt import load_receipt, normalize_maps
from ..state import Operation, PreState
from ..store.memory import INDEX_NAME, parse_memory
from ..store.state import find_name
from .journal import BACKUP
from .runs import find_run


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
            data = read_bounded(run_dir / BACKUP / "harness" / name)
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
