"""What git knows about the mirror: tracked files, and private names that were once committed."""

from __future__ import annotations

import subprocess
from pathlib import Path

from .paths import MIRROR_DIR


def _git(root: Path, *args: str) -> list[str] | None:
    try:
        out = subprocess.run(("git", "-C", str(root), *args), capture_output=True, text=True, timeout=20,
                             check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return [line for line in out.stdout.splitlines() if line]


def tracked(root: Path) -> list[str] | None:
    """Mirror file names in the git index, or None outside a repository."""
    files = _git(root, "ls-files", "--", MIRROR_DIR)
    return None if files is None else sorted(Path(f).name for f in files)


def ever_committed(root: Path) -> set[str]:
    """Every mirror file name that appears in any commit of any branch."""
    files = _git(root, "log", "--all", "--name-only", "--format=", "--", MIRROR_DIR)
    return {Path(f).name for f in files or []}
