"""Landlock filesystem, TCP and scope restrictions, best effort from ABI 1 up, via ctypes."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Collection, Iterable

from . import kernel

TYPE_CHECKING = False  # typing costs ~5 ms of every sandboxed start
if TYPE_CHECKING:
    from typing import Any

CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1

# Filesystem rights, in bit order (ABI 1 has bits 0-12).
EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5

NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1

# Rights that make sense on a non-directory; the kernel rejects others on file rules.
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi_version(absent: Collection[str] = ()) -> int:
    """The running kernel's Landlock ABI, or 0 when Landlock is absent or named in ``absent``."""
    if "landlock" in absent:
        return 0
    try:
        return kernel.syscall(kernel.SYS_LANDLOCK_CREATE_RULESET, None, 0, CREATE_RULESET_VERSION)
    except OSError:
        return 0


def fs_mask(abi: int) -> int:
    mask = (1 << 13) - 1
    if abi >= 2:
        mask |= REFER
    if abi >= 3:
        mask |= TRUNCATE
    if abi >= 5:
        mask |= IOCTL_DEV
    return mask


def _add_path(ruleset_fd: int, path: str, rights: int, handled: int) -> bool:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return False  # a missing path simply grants nothing
    try:
        if not os.path.isdir(f"/proc/self/fd/{fd}"):
            rights &= FILE_RIGHTS
        attr = _PathBeneath(rights & handled, fd)
        kernel.syscall(kernel.SYS_LANDLOCK_ADD_RULE, ruleset_fd, RULE_PATH_BENEATH, ctypes.byref(attr), 0)
        return True
    finally:
        os.close(fd)


def restrict(
    read_paths: Iterable[str], write_paths: Iterable[str], *, network: bool, abi: int | None = None
) -> dict[str, Any]:
    """Restrict this process (and its future children); return what is enforced.

    Read paths get read+execute, write paths every handled right, ``/dev/null``
    read+write. Without ``network`` every TCP bind/connect is handled with no
    allowing rule (ABI 4+). Abstract UNIX sockets and signals to processes outside
    the sandbox are always scoped (ABI 6+): a networked agent needs TCP, never a
    same-uid tmux server or agent socket, nor a way to signal its launcher.
    Needs no_new_privs (or CAP_SYS_ADMIN) already set.
    """
    abi = abi_version() if abi is None else abi
    report: dict[str, Any] = {"abi": abi, "fs": False, "net": False, "scoped": False}
    if abi <= 0:
        return report
    handled_fs = fs_mask(abi)
    attr = _RulesetAttr(handled_fs, 0, 0)
    size = 8
    if abi >= 4:
        size = 16
        if not network:
            attr.net = NET_BIND_TCP | NET_CONNECT_TCP
    if abi >= 6:
        size = 24
        attr.scoped = SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX
    ruleset = kernel.syscall(kernel.SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), size, 0)
    try:
        read_rights = EXECUTE | READ_FILE | READ_DIR
        for path in read_paths:
            _add_path(ruleset, path, read_rights, handled_fs)
        for path in write_paths:
            _add_path(ruleset, path, handled_fs, handled_fs)
        _add_path(ruleset, "/dev/null", READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV, handled_fs)
        kernel.syscall(kernel.SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0)
    finally:
        os.close(ruleset)
    report["fs"] = True
    report["net"] = bool(attr.net)
    report["scoped"] = bool(attr.scoped)
    if abi >= 6:
        report["scopes"] = ["signal", "abstract-unix"]
    return report
