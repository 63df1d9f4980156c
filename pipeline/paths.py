"""Where everything lives: the memfold home, the project's home, both roots, runs, receipts, lock."""

from __future__ import annotations

import os
from pathlib import Path

from . import locate
from .errors import UnsafePath
from .frozen import Frozen
from .fsutil import atomic_write, dump_json, ensure_dir, refuse_symlinks

MIRROR_DIR = locate.MIRROR_DIR


def default_home(env: dict[str, str] | os._Environ[str]) -> Path:
    return Path(locate.default_home(env))


def project_root(directory: Path) -> Path:
    """The realpath of the git work tree containing ``directory``, else of the directory."""
    return Path(locate.project_root(os.fspath(directory)))


def scope_key(root: Path) -> str:
    return locate.scope_key(str(root))


class Layout(Frozen):
    """Paths of one scope: a project (private store + mirror) or the user-wide global store (no mirror)."""

    __slots__ = ("home", "project_root", "scope_key", "is_global")
    home: Path
    project_root: Path
    scope_key: str
    is_global: bool

    def __init__(self, home: Path, project_root: Path, scope_key: str, is_global: bool = False) -> None:
        self._set(home=home, project_root=project_root, scope_key=scope_key, is_global=is_global)

    @property
    def project_home(self) -> Path:
        home = str(self.home)
        return Path(locate.global_home(home) if self.is_global else locate.project_home(home, self.scope_key))

    @property
    def harness(self) -> Path:
        return self.project_home / locate.MEMORY_DIR

    @property
    def mirror(self) -> Path | None:
        return None if self.is_global else self.project_root / MIRROR_DIR

    @property
    def runs(self) -> Path:
        return self.project_home / "runs"

    @property
    def receipts(self) -> Path:
        return self.project_home / "receipts"

    @property
    def lock_path(self) -> Path:
        return self.project_home / "lock"

    @property
    def lock_info(self) -> Path:
        return self.project_home / "lock.json"

    @property
    def config(self) -> Path:
        return self.home / "config.yaml"

    @property
    def label(self) -> str:
        return "global" if self.is_global else str(self.project_root)

    def root(self, key: str) -> Path:
        path = {"harness": self.harness, "public": self.mirror, "receipts": self.receipts}[key]
        if path is None:
            raise KeyError(f"the {self.label} scope has no {key} root")
        return path


def make_layout(home: Path, project_dir: Path) -> Layout:
    home = Path(os.path.abspath(home))
    root = project_root(project_dir)
    return Layout(home=home, project_root=root, scope_key=scope_key(root))


def global_layout(home: Path) -> Layout:
    """The user-wide store: private only, never inside a repository."""
    home = Path(os.path.abspath(home))
    root = Path(locate.global_home(str(home)))
    return Layout(home=home, project_root=root, scope_key=scope_key(root), is_global=True)


def check_layout(layout: Layout) -> None:
    """Refuse a symlink anywhere on memfold's own paths (below the home and the project root)."""
    if layout.home.is_symlink():
        raise UnsafePath(f"memfold home {layout.home} is a symlink", code="path.symlink",
                         hint="pass the real directory with --home or MEMFOLD_HOME")
    for path in (layout.harness, layout.runs, layout.receipts, layout.lock_path, layout.lock_info):
        refuse_symlinks(path, layout.home)
    if layout.mirror is not None:
        refuse_symlinks(layout.mirror, layout.project_root)


def ensure_layout(layout: Layout) -> bool:
    """Create the project home, both roots and the run/receipt dirs. True if anything was new."""
    check_layout(layout)
    created = not layout.project_home.exists()
    layout.home.mkdir(mode=0o700, parents=True, exist_ok=True)
    for path in (layout.harness, layout.runs, layout.receipts):
        ensure_dir(path, layout.home)
    os.chmod(layout.project_home, 0o700)
    if layout.mirror is not None:
        ensure_dir(layout.mirror, layout.project_root, mode=0o755)
    info = layout.project_home / "project.json"
    if not info.exists():
        atomic_write(info, dump_json({"kind": "memfold-global" if layout.is_global else "memfold-project",
                                      "root": str(layout.project_root), "scopeKey": layout.scope_key}))
    return created
