"""What git knows about the mirror, asked so that no program a repository configures can run.

A cloned repository controls its own git config (``.git/config``, or whatever directory a ``.git``
file names) and ``.gitattributes``. Several keys there name programs git starts on its own:
``core.fsmonitor`` (on any index read), hooks, ``filter.<driver>.clean``/``smudge``/``process``
(when worktree files are hashed), ``diff.<driver>.textconv`` and ``diff.external`` (patches),
``core.pager``, ``gpg.program`` via ``log.showSignature``, and transports with their
``core.sshCommand``/credential helpers (lazy fetches in partial clones). memfold runs only
``ls-files`` and ``log --name-only`` here, which never hash worktree files (so no filter runs), and
every call goes through :func:`run_git`, which overrides the rest on the command line, where
git gives its own settings precedence over every config file.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from ..fsutil import create_unsynced
from ..paths import MIRROR_DIR

# Each pair overrides a key a repository could set to run a program, or stops a code path that
# would reach one. Empty values reset list-valued keys (credential.helper) or mean "none".
_SAFE_CONFIG = (
    ("core.fsmonitor", ""),  # false to current git, "no hook" to git before 2.36
    ("core.hooksPath", os.devnull),
    ("core.pager", "cat"),
    ("core.sshCommand", "false"),
    ("core.askPass", ""),
    ("core.editor", "false"),
    ("core.alternateRefsCommand", ""),
    ("diff.external", ""),
    ("credential.helper", ""),
    ("log.showSignature", "false"),
    ("gpg.program", "false"),
    ("gpg.ssh.program", "false"),
    ("gpg.x509.program", "false"),
    # A partial clone fetches missing objects on demand, through a transport the repository picks
    # (``ext::`` runs a command, a local remote's ``uploadpack`` is a program): GIT_NO_LAZY_FETCH stops
    # that on git 2.39.4 and later, these stop it on older git, since a repository's
    # ``protocol.<name>.allow`` would outrank ``protocol.allow`` alone.
    ("protocol.allow", "never"),
    *((f"protocol.{name}.allow", "never") for name in ("ext", "fd", "file", "git", "ssh", "http", "https",
                                                       "ftp", "ftps")),
    ("fetch.recurseSubmodules", "false"),
    ("submodule.recurse", "false"),
    ("maintenance.auto", "false"),
    ("gc.auto", "0"),
)

# Which repository to read comes from memfold, never from variables a caller's shell (or a git hook
# memfold runs inside) left behind: every inherited ``GIT_*`` variable is dropped, then these are set.
_DROPPED_PREFIX = "GIT_"

_SAFE_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_EXTERNAL_DIFF": "",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_NO_LAZY_FETCH": "1",
    "GIT_PROTOCOL_FROM_USER": "0",
    "GIT_ASKPASS": "false",
    "SSH_ASKPASS": "false",
    "GIT_SSH_COMMAND": "false",
    "GIT_EDITOR": "false",
}

TIMEOUT_S = 20
# Bounds on reading a mirror file's committed versions (the chain witness reads its head's history).
MAX_BLOB = 64 << 10
MAX_VERSIONS = 10_000


def git_argv(args: tuple[str, ...], cwd: Path | None = None) -> tuple[str, ...]:
    """The full argv for ``git <args>``: the overrides first, then the subcommand."""
    overrides = tuple(part for key, value in _SAFE_CONFIG for part in ("-c", f"{key}={value}"))
    where = ("-C", str(cwd)) if cwd is not None else ()
    return ("git", "--no-pager", *where, *overrides, *args)


def git_env(base: Mapping[str, str], cwd: Path | None = None) -> dict[str, str]:
    """``base`` without inherited ``GIT_*`` variables, plus the settings that keep git inert."""
    env = {k: v for k, v in base.items() if not k.startswith(_DROPPED_PREFIX)}
    env.update(_SAFE_ENV)
    if cwd is not None:
        # Discovery starts at the project root and never climbs to a repository above it.
        env["GIT_CEILING_DIRECTORIES"] = str(cwd.parent)
    return env


def git_status(args: tuple[str, ...], cwd: Path | None = None, stdin: bytes = b"",
               base_env: Mapping[str, str] | None = None) -> tuple[int, bytes] | None:
    """Run git with an argv tuple (never a shell): its exit status and raw stdout, or None when git is
    missing or takes longer than ``TIMEOUT_S``."""
    try:
        out = subprocess.run(git_argv(args, cwd), input=stdin, capture_output=True, timeout=TIMEOUT_S,
                             check=False, env=git_env(os.environ if base_env is None else base_env, cwd))
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.returncode, out.stdout


def git_output(args: tuple[str, ...], cwd: Path | None = None, stdin: bytes = b"",
               base_env: Mapping[str, str] | None = None) -> bytes | None:
    """:func:`git_status`'s stdout, or None unless git ran and succeeded."""
    done = git_status(args, cwd, stdin, base_env)
    return done[1] if done is not None and done[0] == 0 else None


def run_git(args: tuple[str, ...], cwd: Path | None = None,
            base_env: Mapping[str, str] | None = None) -> str | None:
    """:func:`git_output` as text (undecodable bytes kept as surrogate escapes)."""
    out = git_output(args, cwd, base_env=base_env)
    return None if out is None else out.decode("utf-8", "surrogateescape")


def _names(output: str | None) -> list[str] | None:
    """The file names of ``-z`` output: a name holding a newline or a quote stays one name."""
    return None if output is None else [Path(name).name for name in output.split("\0") if name]


def tracked(root: Path) -> list[str] | None:
    """Mirror file names in the git index, or None outside a repository."""
    files = _names(run_git(("ls-files", "-z", "--", MIRROR_DIR), root))
    return None if files is None else sorted(files)


def ever_committed(root: Path) -> set[str] | None:
    """Every mirror file name that appears in any commit of any branch, or None when the history
    cannot be read (a partial clone missing trees it may not fetch, a damaged repository)."""
    files = _names(run_git(("log", "--all", "--no-show-signature", "--no-ext-diff", "--no-textconv",
                            "--no-renames", "-z", "--name-only", "--format=", "--", MIRROR_DIR), root))
    return None if files is None else set(files)


def committed_versions(root: Path, path: str) -> list[tuple[str, bytes | None]] | None:
    """Every version of ``path`` in the commits reachable from HEAD that touched it, newest first.

    Each is (commit, bytes), bytes None where that commit deleted the file; b"" for a blob over
    MAX_BLOB (no valid small file is that large). None: not a git work tree, or no commit yet.
    """
    listed = git_output(("rev-list", f"--max-count={MAX_VERSIONS}", "HEAD", "--", path), root)
    if listed is None:
        return None
    commits = listed.decode("ascii", errors="replace").split()
    if not commits:
        return []
    checked = git_output(("cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)"), root,
                         "".join(f"{c}:{path}\n" for c in commits).encode())
    if checked is None:
        return None
    found: dict[str, str] = {}
    small: list[str] = []
    for commit, line in zip(commits, checked.decode("ascii", errors="replace").splitlines(), strict=False):
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
    out = git_output(("cat-file", "--batch"), root, "".join(f"{oid}\n" for oid in dict.fromkeys(oids)).encode())
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


def _blob_id(data: bytes) -> str:
    """The id git gives ``data`` as a blob (its object format here is SHA-1), computed without git."""
    import hashlib

    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def provenance(root: Path, files: Mapping[str, bytes | None]) -> dict[str, dict[str, str]]:
    """For each mirror file (its bytes in the work tree now, None where it is gone) where it came from:
    the commit that last changed it and that commit's author, when the work tree holds it as HEAD does;
    else ``{"source": "working tree"}``. Empty outside a repository. Two git processes, whatever the count."""
    if not files:
        return {}
    paths = {f"{MIRROR_DIR}/{name}": name for name in files}
    listed = git_output(("ls-tree", "-z", "HEAD", "--", *sorted(paths)), root)
    if listed is None:
        return {}
    at_head: dict[str, str] = {}
    for entry in listed.decode("utf-8", "surrogateescape").split("\0"):
        meta, _, path = entry.partition("\t")
        parts = meta.split()
        if len(parts) == 3 and parts[1] == "blob" and path in paths:
            at_head[paths[path]] = parts[2]
    committed = [name for name, data in files.items() if (data is None and name not in at_head)
                 or (data is not None and at_head.get(name) == _blob_id(data))]
    out: dict[str, dict[str, str]] = {name: {"source": "working tree"} for name in files if name not in committed}
    if not committed:
        return out
    wanted = {f"{MIRROR_DIR}/{name}" for name in committed}
    log = run_git(("log", "--no-show-signature", "--no-ext-diff", "--no-textconv", "--no-renames", "-z",
                   "--format=%x01%H%x00%an", "--name-only", "--", *sorted(wanted)), root)
    for record in (log or "").split("\x01")[1:]:
        # Each commit is "\x01<commit>\0<author>\0\n" followed by its paths, each ended by NUL.
        head, _, names = record.partition("\n")
        commit, _, author = head.rstrip("\0").partition("\0")
        for path in names.strip("\0\n").split("\0"):
            path = path.strip("\n")
            if path in wanted and paths[path] not in out:
                out[paths[path]] = {"source": "commit", "commit": commit, "author": author}
        if len(out) == len(files):
            break
    for name in committed:
        out.setdefault(name, {"source": "unknown"})
    return out


def tracked_files(root: Path) -> set[str] | None:
    """Every path in the git index (repository-relative, '/'-separated), or None outside a repository."""
    out = run_git(("ls-files", "-z", "--cached"), root)
    return None if out is None else {name for name in out.split("\0") if name}


def renamed_to(root: Path, path: str, hops: int = 4) -> str | None:
    """Where git saw ``path`` move to: a rename staged in the index, else the rename in the commit that
    deleted it from HEAD's history (followed up to ``hops`` times). Only names are compared (tree and
    index blobs, never the work tree), so no filter or diff program runs."""
    for _ in range(hops):
        found = _rename_of(("diff", "--cached", "-M", "--name-status", "-z", "--no-ext-diff", "--no-textconv",
                            "HEAD"), root, path)
        if found is None:
            gone = run_git(("log", "-1", "--no-show-signature", "--format=%H", "--diff-filter=D", "HEAD", "--",
                            path), root)
            commit = (gone or "").strip()
            if not commit:
                return None
            found = _rename_of(("diff-tree", "-r", "-M", "--name-status", "-z", "--no-ext-diff", "--no-textconv",
                                f"{commit}^", commit), root, path)
        if found is None:
            return None
        if (root / found).exists():
            return found
        path = found
    return None


def _rename_of(args: tuple[str, ...], root: Path, path: str) -> str | None:
    fields = (run_git(args, root) or "").split("\0")
    at = 0
    while at < len(fields):
        status = fields[at]
        if status.startswith(("R", "C")) and at + 2 < len(fields):
            if fields[at + 1] == path and status.startswith("R"):
                return fields[at + 2]
            at += 3
        else:
            at += 2
    return None


def merge_file(ours: bytes, base: bytes, theirs: bytes, labels: tuple[str, str, str] = ("ours", "base", "theirs"),
               marker_size: int = 7) -> tuple[bytes, bool] | None:
    """Git's own three-way text merge of three versions (``git merge-file``): the result and whether it
    is clean, or None when git cannot merge them (a binary version, git missing).

    Run from the caller's directory, so that inside a repository git applies its
    ``merge.conflictStyle`` as it would to a file without a merge driver. ``labels`` name ours, the
    base and theirs on the conflict markers.
    """
    import tempfile

    with tempfile.TemporaryDirectory(prefix="memfold-merge-") as scratch:
        paths = []
        for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = os.path.join(scratch, name)
            os.close(create_unsynced(path, data))  # scratch for one git run: no fsync
            paths.append(path)
        label_args = tuple(part for label in labels for part in ("-L", label))
        done = git_status(("merge-file", "-p", f"--marker-size={marker_size}", *label_args, "--", *paths))
    if done is None or not 0 <= done[0] <= 127:
        return None
    return done[1], done[0] == 0
