"""Hostile repositories for tests: a git dir that runs a program everywhere, and a digest to prove
that nothing outside the project changed."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

# Hooks git can run on its own; each one the hostile repository installs writes the marker.
HOOKS = ("post-index-change", "pre-commit", "post-checkout", "post-commit", "reference-transaction",
         "pre-auto-gc", "post-rewrite", "fsmonitor-watchman")


def tree_digest(root: Path) -> str:
    """One hash over every path, file type and file content below ``root`` (links not followed)."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        if path.is_symlink():
            digest.update(b"link:" + os.readlink(path).encode())
        elif path.is_file():
            digest.update(b"file:" + path.read_bytes())
        else:
            digest.update(b"dir")
    return digest.hexdigest()


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(("git", *args), cwd=cwd, check=True, capture_output=True, text=True).stdout


@dataclass
class Hostile:
    project: Path
    git_dir: Path
    marker: Path

    def ran(self) -> list[str]:
        return self.marker.read_text().splitlines() if self.marker.exists() else []


def _sign(project: Path) -> None:
    """Replace HEAD by the same commit carrying a (bogus) signature, so showing it would call gpg."""
    body = git("cat-file", "commit", "HEAD", cwd=project)
    head, _, message = body.partition("\n\n")
    signature = "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----"
    signed = subprocess.run(("git", "hash-object", "-t", "commit", "-w", "--stdin"), cwd=project, check=True,
                            capture_output=True, text=True, input=f"{head}\n{signature}\n\n{message}").stdout.strip()
    git("update-ref", "HEAD", signed, cwd=project)


def make_hostile(project: Path, scratch: Path) -> Hostile:
    """Turn ``project`` (a directory, a repository or not) into one whose ``.git`` is a file naming a
    git dir elsewhere, configured to run a program through every key and hook git offers, with an
    attribute that routes every file through them. One memory is committed under ``.memory/``."""
    marker = scratch / "ran.txt"
    evil = scratch / "evil.sh"
    evil.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\ncat\n')
    evil.chmod(0o755)
    if not (project / ".git").is_dir():
        git("init", "-q", str(project))
    git("config", "user.email", "a@example.com", cwd=project)
    git("config", "user.name", "A", cwd=project)
    (project / ".memory").mkdir()
    (project / ".memory" / "project_team.md").write_text("---\ndescription: team fact\nvisibility: safe\n---\nx\n")
    (project / "notes.txt").write_text("notes\n")
    (project / ".gitattributes").write_text("* filter=evil diff=evil merge=evil\n")
    git("add", "-A", cwd=project)
    git("commit", "-qm", "first", cwd=project)
    _sign(project)
    git_dir = scratch / "elsewhere" / "hostile.git"
    git_dir.parent.mkdir(exist_ok=True)
    (project / ".git").rename(git_dir)
    (project / ".git").write_text(f"gitdir: {git_dir}\n")
    hooks = scratch / "hooks"
    hooks.mkdir()
    for name in HOOKS:
        shutil.copy(evil, hooks / name)
        shutil.copy(evil, git_dir / "hooks" / name)
    program = str(evil)
    for key, value in {
        "core.fsmonitor": program, "core.hooksPath": str(hooks), "core.pager": f"{program} pager",
        "core.sshCommand": f"{program} ssh", "core.askPass": f"{program} askpass", "core.editor": f"{program} edit",
        "core.alternateRefsCommand": f"{program} refs", "diff.external": f"{program} external",
        "diff.evil.textconv": f"{program} textconv", "filter.evil.clean": f"{program} clean",
        "filter.evil.smudge": f"{program} smudge", "filter.evil.process": f"{program} process",
        "merge.evil.driver": f"{program} merge", "credential.helper": f"!{program} credential",
        "log.showSignature": "true", "gpg.program": program, "pager.log": f"{program} pager-log",
        "pager.status": f"{program} pager-status", "alias.ls-files": f"!{program} alias",
    }.items():
        git("--git-dir", str(git_dir), "config", key, value)
    # A changed tracked file: a status over the worktree would hash it through the clean filter.
    with open(project / "notes.txt", "a") as fh:
        fh.write("changed\n")
    return Hostile(project, git_dir, marker)
