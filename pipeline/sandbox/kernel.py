"""Thin ctypes access to the Linux syscalls the sandbox needs (prctl, raw syscall, unshare)."""

from __future__ import annotations

import ctypes
import os

TYPE_CHECKING = False  # typing costs ~5 ms of every sandboxed start
if TYPE_CHECKING:
    from typing import Any

PR_SET_PDEATHSIG = 1
PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4
PR_GET_SECCOMP = 21
PR_SET_SECCOMP = 22
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_GET_NO_NEW_PRIVS = 39
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000

# Landlock syscall numbers are shared by every architecture that has them.
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
# capset differs per architecture.
_SYS_CAPSET = {"x86_64": 126, "aarch64": 91}

_libc: ctypes.CDLL | None = None


def libc() -> ctypes.CDLL:
    """The C library, loaded once, with errno capture so failures carry a reason."""
    global _libc
    if _libc is None:
        try:
            _libc = ctypes.CDLL("libc.so.6", use_errno=True)
        except OSError:  # not glibc: ask the (slower) library search
            from ctypes.util import find_library

            _libc = ctypes.CDLL(find_library("c"), use_errno=True)
        _libc.syscall.restype = ctypes.c_long
        _libc.prctl.restype = ctypes.c_int
        _libc.prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
    return _libc


def machine() -> str:
    return os.uname().machine.lower()


def _check(ret: int, what: str) -> int:
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return ret


def syscall(number: int, *args: Any) -> int:
    """Raw syscall; integer arguments go through as full-width unsigned longs."""
    conv = [ctypes.c_ulong(a) if isinstance(a, int) else a for a in args]
    return _check(libc().syscall(ctypes.c_long(number), *conv), f"syscall {number}")


def prctl(option: int, a2: int = 0, a3: int = 0, a4: int = 0, a5: int = 0) -> int:
    return _check(libc().prctl(option, a2, a3, a4, a5), f"prctl {option}")


def unshare(flags: int) -> None:
    _check(libc().unshare(ctypes.c_int(flags)), "unshare")


def capset_zero() -> None:
    """Clear effective, permitted and inheritable sets (capability ABI v3, two 32-bit words)."""
    number = _SYS_CAPSET.get(machine())
    if number is None:
        raise OSError(0, f"capset: unknown architecture {machine()}")

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    header = Header(0x20080522, 0)
    data = (Data * 2)()
    syscall(number, ctypes.byref(header), ctypes.byref(data))
