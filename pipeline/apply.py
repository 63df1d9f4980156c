"""Crash-safe apply: stage, back up, journal (the commit point), rename, and recovery of all that."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ApplyFailed, RecoveryNeeded
from .fsutil import (
    TEMP_PREFIX,
    atomic_write,
    digest_json,
    dump_json,
    fsync_dir,
    ops,
    read_bounded,
    sha256_bytes,
    temp_name,
    write_new,
)

JOURNAL = "journal.json"
PENDING = "pending"
BACKUP = "backup"


@dataclass(frozen=True)
class Change:
    """One file of the post-state: ``data`` None deletes it. ``root`` is a key of Layout.root or run."""

    root: str
    name: str
    data: bytes | None
    pre: str | None

    @property
    def post(self) -> str | None:
        return None if self.data is None else sha256_bytes(self.data)


RootResolver = Callable[[str], Path]


def _journal_bytes(body: dict[str, Any]) -> bytes:
    body = {k: v for k, v in body.items() if k != "checksum"}
    return dump_json({**body, "checksum": digest_json(body)})


def read_journal(path: Path) -> dict[str, Any]:
    raw = read_bounded(path, 64 << 20)
    try:
        body = json.loads(raw)
    except ValueError:
        raise RecoveryNeeded(f"journal {path} is not valid JSON", code="journal.corrupt") from None
    if not isinstance(body, dict) or body.get("checksum") != digest_json(
        {k: v for k, v in body.items() if k != "checksum"}
    ):
        raise RecoveryNeeded(f"journal {path} fails its checksum", code="journal.corrupt",
                             hint="inspect the run dir; restore from its backup/ by hand if needed")
    return body


def _write_journal(run_dir: Path, body: dict[str, Any]) -> None:
    atomic_write(run_dir / JOURNAL, _journal_bytes(body))


def apply_changes(
    project_home: Path,
    run_dir: Path,
    resolve: RootResolver,
    changes: list[Change],
    *,
    check_staged: Callable[[], None] | None = None,
) -> None:
    """Make ``changes`` happen atomically: all of them, or (after a failure or a crash) none."""
    run_id = run_dir.name
    pending = project_home / PENDING
    atomic_write(pending, run_id.encode() + b"\n")
    entries: list[dict[str, Any]] = []
    dirs: set[Path] = set()
    try:
        _backup(run_dir, resolve, changes)
        for change in changes:
            target_dir = resolve(change.root)
            temp = None
            if change.data is not None:
                temp = temp_name(change.name, run_id[-12:])
                write_new(target_dir / temp, change.data, 0o644 if change.root == "public" else 0o600)
            dirs.add(target_dir)
            entries.append({"root": change.root, "name": change.name, "temp": temp,
                            "pre": change.pre, "post": change.post})
        for directory in sorted(dirs):
            fsync_dir(directory)
        _check_temps(resolve, entries)
        if check_staged is not None:
            check_staged()
        _write_journal(run_dir, {"kind": "memfold-journal", "runId": run_id, "state": "committed",
                                 "entries": entries})
        fsync_dir(run_dir)
    except BaseException as exc:
        _discard_temps(resolve, entries)
        _silent_unlink(pending)
        if isinstance(exc, (KeyboardInterrupt, SystemExit)) or getattr(exc, "exit_code", None) is not None:
            raise
        raise ApplyFailed(f"staging the transaction failed: {exc}", code="apply.stage",
                          hint="nothing was changed; check free space and permissions, then retry") from exc
    body = {"kind": "memfold-journal", "runId": run_id, "state": "committed", "entries": entries}
    try:
        _roll_forward(resolve, entries)
    except OSError as exc:
        _roll_back(run_dir, resolve, body)
        _silent_unlink(pending)
        raise ApplyFailed(f"applying the transaction failed and was rolled back: {exc}",
                          code="apply.commit",
                          hint="both stores are as they were; check free space and permissions") from exc
    try:
        _write_journal(run_dir, {**body, "state": "done"})
    except OSError:
        return  # committed; `pending` stays, so the next command's recovery marks it done
    _silent_unlink(pending)


def _backup(run_dir: Path, resolve: RootResolver, changes: Iterable[Change]) -> None:
    """Keep the pre-state of every touched file, durable before the commit point.

    A hard link is the copy: store files are only ever replaced by rename, never written in place,
    so the linked inode keeps the pre-state bytes. It costs no data write and no per-file fsync,
    only one fsync of each backup directory. Across filesystems (a mirror on another mount) or
    where links are refused, the bytes are copied and fsynced as before.
    """
    folders: set[Path] = set()
    for change in changes:
        if change.pre is None or change.root not in ("harness", "public"):
            continue
        source = resolve(change.root) / change.name
        folder = run_dir / BACKUP / change.root
        if folder not in folders:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            folders.add(folder)
        try:
            os.link(source, folder / change.name, follow_symlinks=False)
        except OSError:
            write_new(folder / change.name, read_bounded(source))
    for folder in sorted(folders):
        fsync_dir(folder)


def _check_temps(resolve: RootResolver, entries: list[dict[str, Any]]) -> None:
    for entry in entries:
        if entry["temp"] is not None:
            staged = read_bounded(resolve(entry["root"]) / entry["temp"])
            if sha256_bytes(staged) != entry["post"]:
                raise ApplyFailed(f"staged copy of {entry['name']} does not match its hash",
                                  code="apply.staged-mismatch")


def _current_hash(path: Path) -> str | None:
    try:
        return sha256_bytes(read_bounded(path))
    except FileNotFoundError:
        return None


def _roll_forward(resolve: RootResolver, entries: list[dict[str, Any]]) -> None:
    """Idempotent: each entry is checked against its post-hash before it is redone."""
    dirs: set[Path] = set()
    for entry in entries:
        folder = resolve(entry["root"])
        target = folder / entry["name"]
        dirs.add(folder)
        if _current_hash(target) == entry["post"]:
            if entry["temp"]:
                _silent_unlink(folder / entry["temp"])
            continue
        if entry["post"] is None:
            ops.unlink(str(target))
            continue
        temp = folder / entry["temp"]
        if _current_hash(temp) != entry["post"]:
            raise RecoveryNeeded(
                f"cannot finish the transaction: the staged copy of {entry['name']} is missing or altered",
                code="journal.missing-stage",
                hint="restore the run's backup/ by hand, or `memfold undo` once the store is consistent",
            )
        ops.rename(str(temp), str(target))
    for folder in sorted(dirs):
        fsync_dir(folder)


def _roll_back(run_dir: Path, resolve: RootResolver, body: dict[str, Any]) -> None:
    """Put every pre-state back from backup/ (idempotent); marks the journal first."""
    try:
        _write_journal(run_dir, {**body, "state": "rolling-back"})
        for entry in reversed(body["entries"]):
            folder = resolve(entry["root"])
            target = folder / entry["name"]
            if entry["pre"] is None:
                _silent_unlink(target)
            elif _current_hash(target) != entry["pre"]:
                saved = read_bounded(run_dir / BACKUP / entry["root"] / entry["name"])
                atomic_write(target, saved, durable=False)
            if entry["temp"]:
                _silent_unlink(folder / entry["temp"])
        for folder in {resolve(e["root"]) for e in body["entries"]}:
            fsync_dir(folder)
        _write_journal(run_dir, {**body, "state": "rolled-back"})
    except OSError as exc:
        raise RecoveryNeeded(
            f"rolling back run {body['runId']} failed: {exc}", code="journal.rollback-failed",
            hint="free space or fix permissions, then run `memfold recover`",
        ) from exc


def _discard_temps(resolve: RootResolver, entries: list[dict[str, Any]]) -> None:
    for entry in entries:
        if entry["temp"]:
            _silent_unlink(resolve(entry["root"]) / entry["temp"])


def _silent_unlink(path: Path) -> None:
    try:
        ops.unlink(str(path))
    except OSError:
        pass


def recover(
    project_home: Path, runs: Path, resolver_for: Callable[[Path], RootResolver], roots: Iterable[str]
) -> str | None:
    """Finish or discard an interrupted transaction. Returns what was done, or None if nothing was."""
    pending = project_home / PENDING
    # A kill inside atomic_write of `pending` itself (or of lock.json) leaves its temp here, with no
    # `pending` to point at it; we hold the lock, so no live writer owns such a temp.
    _sweep_temps(project_home)
    try:
        run_id = pending.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    outcome = "discarded"
    run_dir = runs / run_id if run_id and "/" not in run_id and run_id not in (".", "..") else runs / "-"
    resolve = resolver_for(run_dir)
    journal = run_dir / JOURNAL
    if journal is not None and journal.exists():
        body = read_journal(journal)
        state = body.get("state")
        if state == "committed":
            _roll_forward(resolve, body["entries"])
            _write_journal(run_dir, {**body, "state": "done"})
            outcome = "rolled-forward"
        elif state == "rolling-back":
            _roll_back(run_dir, resolve, body)
            outcome = "rolled-back"
        else:
            outcome = "finished"
    for key in (*roots, "run"):
        _sweep_temps(resolve(key))
    _silent_unlink(pending)
    return f"{outcome} run {run_id}"


def _sweep_temps(folder: Path) -> None:
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return
    for name in names:
        if name.startswith(TEMP_PREFIX):
            _silent_unlink(folder / name)
