"""The floors every figure is held to: interpreter start, read+hash of the store, staged atomic writes."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any


def ms_since(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def repeat(fn: Callable[[], object], reps: int) -> list[float]:
    out = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        out.append(ms_since(start))
    return out


def interpreter(env: Mapping[str, str], reps: int, code: str = "pass") -> list[float]:
    """``python -c pass`` from the interpreter memfold runs under, in the same environment."""

    def run() -> None:
        subprocess.run((sys.executable, "-c", code), env=dict(env), check=True)

    run()
    return repeat(run, reps)


def read_hash(roots: list[Path], reps: int) -> list[float]:
    """scandir + lstat + open + read + sha256 of every file of the roots: what any re-hash must pay."""

    def run() -> None:
        for root in roots:
            for entry in os.scandir(root):
                if entry.is_file(follow_symlinks=False):
                    with open(entry.path, "rb") as fh:
                        hashlib.sha256(fh.read()).hexdigest()

    run()
    return repeat(run, reps)


def staged_writes(plan: Mapping[str, tuple[list[int], int]], reps: int, where: Path | None = None,
                  places: Mapping[str, Path] | None = None) -> list[float]:
    """The least a crash-safe apply of a change set can do, in each directory it touches.

    ``plan`` maps a directory (harness, public, receipts, run) to the sizes of the files written there
    and the number deleted. Per rep: stage every file (write a temp), fsync every file and directory,
    rename each temp into place, unlink the deleted ones, fsync every directory again. The fsyncs of a
    round are issued together, as apply issues them.

    ``places`` names the real directory of a key: its files are staged there, under names no store
    file has, and removed after the rep, untimed; ``run`` names the directory a fresh run directory is
    made in, as a write makes its own. What a file creation costs depends on the directory: ext4 looks
    for a new inode from the block group of its parent, and a creation in the directories of a store
    written minutes earlier cost ten times one in a directory made just now (290 against 25 µs on a
    2-vCPU VM). Keys without a place get fresh directories under ``where``.
    """
    from concurrent.futures import ThreadPoolExecutor

    places = places or {}
    out = []
    with tempfile.TemporaryDirectory(prefix="memfold-bench-fsync-", dir=where) as tmp, \
            ThreadPoolExecutor(16) as pool:
        for rep in range(reps):
            folders: dict[str, Path] = {}
            made: list[Path] = []
            for name in plan:
                place = places.get(name)
                if place is None:
                    folder = Path(tmp) / str(rep) / name
                    folder.mkdir(parents=True)
                elif name == "run":
                    folder = Path(tempfile.mkdtemp(prefix=".memfold-bench-run-", dir=place))
                    made.append(folder)
                else:
                    folder = place
                folders[name] = folder
            stem = f".memfold-bench-{os.getpid()}-{rep}"
            temps: list[tuple[Path, Path]] = []
            doomed: list[Path] = []
            try:
                doomed = [folders[name] / f"{stem}-d{i}" for name in plan for i in range(plan[name][1])]
                for path in doomed:
                    path.write_bytes(b"x" * 1024)
                _fsync_all(pool, [], list(folders.values()))
                start = time.perf_counter()
                temps, fds = [], []
                for name, folder in folders.items():
                    for i, size in enumerate(plan[name][0]):
                        temp = folder / f"{stem}-t{i}"
                        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                        os.write(fd, b"x" * size)
                        fds.append(fd)
                        temps.append((temp, folder / f"{stem}-f{i}"))
                _fsync_all(pool, fds, list(folders.values()))
                for fd in fds:
                    os.close(fd)
                for temp, final in temps:
                    os.replace(temp, final)
                for path in doomed:
                    os.unlink(path)
                _fsync_all(pool, [], list(folders.values()))
                out.append(ms_since(start))
            finally:  # the store's directories are left as they were, even after a failure
                for path in [*doomed, *(t for pair in temps for t in pair)]:
                    path.unlink(missing_ok=True)
                for folder in made:
                    shutil.rmtree(folder, ignore_errors=True)
    return out


def _fsync_all(pool: Any, fds: list[int], folders: list[Path]) -> None:
    dir_fds = [os.open(folder, os.O_RDONLY | os.O_DIRECTORY) for folder in folders]
    try:
        list(pool.map(os.fsync, [*fds, *dir_fds]))
    finally:
        for fd in dir_fds:
            os.close(fd)
