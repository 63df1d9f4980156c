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

from .paths import MIRROR_DIR

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


def run_git(args: tuple[str, ...], cwd: Path | None = None,
            base_env: Mapping[str, str] | None = None) -> str | None:
    """Run git with an argv tuple (never a shell) and return its stdout, or None when git is
    missing, fails or takes longer than ``TIMEOUT_S``."""
    try:
        out = subprocess.run(git_argv(args, cwd), capture_output=True, timeout=TIMEOUT_S, check=False,
                             stdin=subprocess.DEVNULL,
                             env=git_env(os.environ if base_env is None else base_env, cwd))
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.decode("utf-8", "surrogateescape")


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
