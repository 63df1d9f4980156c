"""The bodies of ``memfold import`` and ``memfold export``, without typer (``spec`` lists them).

Other tools' memory in, a Claude Code memory dir out. A plain invocation runs through ``quick``: an
import of thousands of files should not pay for typer and pydantic first.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError
from .context import emit, lock_timeout, services, want_json

FORMATS = {"pi-notes": 1, "pi-memory": 1, "claude": 1, "harness": 2}


def import_(fmt: str, paths: list[Path], json_out: bool = False) -> int:
    """Import another tool's memory as one receipted transaction; importing twice adds nothing."""
    from typing import Any

    from ..edits import direct_transaction
    from ..importers import parsers, plan_import
    from .progress import progress

    if fmt not in FORMATS:
        raise UsageError(f"unknown import format {fmt!r} (one of {', '.join(FORMATS)})", code="usage.format")
    if len(paths) != FORMATS[fmt]:
        raise UsageError(f"import {fmt} takes {FORMATS[fmt]} path(s)", code="usage.paths")
    quiet = want_json(json_out)
    with progress(f"reading {fmt}", _count(paths), quiet=quiet) as tick:
        parsed = parsers()[fmt](*paths, tick=tick)
    svc = services()
    report: dict[str, Any] = {}
    extra = {"import": fmt, "sources": [str(p.absolute()) for p in paths]}
    with progress(f"importing {len(parsed.candidates):,} candidates as one transaction", None, quiet=quiet):
        result = direct_transaction(svc, "import", plan_import(parsed, svc.ruleset, report),
                                    lock_timeout=lock_timeout(), extra=extra)
    data = {**result.as_dict(), "format": fmt, "imported": report.get("imported", []),
            "skipped": report.get("skipped", [])}
    lines = [f"imported {i['source']} as {i['name']} ({i['visibility']})"
             + (f": {'; '.join(i['notes'])}" if i.get("notes") else "") for i in data["imported"]]
    lines += [f"skipped {s['source']}: {s['reason']}" for s in data["skipped"]]
    lines.append(f"receipt: {result.receipt}" if result.run_id else "nothing new to import")
    emit(data, "\n".join(lines), as_json=want_json(json_out))
    return 0


def _count(paths: list[Path]) -> int | None:
    """How many files the source holds, for the bar: a directory's entries; None for a notes file."""
    import os

    try:
        return sum(len(os.listdir(p)) for p in paths) if all(p.is_dir() for p in paths) else None
    except OSError:
        return None


def export(fmt: str, dest: Path, json_out: bool = False) -> int:
    """Write the private store as a Claude Code memory dir (memory files + MEMORY.md)."""
    from ..importers.claude import export_dir
    from ..safetext import counted
    from ..state.read import read_pre
    from ..store.index import render_index

    if fmt != "claude":
        raise UsageError(f"unknown export format {fmt!r} (only claude)", code="usage.format")
    svc = services(privacy=False)
    pre = read_pre(svc.layout, svc.limits)
    written = export_dir(dict(pre.harness.memories()), render_index(pre.memories, mirror=False), dest)
    emit({"ok": True, "format": fmt, "written": [str(p) for p in written]},
         f"exported {counted(len(written) - 1, 'memory')} to {dest}", as_json=want_json(json_out))
    return 0
