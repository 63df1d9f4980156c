"""A hand-assembled seccomp BPF filter: refuse sockets, io_uring and kernel-admin syscalls."""

from __future__ import annotations

import ctypes
import errno
import struct

from . import kernel

TYPE_CHECKING = False  # typing costs ~5 ms of every sandboxed start
if TYPE_CHECKING:
    from typing import Any

SECCOMP_MODE_FILTER = 2
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000

# BPF opcodes used below.
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06

_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_X32_BIT = 0x40000000
_CLONE_NS_FLAGS = 0x7E020000  # every CLONE_NEW* bit clone() accepts (NEWTIME shares the signal byte)

_NETWORK = ("socket", "socketpair")
# io_uring would let a worker do I/O without passing through the rules below.
_ALWAYS = (
    "io_uring_setup", "io_uring_enter", "io_uring_register", "mount", "umount2", "pivot_root",
    "chroot", "unshare", "setns", "ptrace", "process_vm_readv", "process_vm_writev", "kexec_load",
    "kexec_file_load", "bpf", "perf_event_open", "init_module", "finit_module", "delete_module",
    "reboot", "swapon", "swapoff", "keyctl", "add_key", "request_key", "userfaultfd",
    "open_by_handle_at", "name_to_handle_at", "fsopen", "fsconfig", "fsmount", "fspick",
    "move_mount", "open_tree", "mount_setattr", "acct", "settimeofday", "clock_settime",
    "adjtimex", "sethostname", "setdomainname", "iopl", "ioperm", "quotactl",
)
_NR: dict[str, dict[str, int]] = {
    "x86_64": {
        "socket": 41, "socketpair": 53, "clone": 56, "clone3": 435, "io_uring_setup": 425,
        "io_uring_enter": 426, "io_uring_register": 427, "mount": 165, "umount2": 166,
        "pivot_root": 155, "chroot": 161, "unshare": 272, "setns": 308, "ptrace": 101,
        "process_vm_readv": 310, "process_vm_writev": 311, "kexec_load": 246,
        "kexec_file_load": 320, "bpf": 321, "perf_event_open": 298, "init_module": 175,
        "finit_module": 313, "delete_module": 176, "reboot": 169, "swapon": 167, "swapoff": 168,
        "keyctl": 250, "add_key": 248, "request_key": 249, "userfaultfd": 323,
        "open_by_handle_at": 304, "name_to_handle_at": 303, "fsopen": 430, "fsconfig": 431,
        "fsmount": 432, "fspick": 433, "move_mount": 429, "open_tree": 428, "mount_setattr": 442,
        "acct": 163, "settimeofday": 164, "clock_settime": 227, "adjtimex": 159,
        "sethostname": 170, "setdomainname": 171, "iopl": 172, "ioperm": 173, "quotactl": 179,
    },
    "aarch64": {
        "socket": 198, "socketpair": 199, "clone": 220, "clone3": 435, "io_uring_setup": 425,
        "io_uring_enter": 426, "io_uring_register": 427, "mount": 40, "umount2": 39,
        "pivot_root": 41, "chroot": 51, "unshare": 97, "setns": 268, "ptrace": 117,
        "process_vm_readv": 270, "process_vm_writev": 271, "kexec_load": 104,
        "kexec_file_load": 294, "bpf": 280, "perf_event_open": 241, "init_module": 105,
        "finit_module": 273, "delete_module": 106, "reboot": 142, "swapon": 224, "swapoff": 225,
        "keyctl": 219, "add_key": 217, "request_key": 218, "userfaultfd": 282,
        "open_by_handle_at": 265, "name_to_handle_at": 264, "fsopen": 430, "fsconfig": 431,
        "fsmount": 432, "fspick": 433, "move_mount": 429, "open_tree": 428, "mount_setattr": 442,
        "acct": 89, "settimeofday": 170, "clock_settime": 112, "adjtimex": 171,
        "sethostname": 161, "setdomainname": 162, "quotactl": 60,
    },
}


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def available() -> bool:
    """True when the kernel has seccomp filters (PR_GET_SECCOMP answers instead of EINVAL)."""
    try:
        kernel.prctl(kernel.PR_GET_SECCOMP)
        return kernel.machine() in _ARCH
    except OSError:
        return False


def build(network: bool, arch: str | None = None) -> bytes:
    """The filter program. Layout: arch check, x32 check, clone flags, then one JEQ per syscall."""
    arch = arch or kernel.machine()
    table = _NR[arch]
    names = [n for n in _ALWAYS if n in table] + ([] if network else list(_NETWORK))
    denied = [table[n] for n in names]
    prog: list[bytes] = []
    # Offsets in struct seccomp_data: nr 0, arch 4, args[0] 16 (low word on little endian).
    prog.append(_insn(_LD_W_ABS, 4))
    prog.append(_insn(_JEQ_K, _ARCH[arch], 1, 0))
    prog.append(_insn(_RET_K, RET_KILL_PROCESS))
    prog.append(_insn(_LD_W_ABS, 0))
    if arch == "x86_64":
        prog.append(_insn(_JGE_K, _X32_BIT, 0, 1))
        prog.append(_insn(_RET_K, RET_KILL_PROCESS))
    # clone3 passes flags in memory BPF cannot read: ENOSYS makes libc fall back to clone.
    prog.append(_insn(_JEQ_K, table["clone3"], 0, 1))
    prog.append(_insn(_RET_K, RET_ERRNO | errno.ENOSYS))
    prog.append(_insn(_JEQ_K, table["clone"], 0, 4))
    prog.append(_insn(_LD_W_ABS, 16))
    prog.append(_insn(_JSET_K, _CLONE_NS_FLAGS, 0, 1))
    prog.append(_insn(_RET_K, RET_ERRNO | errno.EPERM))
    prog.append(_insn(_RET_K, RET_ALLOW))
    n = len(denied)
    for i, nr in enumerate(denied):
        # On a match jump to the shared EPERM return after the ALLOW.
        prog.append(_insn(_JEQ_K, nr, n - i, 0))
    prog.append(_insn(_RET_K, RET_ALLOW))
    prog.append(_insn(_RET_K, RET_ERRNO | errno.EPERM))
    return b"".join(prog)


def install(network: bool) -> dict[str, Any]:
    """Install the filter on this thread (inherited by children); needs no_new_privs first."""
    code = build(network)
    buf = ctypes.create_string_buffer(code, len(code))
    fprog = _SockFprog(len(code) // 8, ctypes.addressof(buf))
    kernel.prctl(kernel.PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog))
    return {
        "sockets": "allowed" if network else "denied",
        "io_uring": "denied",
        "namespaces": "denied",
        "foreign_arch": "killed",
    }
