"""``memfold hooks install git``: memfold's merge drivers in the repository's git config, the attributes
block, and (asked for) the hooks that run ``memfold sync`` after git changed the work tree.

Everything lands where every linked worktree of the repository shares it: the drivers in the common git
dir's ``config``, the hooks in its ``hooks/`` directory. Both name this installation's memfold by its
path (they never leave this machine); the ``.gitattributes`` block is committed and names only the
drivers, so a teammate without them gets git's own text merge. Git is asked and told through the one
safe helper (``mirror.gitinfo``), which runs nothing the repository configures.

memfold writes hooks only into the common git dir's ``hooks/``. Where ``core.hooksPath`` points git
elsewhere, the sync hook is refused with the line to add by hand: such a directory is usually tracked by
the repository or shared by every repository of the user, and memfold's path does not belong there.
A hook memfold did not write is never overwritten.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from ..errors import InputRejected, UsageError
from ..fsutil import atomic_write, ensure_dir, read_bounded, refuse_symlinks
from ..mirror import attributes
from ..mirror.gitinfo import git_status, run_git

DRIVERS = {
    attributes.MEMORY_DRIVER: ("memory", "memfold memory files (frontmatter merged field by field)"),
    attributes.HEAD_DRIVER: ("head", "memfold chain heads (the higher sequence number wins)"),
}
# What git puts in for the temp files, the path, the marker size and (git 2.44+) the conflict labels.
DRIVER_TAIL = "%O %A %B %P --marker-size %L --label-base %S --label-ours %X --label-theirs %Y"
HOOKS = ("post-merge", "post-checkout")
HOOK_MARK = "# memfold sync hook:"
HOOK_HEAD = (
    "#!/bin/sh\n"
    f"{HOOK_MARK} `memfold hooks install git --sync-hook` wrote it; `memfold hooks uninstall git` removes it.\n"
    "# memfold takes in what git changed in .memory/; whatever happens, the git command does not fail.\n"
)
HOOK_TAIL = " </dev/null || true\nexit 0\n"
MAX_HOOK_BYTES = 1 << 20

Action = dict[str, str]


def command_line(argv: Sequence[str]) -> str:
    """``argv`` as one POSIX shell command line (git runs drivers and hooks through ``sh``)."""
    return " ".join(shlex.quote(a) for a in argv)


def driver_line(memfold: Sequence[str], kind: str) -> str:
    """The ``merge.<driver>.driver`` value: this memfold's ``merge-file`` with git's placeholders."""
    if any("%" in part for part in memfold):
        # Git expands '%' in a driver line, and git before 2.44 has no escape for it.
        raise UsageError(f"memfold's path {command_line(memfold)} holds '%', which a git merge driver line "
                         "cannot carry", code="hooks.git-path",
                         hint="install memfold at a path without '%' (or link it there), then run this again")
    return f"{command_line(memfold)} merge-file {kind} {DRIVER_TAIL}"


def hook_script(sync: Sequence[str]) -> bytes:
    return (HOOK_HEAD + command_line(sync) + HOOK_TAIL).encode("utf-8")


def is_our_hook(data: bytes) -> bool:
    """A hook memfold wrote, whatever path it named memfold by (and unchanged since)."""
    head, tail = HOOK_HEAD.encode(), HOOK_TAIL.encode()
    middle = data[len(head):len(data) - len(tail)]
    return (len(data) > len(head) + len(tail) and data.startswith(head) and data.endswith(tail)
            and b"\n" not in middle)


def common_dir(root: Path) -> Path:
    """The repository's git dir that every linked worktree shares."""
    out = run_git(("rev-parse", "--git-common-dir"), root)
    if out is None or not out.strip():
        raise UsageError(f"{root} is not a git work tree", code="hooks.not-git",
                         hint="run it in the repository whose .memory/ git should merge (or `git init` first)")
    found = Path(out.strip("\n"))
    return (found if found.is_absolute() else root / found).resolve()


def install(root: Path, memfold: Sequence[str], sync: Sequence[str] | None) -> list[Action]:
    """Register the drivers, write the attributes block and (``sync``: the command a hook runs) the hooks.

    Everything that would be refused is checked before anything is written; run again, it changes
    nothing (or brings a moved memfold's path up to date).
    """
    common = common_dir(root)
    lines = {name: driver_line(memfold, kind) for name, (kind, _) in DRIVERS.items()}
    hooks = _hook_plan(root, common, sync) if sync is not None else []
    actions: list[Action] = []
    path = root / attributes.ATTRIBUTES_FILE
    actions.append({"path": str(path), "action": "block written" if attributes.write_block(root) else "unchanged"})
    for name, (_, title) in DRIVERS.items():
        for key, value in ((f"merge.{name}.name", title), (f"merge.{name}.driver", lines[name])):
            actions.append(_config_set(root, common, key, value))
    if hooks:
        ensure_dir(common / "hooks", common, mode=0o755)
    for hook, data in hooks:
        current = _read_hook(hook)
        if current == data:
            actions.append({"path": str(hook), "action": "unchanged"})
            continue
        atomic_write(hook, data, mode=0o755)
        actions.append({"path": str(hook), "action": "written" if current is None else "updated"})
    return actions


def _hook_plan(root: Path, common: Path, sync: Sequence[str]) -> list[tuple[Path, bytes]]:
    """The hooks to write; refuses a ``core.hooksPath`` elsewhere and any hook memfold did not write."""
    data = hook_script([*sync, "sync", "--quiet"])
    line = command_line([*sync, "sync", "--quiet"]) + " || true"
    elsewhere = hooks_path(root)
    if elsewhere is not None:
        raise UsageError(f"core.hooksPath is set ({elsewhere}): git runs hooks from there, and memfold writes "
                         "hooks only into the repository's own .git/hooks", code="hooks.git-hooks-path",
                         hint=f"add the line `{line}` to post-merge and post-checkout in {elsewhere}, "
                              "or install without --sync-hook")
    hooks_dir = common / "hooks"
    refuse_symlinks(hooks_dir, common)
    plan = [(hooks_dir / name, data) for name in HOOKS]
    for hook, _ in plan:
        current = _read_hook(hook)
        if current is not None and not is_our_hook(current):
            raise InputRejected(f"{hook} exists and memfold did not write it; nothing was changed",
                                code="hooks.git-hook-exists",
                                hint=f"add the line `{line}` to it yourself, or move it away and install again")
    return plan


def hooks_path(root: Path) -> str | None:
    """``core.hooksPath`` as this repository's git sees it (every config file but the command line)."""
    out = run_git(("config", "--show-scope", "--get-all", "core.hooksPath"), root)
    found = [line.split("\t", 1)[1] for line in (out or "").splitlines()
             if "\t" in line and line.split("\t", 1)[0] != "command"]
    return found[-1] if found else None


def _read_hook(path: Path) -> bytes | None:
    """A hook's bytes, None when absent; a link or special file is never memfold's (read as empty)."""
    try:
        return read_bounded(path, MAX_HOOK_BYTES)
    except FileNotFoundError:
        return None
    except InputRejected:
        return b""


def _config_get(root: Path, key: str) -> str | None:
    out = run_git(("config", "--local", "--get", key), root)
    return None if out is None else out.removesuffix("\n")


def _config_set(root: Path, common: Path, key: str, value: str) -> Action:
    where = str(common / "config")
    if _config_get(root, key) == value:
        return {"path": where, "action": f"unchanged {key}"}
    done = git_status(("config", "--local", key, value), root)
    if done is None or done[0] != 0:
        raise InputRejected(f"git could not set {key} in {where}", code="hooks.git-config",
                            hint="check that the repository's config is writable, then run this again")
    return {"path": where, "action": f"set {key}"}


def uninstall(root: Path, remove_attributes: bool) -> list[Action]:
    """Remove the drivers and hooks memfold registered (what was changed since stays); the attributes
    block too when asked, since it is committed and shared with the team."""
    common = common_dir(root)
    actions: list[Action] = []
    where = str(common / "config")
    for name, (kind, _) in DRIVERS.items():
        value = _config_get(root, f"merge.{name}.driver")
        if value is None:
            continue
        if f" merge-file {kind} " not in value:
            actions.append({"path": where, "action": f"kept merge.{name} (its driver is not memfold's)"})
            continue
        for key in (f"merge.{name}.driver", f"merge.{name}.name"):
            git_status(("config", "--local", "--unset-all", key), root)
        if not run_git(("config", "--local", "--get-regexp", rf"^merge\.{name}\."), root):
            git_status(("config", "--local", "--remove-section", f"merge.{name}"), root)
        actions.append({"path": where, "action": f"removed merge.{name}"})
    for hook in (common / "hooks" / name for name in HOOKS):
        current = _read_hook(hook)
        if current is not None and is_our_hook(current):
            hook.unlink()
            actions.append({"path": str(hook), "action": "deleted"})
        elif current is not None and HOOK_MARK.encode() in current:
            actions.append({"path": str(hook), "action": "kept (changed since memfold wrote it)"})
    path = str(root / attributes.ATTRIBUTES_FILE)
    if remove_attributes:
        actions.append({"path": path, "action": "block removed" if attributes.remove_block(root) else "no block"})
    else:
        actions.append({"path": path, "action": "block kept (committed and shared; --attributes removes it)"})
    return actions
