"""The worker's task (procedure rendered with run values) and the worker command it runs."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..frozen import FrozenValue
from ..resources import data_dir
from ..sandbox import DEFAULT_LIMITS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..context.artifacts import Writer

_PLACEHOLDER = re.compile(r"\{\{([a-z_]+)\}\}")
BUILTIN = "builtin"


def write_task(run_dir: Path, values: Mapping[str, str], write: Writer | None = None) -> None:
    """The rendered procedure as the run's ``task.md`` (what the worker reads), written by ``write``
    (``fsutil.write_artifact`` unless given)."""
    if write is None:
        from ..fsutil import write_artifact

        write = write_artifact
    write(run_dir, "task.md", render_task(values))


def render_task(values: Mapping[str, str]) -> bytes:
    """``procedures/consolidate.md`` with every ``{{name}}`` replaced; unknown names are an error."""
    template = (data_dir("procedures") / "consolidate.md").read_text(encoding="utf-8")

    def substitute(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise KeyError(f"procedure placeholder {{{{{key}}}}} has no value")
        return values[key]

    return _PLACEHOLDER.sub(substitute, template).encode("utf-8")


class WorkerChoice(FrozenValue):
    """A resolved worker: its argv (placeholders filled), timeout, extra env names, network, extra reads, limits."""

    __slots__ = ("name", "argv", "timeout", "env", "network", "read_paths", "limits")
    name: str
    argv: tuple[str, ...]
    timeout: float
    env: tuple[str, ...]
    network: bool
    read_paths: tuple[str, ...]
    # processes, memory_mb, scratch_mb: what one run may use.
    limits: Mapping[str, int]

    def __init__(self, name: str, argv: tuple[str, ...], timeout: float, env: tuple[str, ...], network: bool,
                 read_paths: tuple[str, ...] = (), limits: Mapping[str, int] | None = None) -> None:
        self._set(name=name, argv=argv, timeout=timeout, env=env, network=network, read_paths=read_paths,
                  limits=dict(DEFAULT_LIMITS) if limits is None else limits)

    @property
    def builtin(self) -> bool:
        return self.name == BUILTIN

    def describe(self) -> dict[str, Any]:
        described = {"name": self.name, "kind": "builtin" if self.builtin else "command", "argv": list(self.argv),
                     "timeout": self.timeout, "network": self.network, "limits": dict(self.limits)}
        if self.read_paths:
            described["readPaths"] = list(self.read_paths)
        return described


def allowed_workers(workers: Mapping[str, Any]) -> tuple[str, ...]:
    """The one allow-list every entry point checks a worker name against before anything starts: the
    built-in planner and the names under ``workers:`` in the user config (never a file in the repository)."""
    return (BUILTIN, *sorted(n for n in workers if n != BUILTIN))


def resolve_worker(requested: str | None, default: str, workers: Mapping[str, Any]) -> str:
    """The worker a run uses: the one asked for, else the configured default; either must be allowed.

    The CLI, ``/consolidate`` from a host, cron and the MCP server all resolve here, before a launcher,
    a lock or a run directory exists.
    """
    name = requested or default
    allowed = allowed_workers(workers)
    if name in allowed:
        return name
    known = ", ".join(allowed)
    if requested:
        raise UsageError(f"no worker named {name!r}: not builtin and not under `workers:` in config.yaml",
                         code="usage.worker", hint=f"known workers: {known}; nothing was started")
    from ..errors import ConfigError

    raise ConfigError(f"consolidate.worker in config.yaml names {name!r}, which is not builtin and not under "
                      "`workers:`", code="config.worker",
                      hint=f"known workers: {known}; set consolidate.worker to one of them, or pass --worker")


def choose_worker(name: str, workers: Mapping[str, Any], places: Mapping[str, str],
                  builtin_timeout: float = 300.0) -> WorkerChoice:
    """Worker commands come only from the user config (or the built-in), never from the repository."""
    if name == BUILTIN:
        argv: tuple[str, ...] = (sys.executable, "-m", "pipeline.planner", "--run-dir", places["run_dir"])
        return WorkerChoice(BUILTIN, argv, builtin_timeout, (), False)
    config = workers.get(name)
    if config is None:
        known = ", ".join(sorted([BUILTIN, *workers])) or BUILTIN
        raise UsageError(f"no worker named {name!r} in the user config", code="usage.worker",
                         hint=f"known workers: {known}; add one under `workers:` in config.yaml")
    argv = tuple(_fill(arg, places) for arg in config.argv)
    reads = tuple(os.path.expanduser(p) for p in getattr(config, "read_paths", ()))
    limits = {**DEFAULT_LIMITS, **(getattr(config, "limits", None) or {})}
    return WorkerChoice(name, argv, float(config.timeout), tuple(config.env), bool(config.network), reads, limits)


def _fill(arg: str, places: Mapping[str, str]) -> str:
    def substitute(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in places:
            raise UsageError(f"worker argument {arg!r} uses unknown placeholder {{{key}}}", code="usage.worker",
                             hint=f"placeholders: {', '.join('{' + k + '}' for k in sorted(places))}")
        return places[key]

    return re.sub(r"\{([a-z_]+)\}", substitute, arg)


def placeholders(run_dir: Path, harness: Path, public: Path, repo: Path) -> dict[str, str]:
    return {"task": str(run_dir / "task.md"), "run_dir": str(run_dir), "manifest": str(run_dir / "manifest.json"),
            "snapshot": str(run_dir / "snapshot.json"), "harness": str(harness), "public": str(public),
            "repo": str(repo)}
