"""Privilege reduction for the worker: no_new_privs, capability drop, securebits, rlimits."""

from __future__ import annotations

import os
import resource
from collections.abc import Mapping

from . import kernel

TYPE_CHECKING = False  # typing costs ~5 ms of every sandboxed start
if TYPE_CHECKING:
    from typing import Any

# SECBIT_NOROOT, its lock, NO_SETUID_FIXUP, its lock, KEEP_CAPS_LOCKED: uid 0 gains
# nothing from exec or setuid any more, and the bits cannot be cleared again.
_SECUREBITS = 0x01 | 0x02 | 0x04 | 0x08 | 0x20

RLIMITS: dict[str, int] = {
    "cpu": resource.RLIMIT_CPU,
    "fsize": resource.RLIMIT_FSIZE,
    "nofile": resource.RLIMIT_NOFILE,
    "core": resource.RLIMIT_CORE,
    "as": resource.RLIMIT_AS,
    "data": resource.RLIMIT_DATA,
    "nproc": resource.RLIMIT_NPROC,
}


def set_no_new_privs() -> bool:
    try:
        kernel.prctl(kernel.PR_SET_NO_NEW_PRIVS, 1)
        return kernel.prctl(kernel.PR_GET_NO_NEW_PRIVS) == 1
    except OSError:
        return False


def _last_cap() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as fh:
            return int(fh.read().strip())
    except (OSError, ValueError):
        return 63


def effective_caps() -> int:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    return 0


def drop_all() -> str:
    """Drop bounding, ambient, inheritable, permitted and effective sets; keep the uid.

    Returns ``"dropped"``, ``"none-held"`` or ``"failed: <reason>"``.
    """
    try:
        held = effective_caps()
        with open("/proc/self/status", encoding="ascii") as fh:
            bounding = next((int(x.split()[1], 16) for x in fh if x.startswith("CapBnd:")), 0)
        if not held and not bounding:
            return "none-held"
        if held:
            try:
                kernel.prctl(kernel.PR_SET_SECUREBITS, _SECUREBITS)
            except OSError:
                pass  # securebits are a second line; the drops below are what matters
        for cap in range(_last_cap() + 1):
            try:
                kernel.prctl(kernel.PR_CAPBSET_DROP, cap)
            except OSError:
                if held:
                    raise
        try:
            kernel.prctl(kernel.PR_CAP_AMBIENT, kernel.PR_CAP_AMBIENT_CLEAR_ALL)
        except OSError:
            pass  # kernels before 4.3 have no ambient set
        kernel.capset_zero()
        if effective_caps():
            return "failed: capabilities still effective"
        return "dropped"
    except OSError as exc:
        return f"failed: {exc}"


def apply_rlimits(limits: Mapping[str, int | None]) -> dict[str, Any]:
    """Set soft and hard limits (never raising a hard limit); report what is in force."""
    applied: dict[str, Any] = {}
    for name, value in limits.items():
        which = RLIMITS.get(name)
        if which is None or value is None:
            continue
        try:
            _, hard = resource.getrlimit(which)
            new = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(which, (new, new))
            applied[name] = new
        except (OSError, ValueError) as exc:
            applied[name] = f"failed: {exc}"
    return applied


def uid() -> int:
    return os.getuid()
