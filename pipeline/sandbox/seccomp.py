"""A hand-assembled seccomp BPF filter: refuse sockets, metadata changes, io_uring and kernel-admin syscalls."""

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
_AND_K = 0x54
_RET_K = 0x06

_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_X32_BIT = 0x40000000
_CLONE_NS_FLAGS = 0x7E020000  # every CLONE_NEW* bit clone() accepts (NEWTIME shares the signal byte)

AF_UNIX, AF_INET, AF_INET6, AF_NETLINK = 1, 2, 10, 16
SOCK_STREAM = 1
_SOCK_TYPE_MASK = 0xF  # SOCK_NONBLOCK and SOCK_CLOEXEC live above it
_SETID_BITS = 0o6000
# Offsets in struct seccomp_data: nr 0, arch 4, args[i] 16 + 8 i (low word on little endian).
_ARG0 = 16

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
# Landlock has no right for metadata: a worker could chmod or chown anything its uid owns
# (a home made world-readable, a setuid copy of a binary), so these fail everywhere, scratch too.
METADATA = (
    "chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat",
    "utime", "utimes", "futimesat", "utimensat", "setxattr", "lsetxattr", "fsetxattr",
    "removexattr", "lremovexattr", "fremovexattr", "setxattrat", "removexattrat",
)
# pidfd_getfd would copy a descriptor out of another process of the same uid (the launcher's
# status pipe); pidfd_open is its only way in.
PIDFD = ("pidfd_open", "pidfd_getfd")
# (syscall, index of its mode argument): creating a file or node with set-id bits is the
# other way to a setuid binary, so those modes fail like chmod does.
_CREATE_MODE = {
    "x86_64": (("open", 2), ("creat", 1), ("openat", 3), ("mknod", 1), ("mknodat", 2)),
    "aarch64": (("openat", 3), ("mknodat", 2)),
}
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
        "chmod": 90, "fchmod": 91, "fchmodat": 268, "fchmodat2": 452, "chown": 92, "fchown": 93,
        "lchown": 94, "fchownat": 260, "utime": 132, "utimes": 235, "futimesat": 261, "utimensat": 280,
        "setxattr": 188, "lsetxattr": 189, "fsetxattr": 190, "removexattr": 197, "lremovexattr": 198,
        "fremovexattr": 199, "setxattrat": 463, "removexattrat": 466, "pidfd_open": 434,
        "pidfd_getfd": 438, "open": 2, "creat": 85, "openat": 257, "openat2": 437, "mknod": 133,
        "mknodat": 259,
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
        # The generic table has only the *at and f* forms of the metadata calls.
        "fchmod": 52, "fchmodat": 53, "fchmodat2": 452, "fchown": 55, "fchownat": 54, "utimensat": 88,
        "setxattr": 5, "lsetxattr": 6, "fsetxattr": 7, "removexattr": 14, "lremovexattr": 15,
        "fremovexattr": 16, "setxattrat": 463, "removexattrat": 466, "pidfd_open": 434,
        "pidfd_getfd": 438, "openat": 56, "openat2": 437, "mknodat": 33,
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


def _socket_rules(table: dict[str, int], network: bool) -> list[bytes]:
    """socket: only INET, INET6 and NETLINK, and only with network; socketpair: only AF_UNIX stream.

    No UNIX socket can be created, so neither a path nor an abstract name is reachable
    (an agent on the user's ssh-agent or tmux server). An anonymous stream pair stays, for
    child stdio (libuv uses one), and it cannot be pointed at a name: connect on it fails
    with EISCONN. A datagram pair could still sendto a path, so it is refused.
    """
    prog: list[bytes] = []
    if network:
        prog.append(_insn(_JEQ_K, table["socket"], 0, 6))
        prog.append(_insn(_LD_W_ABS, _ARG0))
        prog.append(_insn(_JEQ_K, AF_INET, 2, 0))
        prog.append(_insn(_JEQ_K, AF_INET6, 1, 0))
        prog.append(_insn(_JEQ_K, AF_NETLINK, 0, 1))
        prog.append(_insn(_RET_K, RET_ALLOW))
        prog.append(_insn(_RET_K, RET_ERRNO | errno.EPERM))
    prog.append(_insn(_JEQ_K, table["socketpair"], 0, 7))
    prog.append(_insn(_LD_W_ABS, _ARG0))
    prog.append(_insn(_JEQ_K, AF_UNIX, 0, 4))
    prog.append(_insn(_LD_W_ABS, _ARG0 + 8))
    prog.append(_insn(_AND_K, _SOCK_TYPE_MASK))
    prog.append(_insn(_JEQ_K, SOCK_STREAM, 0, 1))
    prog.append(_insn(_RET_K, RET_ALLOW))
    prog.append(_insn(_RET_K, RET_ERRNO | errno.EPERM))
    return prog


def _create_mode_rules(table: dict[str, int], arch: str) -> list[bytes]:
    prog: list[bytes] = []
    for name, index in _CREATE_MODE[arch]:
        prog.append(_insn(_JEQ_K, table[name], 0, 4))
        prog.append(_insn(_LD_W_ABS, _ARG0 + 8 * index))
        prog.append(_insn(_JSET_K, _SETID_BITS, 0, 1))
        prog.append(_insn(_RET_K, RET_ERRNO | errno.EPERM))
        prog.append(_insn(_RET_K, RET_ALLOW))
    # openat2 passes its mode in memory BPF cannot read: ENOSYS makes callers fall back to openat.
    prog.append(_insn(_JEQ_K, table["openat2"], 0, 1))
    prog.append(_insn(_RET_K, RET_ERRNO | errno.ENOSYS))
    return prog


def build(network: bool, arch: str | None = None) -> bytes:
    """The filter program. Layout: arch check, x32 check, argument checks, then one JEQ per syscall.

    Each argument check loads an argument into the accumulator and ends in a return, so the
    syscall number is still loaded for whatever follows it.
    """
    arch = arch or kernel.machine()
    table = _NR[arch]
    names = [n for n in (*_ALWAYS, *METADATA, *PIDFD) if n in table] + ([] if network else ["socket"])
    denied = [table[n] for n in names]
    prog: list[bytes] = []
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
    prog.append(_insn(_LD_W_ABS, _ARG0))
    prog.append(_insn(_JSET_K, _CLONE_NS_FLAGS, 0, 1))
    prog.append(_insn(_RET_K, RET_ERRNO | errno.EPERM))
    prog.append(_insn(_RET_K, RET_ALLOW))
    prog.extend(_socket_rules(table, network))
    prog.extend(_create_mode_rules(table, arch))
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
        "unix_sockets": "denied",
        "socketpair": "unix-stream-only",
        "metadata": "denied",
        "setid_create": "denied",
        "pidfd": "denied",
        "io_uring": "denied",
        "namespaces": "denied",
        "foreign_arch": "killed",
    }
