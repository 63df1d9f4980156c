"""Which repositories' mirrors the user trusts (a cloned `.memory/` is untrusted input).

Trust belongs to the repository: its common git dir, which every linked worktree and every path of one
clone shares, so trusting one worktree trusts them all. A new clone of the same remote is a new
repository and starts untrusted. A project outside git is trusted by its own root. The per-prompt path
asks this, so it reads a small file and a ``.git`` entry, nothing more.
"""

from __future__ import annotations

import os

from ..fsutil import atomic_write, read_bounded
from ..store import jsontext as json
from ..store.jsontext import dump_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

TRUST_FILE = "trusted-projects.json"
_GITDIR_LIMIT = 1 << 12


def repository_of(root: Path | str) -> str:
    """The identity trust is recorded under: the realpath of the repository's common git dir (a
    ``.git`` directory, a linked worktree's common dir, or the dir a ``.git`` file names), else the root."""
    import stat

    root = os.fspath(root)
    dotgit = os.path.join(root, ".git")
    try:
        mode = os.stat(dotgit).st_mode
    except OSError:
        return os.path.realpath(root)  # outside git: no file is opened on the per-prompt path
    if stat.S_ISDIR(mode):
        return os.path.realpath(dotgit)
    gitdir = _gitdir(dotgit)
    if gitdir is None:
        return os.path.realpath(root)
    gitdir = os.path.join(root, gitdir)
    common = _small(os.path.join(gitdir, "commondir"))
    return os.path.realpath(os.path.join(gitdir, common) if common else gitdir)


def _small(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return fh.read(_GITDIR_LIMIT).decode("utf-8", "replace").strip()
    except OSError:
        return None


def _gitdir(dotgit: str) -> str | None:
    """What a ``.git`` file names (``gitdir: DIR``), as git reads it."""
    text = _small(dotgit)
    return text[len("gitdir:"):].strip() if text is not None and text.startswith("gitdir:") else None


def _read(home: Path | str) -> tuple[set[str], set[str]]:
    """(repositories, roots): the roots are what an older memfold recorded, one per checkout path."""
    try:
        data = json.loads_bounded(read_bounded(os.path.join(home, TRUST_FILE), 4 << 20, settings="trust list"))
    except (OSError, ValueError):
        return set(), set()
    if not isinstance(data, dict):
        return set(), set()
    out = []
    for key in ("repositories", "roots"):
        values = data.get(key)
        out.append({v for v in values if isinstance(v, str)} if isinstance(values, list) else set())
    return out[0], out[1]


def trusted_roots(home: Path | str) -> set[str]:
    """Every trusted repository and (from an older memfold) checkout root."""
    repositories, roots = _read(home)
    return repositories | roots


def is_trusted(home: Path | str, root: Path | str) -> bool:
    repositories, roots = _read(home)
    if not repositories and not roots:
        return False
    return repository_of(root) in repositories or os.fspath(root) in roots


def set_trust(home: Path, root: Path, trusted: bool) -> bool:
    """Record or drop the repository of ``root``; returns whether anything changed."""
    repositories, roots = _read(home)
    before = (set(repositories), set(roots))
    repository = repository_of(root)
    if trusted:
        repositories.add(repository)
    else:
        repositories.discard(repository)
        roots.discard(str(root))
    if (repositories, roots) == before:
        return False
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    atomic_write(home / TRUST_FILE, dump_json({"kind": "memfold-trust", "repositories": sorted(repositories),
                                               "roots": sorted(roots)}))
    return True
