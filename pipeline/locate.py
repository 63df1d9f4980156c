"""Where a scope lives, with ``os.path`` only: the one rule both the per-prompt path and ``paths`` use.

``memfold inject`` runs before every prompt, so this module imports nothing beyond ``os`` and ``sys``
(no pathlib, no subprocess, no platformdirs on Linux).
"""

from __future__ import annotations

import os
import sys

from .errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

APP_NAME = "memfold"
MIRROR_DIR = ".memory"
PROJECTS_DIR = "projects"
GLOBAL_DIR = "global"
MEMORY_DIR = "memory"


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


def project_root(directory: str) -> str:
    """The realpath of the git work tree containing ``directory``, else of the directory itself."""
    if not os.path.isdir(directory):
        raise UsageError(f"project directory {directory} does not exist", code="usage.project")
    real = os.path.realpath(directory)
    top = git_toplevel(real)
    return os.path.realpath(top) if top is not None else real


def scope_key(root: str) -> str:
    """The project's store name under the home: sha256 of the root's realpath."""
    digest: str = _sha256()(root.encode("utf-8")).hexdigest()
    return digest


def _sha256() -> Any:
    """SHA-256 from CPython's own module where it exists: hashlib also loads OpenSSL and BLAKE2,
    two more shared libraries, and this runs before every prompt."""
    try:
        from _sha256 import sha256  # type: ignore[import-not-found]  # CPython 3.11
    except ImportError:
        try:
            from _sha2 import sha256  # type: ignore[import-not-found]  # CPython 3.12+
        except ImportError:
            from hashlib import sha256
    return sha256


def project_home(home: str, key: str) -> str:
    return os.path.join(home, PROJECTS_DIR, key)


def global_home(home: str) -> str:
    return os.path.join(home, GLOBAL_DIR)
