"""What a transaction changes, and where: each file of the post-state (``Change``) and each root opened
once (``RootDirs``), so every staged copy, backup link, rename and unlink is made relative to the root's
descriptor and never through a symlink."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ..frozen import Frozen
from ..fsutil import open_dir, sha256_bytes


class Change(Frozen):
    """One file of the post-state: ``data`` None deletes it. ``root`` is a key of Layout.root or run.

    ``digest`` is the sha256 of ``data`` when the caller has it already (it hashed the bytes it built).
    """

    __slots__ = ("root", "name", "data", "pre", "digest")
    root: str
    name: str
    data: bytes | None
    pre: str | None
    digest: str | None

    def __init__(self, root: str, name: str, data: bytes | None, pre: str | None, digest: str | None = None) -> None:
        self._set(root=root, name=name, data=data, pre=pre, digest=digest)

    @property
    def post(self) -> str | None:
        if self.data is None:
            return None
        return sha256_bytes(self.data) if self.digest is None else self.digest


RootResolver = Callable[[str], Path]


class RootDirs:
    """Each root of one transaction opened once, never through a symlink (``fsutil.open_dir``): every
    staged temp, backup link, rename and unlink in a root is made relative to its descriptor, so a root
    swapped for a link after memfold checked it (a ``.memory`` turned into a link to elsewhere) cannot
    carry a write to the link's target. It is a ``RootResolver`` too: called, it names a root's path.
    """

    def __init__(self, resolve: RootResolver) -> None:
        self.resolve = resolve
        self.fds: dict[str, int] = {}

    def __call__(self, key: str) -> Path:
        return self.resolve(key)

    def fd(self, key: str) -> int:
        fd = self.fds.get(key)
        if fd is None:
            fd = self.fds[key] = open_dir(self.resolve(key))
        return fd

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()


def root_dirs(resolve: RootResolver) -> tuple[RootDirs, bool]:
    """``resolve`` as RootDirs, and whether the caller opened them (and so closes them)."""
    return (resolve, False) if isinstance(resolve, RootDirs) else (RootDirs(resolve), True)
