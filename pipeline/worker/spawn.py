"""Run the chosen worker in its sandbox and turn its output into exactly one extracted plan."""

from __future__ import annotations

import json
import os
import pwd
import re
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..errors import UsageError, WorkerFailed
from ..frozen import FrozenValue
from ..paths import Layout
from .extract import PLAN_EVENT, Extracted, ExtractLimits, extract_plan
from .task import WorkerChoice

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..context.artifacts import Writer
    from .ahead import Launcher

PACKAGE_ROOT = Path(__file__).resolve().parents[2]
_EVENT_BYTES = PLAN_EVENT.encode()


class WorkerOutcome(FrozenValue):
    __slots__ = ("extracted", "protections", "duration_s", "extract_ms")
    extracted: Extracted
    protections: dict[str, Any]
    duration_s: float
    extract_ms: float

    def __init__(self, extracted: Extracted, protections: dict[str, Any], duration_s: float, extract_ms: float) -> None:
        self._set(extracted=extracted, protections=protections, duration_s=duration_s, extract_ms=extract_ms)


class PlanEventWatch:
    """``stop_when`` for the worker: true once stdout holds one complete plan event line.

    A worker that printed ``{"type":"consolidation_plan","plan":{...}}`` has said all it
    has to say; DESIGN.md kills every descendant "when the plan is extracted", so one
    that keeps running (an agent CLI waiting on a child, a daemon it left) is stopped and
    its plan used. The plan is whatever stdout held when the stop was decided: a second,
    different plan in the same output still fails extraction as ``worker.multiple-plans``.
    Only the event form counts; a bare object or an agent stream has no unambiguous end.
    Each line is inspected once, so the watch costs O(stdout) over the whole run.
    """

    def __init__(self) -> None:
        self._scanned = 0

    def __call__(self, out: bytearray) -> bool:
        end = out.rfind(b"\n", self._scanned)
        if end < self._scanned:
            return False
        start, self._scanned = self._scanned, end + 1
        if out.find(_EVENT_BYTES, start, end) < 0:
            return False  # no line holds the event name: a bare plan is not split into its lines
        for line in out[start:end].split(b"\n"):
            if _EVENT_BYTES not in line:
                continue
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(record, dict) and record.get("type") == PLAN_EVENT and isinstance(record.get("plan"), dict):
                return True
        return False


def _import_dirs() -> list[Path]:
    """Where this interpreter imports from: the built-in planner must be able to read them."""
    return [Path(p) for p in sys.path if p and os.path.isdir(p)]


def _covers(outer: str, inner: str) -> bool:
    """True when ``inner`` is ``outer`` or lies below it (both real paths)."""
    return inner == outer or inner.startswith(outer.rstrip("/") + "/")


def _user_homes(parent_env: Mapping[str, str]) -> list[str]:
    """The user's home directory as the password database and the caller's $HOME name it."""
    homes = [parent_env.get("HOME", "")]
    try:
        homes.append(pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:
        pass
    return list(dict.fromkeys(os.path.realpath(h) for h in homes if h))


def _refuse_unsafe_project_root(layout: Layout, parent_env: Mapping[str, str]) -> None:
    """The worker reads the whole project tree: it may not be /, the memfold home or the user's home.

    A dotfiles repository or a plain directory at ``~`` would hand the worker ``~/.ssh`` and
    every other project's private store. A project below the home (``~/src/app``) is fine.
    """
    root = os.path.realpath(layout.project_root)
    guarded = [("the memfold home", os.path.realpath(layout.home))]
    guarded += [("your home directory", home) for home in _user_homes(parent_env)]
    for what, path in guarded:
        if root == "/" or _covers(root, path):
            raise WorkerFailed(
                f"refused: the project root {root} is or contains {what} ({path}); a worker reads the "
                "whole project, so it would read everything there", code="worker.project-root-unsafe",
                hint="consolidate from a project directory below your home (e.g. ~/src/app), or point "
                "--home at a memfold home outside the project", data={"projectRoot": root, "guarded": path})


def _refuse_reading_the_home(choice: WorkerChoice, layout: Layout, parent_env: Mapping[str, str]) -> None:
    """A configured read path may not open the memfold home (every project's private store) or the user's home."""
    memfold_home = os.path.realpath(layout.home)
    for path in choice.read_paths:
        real = os.path.realpath(path).rstrip("/") or "/"
        # Below the user's home is where agent CLIs live; below the memfold home is a store.
        opened = [h for h in (memfold_home, *_user_homes(parent_env)) if _covers(real, h)]
        if _covers(memfold_home, real):
            opened.append(memfold_home)
        if opened:
            raise UsageError(f"worker {choice.name}: read path {path} would let it read {opened[0]}",
                             code="usage.worker-read-path",
                             hint="name the directory the agent CLI is installed in (e.g. ~/.npm-global), "
                             "not a parent of the memfold home or the home directory itself")


def requested_protections(choice: WorkerChoice, unsafe_no_sandbox: bool,
                          parent_env: Mapping[str, str]) -> dict[str, Any]:
    """What the manifest promises before the worker starts (the receipt records what was enforced)."""
    from ..sandbox import absent_protections, probe
    from ..sandbox.describe import planned

    return planned(probe(absent_protections(parent_env)), network=choice.network, timeout=choice.timeout,
                   limits=choice.limits,
                   sandbox=not unsafe_no_sandbox)


def _raise_hint(choice: WorkerChoice, key: str) -> str:
    if choice.builtin:
        return "the built-in planner stays far below its bounds; this is a bug worth reporting"
    return f"raise workers.{choice.name}.limits.{key} in the config if the worker needs more"


def run_plan_worker(
    choice: WorkerChoice, *, run_dir: Path, layout: Layout, parent_env: Mapping[str, str],
    unsafe_no_sandbox: bool, limits: ExtractLimits, launcher: Launcher | None = None,
    started: Callable[[], object] | None = None, write: Writer | None = None,
    defer: Callable[[Callable[[], object]], object] | None = None,
) -> WorkerOutcome:
    """The worker's run; ``launcher``: one started ahead of the run (``ahead.start_launcher``);
    ``started``: called once the worker is on its way (see ``run_worker``); ``write``: what writes
    ``plan.json`` (``fsutil.write_artifact`` unless given); ``defer``: runs the scratch dir's
    removal later (see ``run_worker``)."""
    from ..sandbox import absent_protections
    from ..sandbox.describe import enforced
    from .run import build_env, run_worker
    from .spec import WorkerSpec

    if not unsafe_no_sandbox:
        _refuse_unsafe_project_root(layout, parent_env)
    _refuse_reading_the_home(choice, layout, parent_env)
    scratch = run_dir / "scratch"
    env = build_env(parent_env, choice.env, scratch)
    imports: list[Path] = []
    if choice.builtin:
        # The planner imports exactly what this process imports: same package, same dependencies;
        # but not a sys.path entry such as the working directory `python -m` adds, when that is a home.
        guarded = [os.path.realpath(layout.home), *_user_homes(parent_env)]
        imports = [d for d in _import_dirs() if not any(_covers(os.path.realpath(d), h) for h in guarded)]
        env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_ROOT), *map(str, imports)])
    spec = WorkerSpec(
        argv=choice.argv, cwd=scratch, env=env, timeout=choice.timeout, network=choice.network,
        sandbox=not unsafe_no_sandbox, require_fs_sandbox=not choice.builtin and not unsafe_no_sandbox,
        read_paths=tuple(p for p in (run_dir, layout.harness, layout.mirror, layout.project_root, PACKAGE_ROOT,
                                     *imports,
                                     *map(Path, choice.read_paths)) if p),
        write_paths=(scratch,), pids_max=choice.limits["processes"],
        memory_bytes=choice.limits["memory_mb"] << 20, scratch=scratch, scratch_bytes=choice.limits["scratch_mb"] << 20,
        absent=absent_protections(parent_env),
        in_process=choice.builtin,
    )
    try:
        result = run_worker(spec, stdout_path=run_dir / "stdout.jsonl", stderr_path=run_dir / "stderr.txt",
                            stdout_limit=limits.max_stdout_bytes, stop_when=PlanEventWatch(), launcher=launcher,
                            started=started, defer=defer)
    except WorkerFailed as exc:
        if exc.code == "worker.sandbox-unavailable":
            raise WorkerFailed(f"worker {choice.name} refused: {exc}", code=exc.code, hint=exc.hint,
                               data=exc.data) from None
        raise
    protections = enforced(result.protections, network=choice.network, sandbox=not unsafe_no_sandbox)
    protections["worker_end"] = result.killed_reason or "exit"
    where = f"see {run_dir / 'stderr.txt'}"
    if result.timed_out:
        raise WorkerFailed(f"worker {choice.name} timed out after {choice.timeout:g} s; it and every process "
                           "it started were killed", code="worker.timeout",
                           hint=f"raise its timeout in the config; {where}")
    if result.over_bound and result.over_bound.startswith("scratch-"):
        what = {"scratch-bytes": f"more than {choice.limits['scratch_mb']} MiB",
                "scratch-entries": "more files than the scratch bound allows",
                "scratch-unreadable": "a directory the bound cannot measure"}[result.over_bound]
        raise WorkerFailed(f"worker {choice.name} put {what} in its scratch dir and was killed",
                           code="worker.scratch-too-large",
                           hint=_raise_hint(choice, "scratch_mb"),
                           data={"bound": result.over_bound})
    if result.over_bound == "memory":
        raise WorkerFailed(f"worker {choice.name} and its processes used more than {choice.limits['memory_mb']} MiB "
                           "of memory together and were killed", code="worker.memory-too-large",
                           hint=_raise_hint(choice, "memory_mb"))
    if result.over_bound:
        raise WorkerFailed(f"worker {choice.name} printed more than {limits.max_stdout_bytes} bytes on stdout "
                           "and was killed", code="worker.output-too-large",
                           hint="a plan is far smaller; check the worker")
    if result.killed_reason != "stopped" and result.returncode != 0:
        if choice.builtin:
            _raise_plan_bound(result.stderr_tail, where)
        raise WorkerFailed(f"worker {choice.name} exited with status {result.returncode}", code="worker.exit",
                           hint=where, data={"returncode": result.returncode})
    extract_start = time.perf_counter()
    extracted = extract_plan(result.stdout, limits.with_changes(builtin=choice.builtin))
    extract_ms = round((time.perf_counter() - extract_start) * 1000, 3)
    if write is None:
        from ..fsutil import write_artifact

        write = write_artifact
    write(run_dir, "plan.json", extracted.plan_bytes)  # the exact bytes validated and receipted
    return WorkerOutcome(extracted, protections, result.duration_s, extract_ms)


# The built-in planner's own refusal to print past the plan bound: numbers and the key only, so its
# message is shown as it is, under its own code.
_PLAN_BOUND = re.compile(rb"^memfold planner: (the built-in plan cannot fit [\w ().,;:-]+) \[planner\.plan-bound\]$",
                         re.MULTILINE)


def _raise_plan_bound(stderr_tail: bytes, where: str) -> None:
    match = _PLAN_BOUND.search(stderr_tail)
    if match:
        raise WorkerFailed(match.group(1).decode("ascii"), code="planner.plan-bound",
                           hint="raise limits.plan_bytes in config.yaml; " + where)
