"""The floors every figure is held to: interpreter start, read+hash of the store, staged atomic writes."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path


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


def staged_writes(count: int, size: int, reps: int, deleted: int = 0, where: Path | None = None) -> list[float]:
    """Stage ``count`` files (write + fsync each), fsync the dir, rename each, unlink ``deleted`` more,
    fsync the dir once more: the least a crash-safe apply of that change set can do."""
    data = b"x" * size
    out = []
    with tempfile.TemporaryDirectory(prefix="memfold-bench-fsync-", dir=where) as tmp:
        for rep in range(reps):
            folder = Path(tmp) / str(rep)
            folder.mkdir()
            doomed = [folder / f"d{i}" for i in range(deleted)]
            for path in doomed:
                path.write_bytes(data)
            _fsync_dir(folder)
            start = time.perf_counter()
            temps = []
            for i in range(count):
                temp = folder / f".t{i}"
                fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                os.write(fd, data)
                os.fsync(fd)
                os.close(fd)
                temps.append(temp)
            _fsync_dir(folder)
            for i, temp in enumerate(temps):
                os.replace(temp, folder / f"f{i}")
            for path in doomed:
                os.unlink(path)
            _fsync_dir(folder)
            out.append(ms_since(start))
    return out


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
