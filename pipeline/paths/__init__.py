"""Where everything lives: the memfold home, the project's identity and home, both roots, runs, receipts, lock.

``memfold inject`` resolves its stores through this module before every prompt, so at import time it
loads only ``os``, ``sys`` and memfold's light modules: pathlib (which pulls in ``re``, ``fnmatch`` and
``urllib.parse``), hashlib and platformdirs are imported where a function needs them.
"""

from __future__ import annotations

import os
import sys

from ..errors import UsageError
from ..frozen import Frozen

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

APP_NAME = "memfold"
MIRROR_DIR = ".memory"
PROJECTS_DIR = "projects"
GLOBAL_DIR = "global"
MEMORY_DIR = "memory"
PROJECT_INFO = "project.json"
# Beside the mirror, git-tracked: the chain heads of everyone who writes this mirror.
STATE_DIR = ".memfold"
HEADS_DIR = "heads"
# A run's id (``20261130T082517Z-1a2b3c4d``), and the folder of its run dir that keeps the pre-state.
RUN_ID_PATTERN = r"^\d{8}T\d{6}Z-[0-9a-f]{8}$"
BACKUP_DIR = "backup"
_GITDIR_LIMIT = 1 << 12


def _path(value: str) -> Path:
    from pathlib import Path

    return Path(value)


def _xdg(env: Mapping[str, str], variable: str, fallback: tuple[str, ...]) -> str:
    base = env.get(variable, "")
    if not os.path.isabs(base):
        base = os.path.join(_user_home(env), *fallback)
    return os.path.join(base, APP_NAME)


def user_files(home: str, env: Mapping[str, str]) -> tuple[str, str, str]:
    """(config file, cache dir, log dir) for a home.

    A home given explicitly (``--home``, ``$MEMFOLD_HOME``) keeps everything inside it, so one
    directory is one self-contained installation. The default home follows the XDG base directories:
    ``$XDG_CONFIG_HOME/memfold/config.yaml``, ``$XDG_CACHE_HOME/memfold``, ``$XDG_STATE_HOME/memfold/logs``;
    a config still at the old place (``<home>/config.yaml``) is read there until one exists at the new.
    """
    inside = (os.path.join(home, "config.yaml"), home, os.path.join(home, "logs"))
    explicit = bool(env.get("MEMFOLD_HOME")) or os.path.abspath(home) != os.path.abspath(default_home(env))
    if explicit or not sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        return inside
    config = os.path.join(_xdg(env, "XDG_CONFIG_HOME", (".config",)), "config.yaml")
    if not os.path.exists(config) and os.path.exists(inside[0]):
        config = inside[0]
    return (config, _xdg(env, "XDG_CACHE_HOME", (".cache",)),
            os.path.join(_xdg(env, "XDG_STATE_HOME", (".local", "state")), "logs"))


def default_home(env: Mapping[str, str]) -> str:
    """``$MEMFOLD_HOME``, else the user data directory of the platform.

    On Linux and the BSDs that is the XDG rule (``$XDG_DATA_HOME`` when it is an absolute path,
    else ``~/.local/share``), computed here because importing platformdirs costs more than the
    whole per-prompt path; elsewhere platformdirs decides.
    """
    explicit = env.get("MEMFOLD_HOME")
    if explicit:
        return explicit
    if sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        base = env.get("XDG_DATA_HOME", "")
        if not os.path.isabs(base):
            base = os.path.join(_user_home(env), ".local", "share")
        return os.path.join(base, APP_NAME)
    from platformdirs import user_data_dir

    return str(user_data_dir(APP_NAME, appauthor=False))


def _user_home(env: Mapping[str, str]) -> str:
    home = env.get("HOME", "")
    if os.path.isabs(home):
        return home
    import pwd

    return str(pwd.getpwuid(os.getuid()).pw_dir)


def git_toplevel(directory: str) -> str | None:
    """The nearest directory at or above ``directory`` holding a ``.git`` entry, else None.

    That is the work tree git itself finds for a repository, a linked worktree or a submodule (the
    latter two hold a ``.git`` file); no git process is started.
    """
    current = directory
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def project_root(directory: str | os.PathLike[str]) -> str:
    """The realpath of the git work tree containing ``directory``, else of the directory itself."""
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        raise UsageError(f"project directory {directory} does not exist", code="usage.project")
    real = os.path.realpath(directory)
    top = git_toplevel(real)
    return os.path.realpath(top) if top is not None else real


def _read_small(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return fh.read(_GITDIR_LIMIT).decode("utf-8", "replace").strip()
    except OSError:
        return None


def common_git_dir(root: str) -> str | None:
    """The realpath of the repository git dir that the linked worktree ``root`` shares, else None.

    Read the way git does, without starting it: a linked worktree's ``.git`` file says ``gitdir: DIR``
    and ``DIR/commondir`` names (relative to ``DIR``) the git dir of the repository. A ``.git``
    directory, a submodule's ``.git`` file and a separate git dir have no ``commondir``: None.
    """
    dotgit = os.path.join(root, ".git")
    if os.path.isdir(dotgit):
        return None
    text = _read_small(dotgit)
    if text is None or not text.startswith("gitdir:"):
        return None
    gitdir = os.path.join(root, text[len("gitdir:"):].strip())
    common = _read_small(os.path.join(gitdir, "commondir"))
    return os.path.realpath(os.path.join(gitdir, common)) if common else None


def project_identity(root: str) -> str:
    """The path whose hash keys a project: one for all the linked worktrees of a repository.

    That is the repository's main work tree, the parent of the common ``.git`` dir, so a plain
    checkout keeps the key it always had (its own root) and its linked worktrees share it. The
    worktrees of a bare repository are keyed by the bare repository. Outside git, and for a work tree
    that is not a linked worktree (a checkout, a submodule), the root itself.
    """
    common = common_git_dir(root)
    if common is None:
        return root
    return os.path.dirname(common) if os.path.basename(common) == ".git" else common


def scope_key(identity: str | os.PathLike[str]) -> str:
    """A store's name under the home: sha256 hex of its identity path (UTF-8)."""
    from ..fsutil import sha256_bytes

    return sha256_bytes(os.fspath(identity).encode("utf-8"))


def project_key(root: str) -> str:
    """The scope key of the project whose work tree is ``root``."""
    return scope_key(project_identity(root))


def project_home(home: str, key: str) -> str:
    return os.path.join(home, PROJECTS_DIR, key)


def global_home(home: str) -> str:
    return os.path.join(home, GLOBAL_DIR)


_PROJECT_HOMES: dict[tuple[Path, str, bool], Path] = {}


class Layout(Frozen):
    """Paths of one scope: a project (private store + mirror) or the user-wide global store (no mirror).

    ``scope_key`` is the identity receipts are bound to; ``store_key`` names the store's directory.
    They differ only for a store adopted from an older key (see ``adopt_worktree_store``), whose
    receipt chain keeps the key it was written with.
    """

    __slots__ = ("home", "project_root", "scope_key", "is_global", "store_key")
    home: Path
    project_root: Path
    scope_key: str
    is_global: bool
    store_key: str

    def __init__(self, home: Path, project_root: Path, scope_key: str, is_global: bool = False,
                 store_key: str | None = None) -> None:
        self._set(home=home, project_root=project_root, scope_key=scope_key, is_global=is_global,
                  store_key=store_key or scope_key)

    @property
    def project_home(self) -> Path:
        # Asked for dozens of times per transaction (each root is below it): built once per layout.
        key = (self.home, self.store_key, self.is_global)
        path = _PROJECT_HOMES.get(key)
        if path is None:
            home = str(self.home)
            path = _PROJECT_HOMES[key] = _path(global_home(home) if self.is_global else
                                               project_home(home, self.store_key))
        return path

    @property
    def harness(self) -> Path:
        return self.project_home / MEMORY_DIR

    @property
    def mirror(self) -> Path | None:
        return None if self.is_global else self.project_root / MIRROR_DIR

    @property
    def heads(self) -> Path | None:
        """Where every transaction writes its chain's head: beside the mirror, tracked by git with it."""
        return None if self.is_global else self.project_root / STATE_DIR / HEADS_DIR

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
        path = {"harness": self.harness, "public": self.mirror, "heads": self.heads, "receipts": self.receipts,
                "home": self.project_home}[key]
        if path is None:
            raise KeyError(f"the {self.label} scope has no {key} root")
        return path


def make_layout(home: str | os.PathLike[str], project_dir: str | os.PathLike[str]) -> Layout:
    absolute = os.path.abspath(home)
    root = project_root(project_dir)
    key = project_key(root)
    return Layout(home=_path(absolute), project_root=_path(root), scope_key=_recorded_key(absolute, key),
                  store_key=key)


def _recorded_key(home: str, key: str) -> str:
    """The scope key the store under ``key`` was created with (its receipts carry it), else ``key``."""
    text = _read_small(os.path.join(project_home(home, key), PROJECT_INFO))
    if not text:
        return key
    from ..store.jsontext import loads_bounded

    try:
        recorded = loads_bounded(text).get("scopeKey")
    except (ValueError, AttributeError):
        return key
    valid = isinstance(recorded, str) and len(recorded) == 64 and all(c in "0123456789abcdef" for c in recorded)
    return recorded if valid else key


def global_layout(home: str | os.PathLike[str]) -> Layout:
    """The user-wide store: private only, never inside a repository."""
    absolute = os.path.abspath(home)
    root = global_home(absolute)
    return Layout(home=_path(absolute), project_root=_path(root), scope_key=scope_key(root), is_global=True)


def find_run(runs: Path, run_id: str) -> Path:
    import re

    if not re.match(RUN_ID_PATTERN, run_id):
        raise UsageError(f"{run_id!r} is not a run id (like 20261130T082517Z-1a2b3c4d)", code="usage.run-id")
    run_dir = runs / run_id
    if not run_dir.is_dir() or run_dir.is_symlink():
        raise UsageError(f"no run {run_id} in {runs}", code="usage.no-run",
                         hint="`memfold status` shows the last run; old run dirs are pruned, receipts are not")
    return run_dir
