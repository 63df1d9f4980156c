"""The manifest and receipt views of the sandbox: what is planned, what was in force, what was missing."""

from __future__ import annotations

from collections.abc import Mapping

from . import DEFAULT_RLIMITS

TYPE_CHECKING = False  # typing costs ~5 ms of every sandboxed start
if TYPE_CHECKING:
    from typing import Any

_KILLERS = ("pid-namespace", "cgroup.kill", "subreaper+pidfd", "process-group")


def enforced(report: Mapping[str, Any], *, network: bool | None = None, sandbox: bool = True) -> dict[str, Any]:
    """The receipt view of a launcher report (or a probe): the protections that were in force.

    ``missing`` names each protection this worker should have had and did not get, so a
    reader of the receipt need not know which kernel the run happened on.
    """
    ll = report.get("landlock") or {}
    sc = report.get("seccomp")
    seccomp = dict(sc) if isinstance(sc, dict) and sc.get("installed", True) else None
    sockets = seccomp.get("sockets") if seccomp else None
    out: dict[str, Any] = {
        "enforced": bool(ll.get("fs")),
        "filesystem": "landlock" if ll.get("fs") else "none",
        "landlock_abi": int(ll.get("abi") or 0),
        "landlock_scopes": list(ll.get("scopes") or []),
        "network": {
            "tcp": "denied" if ll.get("net") else "not-restricted",
            "sockets": sockets or "not-restricted",
            "unix": seccomp.get("unix_sockets", "not-restricted") if seccomp else "not-restricted",
        },
        "metadata": seccomp.get("metadata", "not-restricted") if seccomp else "not-restricted",
        "reads": report.get("reads", "unknown"),
        "supervisor": report.get("supervisor", "unknown"),
        "seccomp": {k: v for k, v in seccomp.items() if k != "installed"} if seccomp else "not-installed",
        "capabilities": report.get("capabilities", "unknown"),
        "no_new_privs": bool(report.get("no_new_privs", False)),
        "rlimits": dict(report.get("rlimits") or {}),
        "pid_namespace": bool(report.get("pid_namespace", False)),
        "pids_max": report.get("pids_max"),
        "memory_max": report.get("memory_max"),
        "limits": _limits(report),
        "kill": report.get("kill", "process-group"),
        "kill_mechanisms": list(report.get("kill_mechanisms") or [report.get("kill", "process-group")]),
    }
    if "uid" in report:
        out["uid"] = report["uid"]
    if network is not None:
        out["network"]["requested"] = "allowed" if network else "denied"
        out["missing"] = _missing(out, network)
    if not sandbox:
        out["unsafe_no_sandbox"] = True
    return out


def _limits(report: Mapping[str, Any]) -> dict[str, Any]:
    """Each resource bound in force, by the mechanism enforcing it (empty: unbounded)."""
    rl = report.get("rlimits") or {}
    processes = {"pids.max": report.get("pids_max"), "rlimit-nproc": rl.get("nproc")}
    # cgroup: the whole tree, by the kernel; rlimit-data: each process; tree-watch: the whole
    # tree, measured by memfold every 0.2 s where no cgroup could be made.
    memory = {"cgroup": report.get("memory_max"), "rlimit-data": rl.get("data"),
              "tree-watch": report.get("memory_watch_bytes")}
    out: dict[str, Any] = {"processes": {k: v for k, v in processes.items() if isinstance(v, int)},
                           "memory": {k: v for k, v in memory.items() if isinstance(v, int)}}
    if isinstance(report.get("scratch_max_bytes"), int):
        out["scratch_bytes"] = report["scratch_max_bytes"]
    return out


def _missing(view: Mapping[str, Any], network: bool) -> list[str]:
    gaps: list[str] = []
    if view["filesystem"] == "none":
        gaps.append("landlock-filesystem")
    if not network and view["network"]["tcp"] != "denied":
        gaps.append("landlock-tcp")
    if not network and view["network"]["sockets"] != "denied":
        gaps.append("seccomp-sockets")
    if view["seccomp"] == "not-installed" and "seccomp-sockets" not in gaps:
        gaps.append("seccomp")
    if view["capabilities"] not in ("dropped", "none-held"):
        gaps.append("capability-drop")
    if not view["no_new_privs"]:
        gaps.append("no-new-privs")
    if any(isinstance(v, str) for v in view["rlimits"].values()) or not view["rlimits"]:
        gaps.append("rlimits")
    limits = view["limits"]
    if not limits["processes"]:
        gaps.append("process-cap")
    if not limits["memory"]:
        gaps.append("memory-cap")
    if view["kill"] == "process-group":
        gaps.append("descendant-kill")
    return gaps


def planned(probe: Mapping[str, Any], *, network: bool, timeout: float, limits: Mapping[str, int],
            sandbox: bool = True) -> dict[str, Any]:
    """The manifest view, before the worker starts: what this machine can enforce for it."""
    if not sandbox:
        return {"enforced": False, "filesystem": "none", "reason": "--unsafe-no-sandbox", "unsafe_no_sandbox": True,
                "kill": "pid-namespace" if probe.get("pid_namespace") else "process-group"}
    ll = probe.get("landlock") or {}
    cg = probe.get("cgroup") or {}
    seccomp = bool(probe.get("seccomp"))
    rlimits = {k: v for k, v in DEFAULT_RLIMITS.items() if v is not None}
    rlimits["cpu"] = max(1, int(timeout) + 1)
    memory = limits["memory_mb"] << 20
    rlimits["data"] = memory
    uid = probe.get("uid")
    # RLIMIT_NPROC binds every uid but 0, and uid 0 too inside a user namespace (not used for root).
    nproc = limits["processes"] if uid != 0 else None
    mechanisms = [
        name for name, on in zip(_KILLERS, (probe.get("pid_namespace"), cg.get("kill"), True, True), strict=False) if on
    ]
    view: dict[str, Any] = {
        "status": "planned",
        "enforced": bool(ll.get("fs")),
        "filesystem": "landlock" if ll.get("fs") else "none",
        "landlock_abi": int(ll.get("abi") or 0),
        "network": {
            "requested": "allowed" if network else "denied",
            "tcp": "denied" if ll.get("net") and not network else "not-restricted",
            "sockets": "denied" if seccomp and not network else ("allowed" if seccomp else "not-restricted"),
            "unix": "denied" if seccomp else "not-restricted",
        },
        "metadata": "denied" if seccomp else "not-restricted",
        "seccomp": seccomp,
        "capabilities": "drop" if probe.get("capabilities") == "held" else "none-held",
        "rlimits": rlimits,
        "pid_namespace": bool(probe.get("pid_namespace")),
        "pids_max": limits["processes"] if cg.get("pids") else None,
        "memory_max": memory if cg.get("memory") else None,
        "kill": mechanisms[0],
    }
    view["limits"] = _limits(
        {
            **view,
            "rlimits": {**rlimits, "nproc": nproc},
            "scratch_max_bytes": limits["scratch_mb"] << 20,
            "memory_watch_bytes": None if cg.get("memory") else memory,
        }
    )
    view["missing"] = [g for g in _missing({**view, "no_new_privs": True,
                                             "seccomp": "installed" if seccomp else "not-installed",
                                             "capabilities": "dropped"}, network)]
    return view
