"""The layout on disk: made when missing, checked before a write, and an older worktree store brought in.

``ensure_layout`` creates the project home, both roots and the run and receipt directories (one
``lstat`` a path when everything is already there); ``check_layout`` refuses a symlink on memfold's
own paths and two roots that are not distinct directories; ``adopt_worktree_store`` moves a store
keyed by a linked worktree's own root under the repository's key.
"""

from __future__ import annotations

import os

from ..errors import UnsafePath
from . import MEMORY_DIR, PROJECT_INFO, Layout, project_home, scope_key


def adopt_worktree_store(layout: Layout) -> str | None:
    """Bring a store keyed the old way (by a linked worktree's own root) under the repository's key.

    Before worktrees shared a project, each linked worktree had a store of its own. If only that one
    exists it is moved into place (one rename: its memories, runs and receipts; its ``project.json``
    keeps the scope key its receipts were written with, so the chain keeps verifying). If the repository
    already has a store, nothing is merged or lost: the old one stays where it is, is marked, and the
    notice says where. Returns the notice the first time, None ever after (and for every other layout).
    """
    if layout.is_global:
        return None
    root = str(layout.project_root)
    old_key = scope_key(root)
    if old_key == layout.store_key:
        return None
    home = str(layout.home)
    old = project_home(home, old_key)
    if not os.path.isdir(old) or os.path.islink(old):
        return None
    new = project_home(home, layout.store_key)
    if not os.path.exists(new):
        os.rename(old, new)
        return (f"this worktree's store moved to the repository's store {new} "
                "(every linked worktree of the repository now shares it)")
    marker = os.path.join(old, "superseded.json")
    if os.path.exists(marker):
        return None
    from ..fsutil import atomic_write
    from ..store.jsontext import dump_json

    atomic_write(marker, dump_json({"kind": "memfold-superseded", "root": root, "by": layout.store_key}))
    return (f"this worktree now shares the repository's store; its older store stays untouched at "
            f"{old} (copy what you need with `memfold import`)")


def refuse_overlapping_roots(layout: Layout) -> None:
    """The private store and the mirror are two distinct directories, neither inside the other.

    A home inside the project's ``.memory/`` would make the mirror hold the private store: git would
    carry private files, and every private memory would sit in the mirror's tree.
    """
    if layout.mirror is None:
        return
    harness, mirror = os.path.realpath(layout.harness), os.path.realpath(layout.mirror)
    if os.path.commonpath([harness, mirror]) in (harness, mirror):
        raise UnsafePath(f"the private store {layout.harness} and the mirror {layout.mirror} are not two distinct "
                         "directories (one is, or holds, the other)", code="path.roots-overlap",
                         hint="keep the memfold home outside the project's .memory/ (--home or MEMFOLD_HOME)")


def check_layout(layout: Layout) -> None:
    """Refuse a symlink anywhere on memfold's own paths (below the home and the project root), and two
    roots that are not distinct directories."""
    from ..fsutil import refuse_symlinks

    refuse_overlapping_roots(layout)
    if layout.home.is_symlink():
        raise UnsafePath(f"memfold home {layout.home} is a symlink", code="path.symlink",
                         hint="pass the real directory with --home or MEMFOLD_HOME")
    for path in (layout.harness, layout.runs, layout.receipts, layout.lock_path, layout.lock_info):
        refuse_symlinks(path, layout.home)
    if layout.mirror is not None:
        refuse_symlinks(layout.mirror, layout.project_root)


def _layout_ready(layout: Layout) -> bool:
    """Every directory of the layout there and none a symlink, the project home 0700, the project record
    written, no symlink at the lock's two files: ``ensure_layout`` would change nothing and refuse nothing.

    One lstat per path (about twenty microseconds), where the full check walks each path's components
    again and tries a ``mkdir`` of every existing directory (0.3-0.7 ms per transaction). Anything
    else, missing or odd, goes to the full check, which creates it or names the problem.
    """
    import stat

    home, project_home = os.fspath(layout.home), os.fspath(layout.project_home)
    rel = os.path.relpath(project_home, home)
    if rel == os.curdir or rel.startswith(os.pardir):
        return False
    if layout.mirror is not None:
        # Lexically: the full check (realpath) runs when the two roots are nested as written.
        store, mirror = os.path.join(project_home, MEMORY_DIR), os.fspath(layout.mirror)
        if os.path.commonpath([store, mirror]) in (store, mirror):
            return False
    dirs = [home]
    for part in rel.split(os.sep):
        dirs.append(os.path.join(dirs[-1], part))
    dirs += [os.path.join(project_home, name) for name in (MEMORY_DIR, "runs", "receipts")]
    if layout.mirror is not None:
        dirs += [os.fspath(layout.project_root), os.fspath(layout.mirror)]
    for path in dirs:
        try:
            st = os.lstat(path)
        except OSError:
            return False
        if not stat.S_ISDIR(st.st_mode) or (path == project_home and stat.S_IMODE(st.st_mode) != 0o700):
            return False
    for file, needed in ((os.fspath(layout.lock_path), False), (os.fspath(layout.lock_info), False),
                         (os.path.join(project_home, PROJECT_INFO), True)):
        try:
            if stat.S_ISLNK(os.lstat(file).st_mode):
                return False
        except FileNotFoundError:
            if needed:
                return False
        except OSError:
            return False
    return True


def ensure_layout(layout: Layout) -> bool:
    """Create the project home, both roots and the run/receipt dirs. True if anything was new."""
    from ..fsutil import atomic_write, ensure_dir
    from ..store.jsontext import dump_json

    if _layout_ready(layout):
        return False
    check_layout(layout)
    created = not layout.project_home.exists()
    layout.home.mkdir(mode=0o700, parents=True, exist_ok=True)
    for path in (layout.harness, layout.runs, layout.receipts):
        ensure_dir(path, layout.home)
    os.chmod(layout.project_home, 0o700)
    if layout.mirror is not None:
        ensure_dir(layout.mirror, layout.project_root, mode=0o755)
    info = layout.project_home / PROJECT_INFO
    if not info.exists():
        atomic_write(info, dump_json({"kind": "memfold-global" if layout.is_global else "memfold-project",
                                      "root": str(layout.project_root), "scopeKey": layout.scope_key}))
    return created
