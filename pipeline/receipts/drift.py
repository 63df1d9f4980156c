"""What changed on disk between two recorded states, and where each change came from: a teammate's file
that a receipt's sync recorded, an older checkout of the mirror, or (neither) a hand edit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..store.memory import INDEX_NAME
from .findings import Report
from .receipt import diff_maps


def drift(report: Report, before: dict[str, dict[str, str]], after: dict[str, dict[str, str]],
           between: list[Any], explain: Callable[[str], dict[str, Any] | None] = lambda name: None) -> None:
    """Each file that differs: a hand edit, unless ``explain`` (given a mirror file's name) says where the
    change came from: then it is incoming."""
    for line in diff_maps(before, after):
        name = line.split(" ", 1)[0]
        why = explain(name[len("public/"):]) if name.startswith("public/") else None
        if why is None:
            report.drift.append({"between": between, "file": line})
        else:
            report.incoming.append({"between": between, "file": line, **why})


def recorded_sync(receipt: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What a receipt's sync says of each mirror file that came from outside: how it was taken, and from where.
    The mirror's index came along with them: git merges and checks it out with the files it lists."""
    sync = receipt.get("sync")
    out: dict[str, dict[str, Any]] = {}
    if isinstance(sync, dict) and any(sync.get(key) for key in ("adopted", "held", "conflicts")):
        out[INDEX_NAME] = {"taken": "index of the changes above"}
    for key, taken in (("adopted", "adopted"), ("held", "held"), ("conflicts", "conflict")):
        rows = sync.get(key) if isinstance(sync, dict) else None
        for row in rows if isinstance(rows, list) else []:
            if isinstance(row, dict) and isinstance(row.get("name"), str):
                out[row["name"]] = {"taken": taken, **{k: row[k] for k in ("source", "commit", "author")
                                                       if isinstance(row.get(k), str)}}
    return out


def older_version(versions: dict[str, set[str]], name: str, digest: str | None) -> dict[str, Any] | None:
    """An older version of ``name`` that the chain recorded before: the mirror is behind (an older checkout)."""
    return {"taken": "behind"} if digest is not None and digest in versions.get(name, ()) else None


def explainer(recorded: dict[str, dict[str, Any]], arrived: dict[str, str],
               versions: dict[str, set[str]]) -> Callable[[str], dict[str, Any] | None]:
    """Why a mirror file differs before a receipt: its sync recorded it, or it is an older version."""
    return lambda name: recorded.get(name) or older_version(versions, name, arrived.get(name))


def sync_worktree(receipt: dict[str, Any]) -> str | None:
    sync = receipt.get("sync")
    tree = sync.get("worktree") if isinstance(sync, dict) else None
    return tree if isinstance(tree, str) and tree else None
