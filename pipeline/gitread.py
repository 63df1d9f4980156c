"""Committed blobs read from git without running any program the repository or the user configures."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

# Repository config can name programs (fsmonitor, hooks); these reads override the ones that could
# run, and the system and global config are not read at all.
_ARGV = ("git", "--no-pager", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null")
MAX_BLOB = 64 << 10
MAX_VERSIONS = 10_000


def _env() -> dict[str, str]:
    # GIT_DIR, GIT_WORK_TREE and friends in the caller's environment would point git at another repository.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_TERMINAL_PROMPT="0",
               GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
    return env


def _git(root: Path, args: tuple[str, ...], stdin: bytes = b"") -> bytes | None:
    try:
        out = subprocess.run((*_ARGV, "-C", str(root), *args), input=stdin, capture_output=True, timeout=30,
                             check=False, env=_env())
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None


def committed_versions(root: Path, path: str) -> list[tuple[str, bytes | None]] | None:
    """Every version of ``path`` in the commits reachable from HEAD that touched it, newest first.

    Each is (commit, bytes), bytes None where that commit deleted the file; b"" for a blob over
    MAX_BLOB (no valid small file is that large). None: not a git work tree, or no commit yet.
    """
    listed = _git(root, ("rev-list", f"--max-count={MAX_VERSIONS}", "HEAD", "--", path))
    if listed is None:
        return None
    commits = listed.decode("ascii", errors="replace").split()
    if not commits:
        return []
    checked = _git(root, ("cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)"),
                   "".join(f"{c}:{path}\n" for c in commits).encode())
    if checked is None:
        return None
    found: dict[str, str] = {}
    small: list[str] = []
    for commit, line in zip(commits, checked.decode("ascii", errors="replace").splitlines()):
        parts = line.split()
        if len(parts) == 3 and parts[1] == "blob":
            found[commit] = parts[0]
            if parts[2].isdigit() and int(parts[2]) <= MAX_BLOB:
                small.append(parts[0])
    blobs = _blobs(root, small)
    if blobs is None:
        return None
    return [(c, None if c not in found else blobs.get(found[c], b"")) for c in commits]


def _blobs(root: Path, oids: list[str]) -> dict[str, bytes] | None:
    if not oids:
        return {}
    out = _git(root, ("cat-file", "--batch"), "".join(f"{oid}\n" for oid in dict.fromkeys(oids)).encode())
    if out is None:
        return None
    blobs: dict[str, bytes] = {}
    at = 0
    while at < len(out):
        end = out.index(b"\n", at)
        header = out[at:end].split()
        at = end + 1
        if len(header) != 3 or not header[2].isdigit():
            continue  # "<oid> missing": nothing follows
        size = int(header[2])
        blobs[header[0].decode("ascii")] = out[at:at + size]
        at += size + 1
    return blobs
