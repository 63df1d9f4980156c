"""Crash-safe apply: stage, back up, journal (the commit point), rename, and recovery of all that."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from ..errors import ApplyFailed, RecoveryNeeded
from ..fsutil import atomic_write, create_unsynced, ops, read_bounded, safe_join, sha256_bytes, temp_name
from ..paths import BACKUP_DIR
from ..store.jsontext import canonical_json, digest_json, dump_json, loads_bounded
from .durable import fsync_all
from .roots import Change, RootDirs, RootResolver, root_dirs
from .staged import Staged, check_copies, link_staged

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

JOURNAL = "journal.json"
PENDING = "pending"
BACKUP = BACKUP_DIR
BACKED_UP = ("harness", "public", "heads", "home")  # the roots whose touched files a run keeps the pre-state of
# Roots whose files only memfold writes and reads (the receipt log, the run dir): the same bytes staged in
# two of them land as two names of one file. Never the stores: a memory edited in place by hand would
# change its twin too.
LINKABLE = frozenset({"receipts", "run"})


def _journal_bytes(body: dict[str, Any]) -> bytes:
    body = {k: v for k, v in body.items() if k != "checksum"}
    return dump_json({**body, "checksum": digest_json(body)})


def _journal_states(body: dict[str, Any], states: tuple[str, ...]) -> list[bytes]:
    """``_journal_bytes`` of ``body`` in each of ``states``, its entries serialized once for all.

    A journal of 3,000 files took 80 ms per state. The entries' canonical bytes are the same in each
    (keys sorted, so ``"entries"`` is the first member), and so is their indented text one level
    deeper: a JSON text holds a newline only between tokens, never inside a string.
    """
    entries = body["entries"]
    rest = {k: v for k, v in body.items() if k not in ("checksum", "entries")}
    if any(key < "entries" for key in rest):
        return [_journal_bytes({**body, "state": state}) for state in states]
    canonical = canonical_json(entries)
    indented = dump_json(entries).decode("utf-8").rstrip("\n").replace("\n", "\n  ").encode("utf-8")
    out = []
    for state in states:
        head = canonical_json({**rest, "entries": 0, "state": state})
        checksum = sha256_bytes(b'{"entries":' + canonical + head.removeprefix(b'{"entries":0'))
        text = dump_json({**rest, "entries": 0, "state": state, "checksum": checksum})
        marker = b'\n  "entries": 0'
        out.append(text.replace(marker, b'\n  "entries": ' + indented, 1))
    return out


def read_journal(path: Path) -> dict[str, Any]:
    raw = read_bounded(path, 64 << 20)
    try:
        body = loads_bounded(raw)
    except ValueError:
        raise RecoveryNeeded(f"journal {path} is not valid JSON", code="journal.corrupt") from None
    if not isinstance(body, dict) or body.get("checksum") != digest_json(
        {k: v for k, v in body.items() if k != "checksum"}
    ):
        raise RecoveryNeeded(f"journal {path} fails its checksum", code="journal.corrupt",
                             hint="inspect the run dir; restore from its backup/ by hand if needed")
    return body


def write_journal(run_dir: Path, body: dict[str, Any]) -> None:
    atomic_write(run_dir / JOURNAL, _journal_bytes(body))


def apply_changes(
    project_home: Path,
    run_dir: Path,
    resolve: RootResolver,
    changes: list[Change],
    *,
    check_staged: Callable[[], None] | None = None,
    artifacts: Mapping[str, bytes] | None = None,
    synced: Callable[[], None] | None = None,
) -> None:
    """Make ``changes`` happen atomically: all of them, or (after a failure or a crash) none.

    ``artifacts`` are new run-dir files (plan, manifest, pre receipt…) made durable in the same batch.
    ``synced`` is called once that batch is durable, before the commit point (work that would have
    made the batch's sync slower, such as other writes to the same filesystem, starts there).
    The fsyncs come in two rounds, each one batch: every new file and every directory holding a new
    entry (the backups and the journal's temp among them); then, after the journal's rename (the commit
    point) and the renames it names, the run dir and the directories of the renames together. Until that
    second round has returned, a power loss may keep any subset of those renames: with the journal's
    rename among them recovery rolls forward, without it recovery rolls back from the durable temp
    and the backups (``recover``), so the state on disk is the whole pre-state or the whole post-state.
    Every file of a root is written relative to the root's descriptor (``RootDirs``), opened once.
    """
    dirs, own = root_dirs(resolve)
    try:
        _apply(project_home, run_dir, dirs, changes, check_staged, artifacts, synced)
    finally:
        if own:
            dirs.close()


def _apply(project_home: Path, run_dir: Path, dirs: RootDirs, changes: list[Change],
           check_staged: Callable[[], None] | None, artifacts: Mapping[str, bytes] | None,
           synced: Callable[[], None] | None) -> None:
    run_id = run_dir.name
    tag = run_id[-12:]
    pending = project_home / PENDING
    entries: list[dict[str, Any]] = []
    body = {"kind": "memfold-journal", "runId": run_id, "state": "committed", "entries": entries}
    journal_temp, done_temp = run_dir / temp_name(JOURNAL, tag), run_dir / temp_name(JOURNAL, f"{tag}-done")
    made: list[tuple[int | None, str]] = []  # what was created: (the open root it is in, or None; its name or path)
    fds: list[int] = []  # every descriptor to make durable, in the order opened (a root's own among them)
    roots: set[int] = set()  # the roots' descriptors in ``fds``: ``dirs`` closes them, not this function
    staged: list[Staged] = []
    hashed: dict[int, str] = {}  # id of a change's bytes (held by ``changes``) -> their sha256
    twins: dict[tuple[int, int], int] = {}  # (id of a change's bytes, mode) -> its written copy in ``staged``
    try:
        try:
            # `pending` comes first: from here on a kill leaves temps the next recovery sweeps away.
            fds.append(_create(made, str(project_home / temp_name(PENDING, tag)), run_id.encode() + b"\n"))
            ops.rename(made[-1][1], str(pending))
            made.pop()
            for name, data in (artifacts or {}).items():
                fds.append(create_unsynced(safe_join(run_dir, name), data))  # kept, even after a failure
            folders = [project_home, run_dir.parent, run_dir, *_backup(run_dir, dirs, changes, fds, roots)]
            for change in changes:
                folder = dirs.fds.get(change.root)
                if folder is None or folder not in roots:
                    folder = dirs.fd(change.root)
                    roots.add(folder)
                    fds.append(folder)
                temp = None
                post = None
                if change.data is not None:
                    temp = temp_name(change.name, tag)
                    mode = 0o644 if change.root in ("public", "heads") else 0o600
                    # The same bytes staged twice (the receipt in the log and in the run dir) are hashed once.
                    post = hashed.get(id(change.data)) if change.digest is None else change.digest
                    if post is None:
                        post = hashed[id(change.data)] = sha256_bytes(change.data)
                    twin = (id(change.data), mode) if change.root in LINKABLE else None
                    first = twins.get(twin) if twin is not None else None
                    if first is None or not link_staged(made, staged, first, change.name, temp, folder):
                        fd = _create(made, temp, change.data, mode, folder)
                        fds.append(fd)
                        if twin is not None:
                            twins[twin] = len(staged)
                        # What the staged copy is right after the write: checked again before the commit point.
                        staged.append((change.name, temp, folder, os.fstat(fd), post))
                entries.append({"root": change.root, "name": change.name, "temp": temp,
                                "pre": change.pre, "post": post})
            committed, done = _journal_states(body, ("committed", "done"))
            fds.append(_create(made, str(journal_temp), committed))
            fds.append(_create(made, str(done_temp), done))
            # Data and directory entries in one batch: both only have to be durable before the journal.
            fsync_all(fds, folders)
        finally:
            for fd in fds:
                if fd not in roots:
                    os.close(fd)
        if synced is not None:
            synced()
        check_copies(staged)
        if check_staged is not None:
            check_staged()
        ops.rename(str(journal_temp), str(run_dir / JOURNAL))
    except BaseException as exc:
        silent_unlink(run_dir / JOURNAL)
        for dir_fd, made_name in made:
            silent_unlink(made_name, dir_fd)
        silent_unlink(pending)
        if isinstance(exc, (KeyboardInterrupt, SystemExit)) or getattr(exc, "exit_code", None) is not None:
            raise
        raise ApplyFailed(f"staging the transaction failed: {exc}", code="apply.stage",
                          hint="nothing was changed; check free space and permissions, then retry") from exc
    try:
        roll_forward(dirs, entries, True, run_dir)  # staged_checked; the journal's rename made durable too
    except OSError as exc:
        silent_unlink(done_temp)
        roll_back(run_dir, dirs, body)
        silent_unlink(pending)
        raise ApplyFailed(f"applying the transaction failed and was rolled back: {exc}",
                          code="apply.commit",
                          hint="both stores are as they were; check free space and permissions") from exc
    try:
        # Its bytes were made durable before the commit point; the rename needs no fsync: a lost
        # rename leaves the journal committed, and recovery rolls that forward again (a no-op).
        ops.rename(str(done_temp), str(run_dir / JOURNAL))
    except OSError:
        return  # committed; `pending` stays, so the next command's recovery marks it done
    silent_unlink(pending)


def _create(made: list[tuple[int | None, str]], name: str, data: bytes, mode: int = 0o600,
            dir_fd: int | None = None) -> int:
    fd = create_unsynced(name, data, mode, dir_fd=dir_fd)
    made.append((dir_fd, name))
    return fd


def backup_path(run_dir: Path, root: str, name: str) -> Path:
    """Where ``run_dir`` keeps the pre-state of ``root``'s file ``name``: ``backup/<root>.<name>``, one
    directory for every root (a root's name holds no dot); runs written before that keep it in
    ``backup/<root>/<name>``, read where only that exists."""
    flat = run_dir / BACKUP / f"{root}.{name}"
    if not os.path.lexists(flat):
        nested = run_dir / BACKUP / root / name
        if os.path.lexists(nested):
            return nested
    return flat


def _backup(run_dir: Path, dirs: RootDirs, changes: Iterable[Change], fds: list[int], roots: set[int]) -> list[Path]:
    """Keep the pre-state of every touched file; returns the directories to fsync before the commit point.

    A hard link is the copy: store files are only ever replaced by rename, never written in place,
    so the linked inode keeps the pre-state bytes. It costs no data write and no per-file fsync,
    only one fsync of the backup directory (one for all roots: each directory more is a creation and
    an fsync more in the batch). Across filesystems (a mirror on another mount) or
    where links are refused, the bytes are copied, and the copy's descriptor joins ``fds`` to be
    made durable with the rest of the batch instead of waiting for an fsync of its own. Each source is
    named relative to its root's descriptor, which joins ``fds`` (and ``roots``) when opened here.
    """
    folder: Path | None = None
    for change in changes:
        if change.pre is None or change.root not in BACKED_UP:
            continue
        source_dir = dirs.fd(change.root)
        if source_dir not in roots:
            roots.add(source_dir)
            fds.append(source_dir)
        if folder is None:
            folder = run_dir / BACKUP
            folder.mkdir(exist_ok=True, mode=0o700)
        target = folder / f"{change.root}.{change.name}"
        try:
            os.link(change.name, target, src_dir_fd=source_dir, follow_symlinks=False)
        except OSError:
            fds.append(create_unsynced(target, read_bounded(change.name, dir_fd=source_dir)))
    return [folder] if folder is not None else []


def _current_hash(name: str, dir_fd: int) -> str | None:
    try:
        return sha256_bytes(read_bounded(name, dir_fd=dir_fd))
    except FileNotFoundError:
        return None


def roll_forward(resolve: RootResolver, entries: list[dict[str, Any]], staged_checked: bool = False,
                  run_dir: Path | None = None) -> None:
    """Idempotent: each entry is checked against its post-hash before it is redone.

    ``staged_checked``: the first attempt, right after ``check_copies`` found every staged copy as it
    was written, under the same lock; those copies are renamed without being read and hashed, and a
    file to delete is unlinked without being read first. ``run_dir`` (the first attempt) is fsynced
    with the roots: the journal's rename lands durable in the same batch as the renames it names.
    Every rename and unlink is relative to its root's descriptor (``RootDirs``).
    """
    dirs, own = root_dirs(resolve)
    try:
        _roll_forward(dirs, entries, staged_checked, run_dir)
    finally:
        if own:
            dirs.close()


def _roll_forward(dirs: RootDirs, entries: list[dict[str, Any]], staged_checked: bool, run_dir: Path | None) -> None:
    used: dict[str, int] = {}
    for entry in entries:
        root = entry["root"]
        folder = used.get(root)
        if folder is None:
            folder = used[root] = dirs.fd(root)
        name, temp = entry["name"], entry["temp"]
        if staged_checked:
            if temp is not None:
                ops.rename(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
                continue
            try:
                ops.unlink(name, dir_fd=folder)
            except FileNotFoundError:
                pass  # already absent: the post-state
            continue
        if _current_hash(name, folder) == entry["post"]:
            if temp:
                silent_unlink(temp, folder)
            continue
        if entry["post"] is None:
            ops.unlink(name, dir_fd=folder)
            continue
        if _current_hash(temp, folder) != entry["post"]:
            raise RecoveryNeeded(
                f"cannot finish the transaction: the staged copy of {name} is missing or altered",
                code="journal.missing-stage",
                hint="restore the run's backup/ by hand, or `memfold undo` once the store is consistent",
            )
        ops.rename(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
    fsync_all(sorted(set(used.values())), [run_dir] if run_dir is not None else [])


def roll_back(run_dir: Path, resolve: RootResolver, body: dict[str, Any]) -> None:
    """Put every pre-state back from backup/ (idempotent); marks the journal first."""
    dirs, own = root_dirs(resolve)
    try:
        write_journal(run_dir, {**body, "state": "rolling-back"})
        for entry in reversed(body["entries"]):
            folder = dirs.fd(entry["root"])
            name = entry["name"]
            if entry["pre"] is None:
                silent_unlink(name, folder)
            elif _current_hash(name, folder) != entry["pre"]:
                saved = read_bounded(backup_path(run_dir, entry["root"], name))
                # Data and entry durable: rollback is rare.
                _replace_durably(folder, name, saved, 0o644 if entry["root"] == "public" else 0o600)
            if entry["temp"]:
                silent_unlink(entry["temp"], folder)
        fsync_all(sorted({dirs.fd(e["root"]) for e in body["entries"]}), [])
        write_journal(run_dir, {**body, "state": "rolled-back"})
    except OSError as exc:
        raise RecoveryNeeded(
            f"rolling back run {body['runId']} failed: {exc}", code="journal.rollback-failed",
            hint="free space or fix permissions, then run `memfold recover`",
        ) from exc
    finally:
        if own:
            dirs.close()


def _replace_durably(dir_fd: int, name: str, data: bytes, mode: int) -> None:
    """``atomic_write`` of ``name`` in the open directory ``dir_fd``."""
    temp = temp_name(name)
    fd = create_unsynced(temp, data, mode, dir_fd=dir_fd)
    try:
        ops.fsync(fd)
    finally:
        os.close(fd)
    try:
        ops.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        silent_unlink(temp, dir_fd)
        raise
    ops.fsync(dir_fd)


def silent_unlink(path: Path | str, dir_fd: int | None = None) -> None:
    try:
        ops.unlink(str(path), dir_fd=dir_fd)
    except OSError:
        pass
