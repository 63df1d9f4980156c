"""Run the chosen worker in its sandbox and turn its output into exactly one extracted plan."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import WorkerFailed
from .extract import Extracted, ExtractLimits, extract_plan
from .paths import Layout
from .task import WorkerChoice

PACKAGE_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class WorkerOutcome:
    extracted: Extracted
    protections: dict[str, Any]
    duration_s: float
    extract_ms: float


def requested_protections(choice: WorkerChoice, unsafe_no_sandbox: bool) -> dict[str, Any]:
    """What the manifest promises before the worker starts (the receipt records what was enforced)."""
    from .sandbox import probe
    from .worker import sandbox_description

    if unsafe_no_sandbox:
        return {"enforced": False, "filesystem": "none", "reason": "--unsafe-no-sandbox"}
    described = sandbox_description(probe())
    described["network"]["requested"] = "allowed" if choice.network else "denied"
    return described


def run_plan_worker(
    choice: WorkerChoice, *, run_dir: Path, layout: Layout, parent_env: Mapping[str, str],
    unsafe_no_sandbox: bool, limits: ExtractLimits,
) -> WorkerOutcome:
    from .worker import WorkerSpec, build_env, run_worker, sandbox_description

    scratch = run_dir / "scratch"
    env = build_env(parent_env, choice.env, scratch)
    if choice.builtin:
        env["PYTHONPATH"] = str(PACKAGE_ROOT)
    spec = WorkerSpec(
        argv=choice.argv, cwd=scratch, env=env, timeout=choice.timeout, network=choice.network,
        sandbox=not unsafe_no_sandbox, require_fs_sandbox=not choice.builtin and not unsafe_no_sandbox,
        read_paths=tuple(p for p in (run_dir, layout.harness, layout.mirror, layout.project_root, PACKAGE_ROOT) if p),
        write_paths=(scratch,),
    )
    result = run_worker(spec, stdout_path=run_dir / "stdout.jsonl", stderr_path=run_dir / "stderr.txt",
                        stdout_limit=limits.max_stdout_bytes)
    protections = sandbox_description(result.protections) if result.protections else {"enforced": False}
    where = f"see {run_dir / 'stderr.txt'}"
    if result.timed_out:
        raise WorkerFailed(f"worker {choice.name} timed out after {choice.timeout:g} s and was killed",
                           code="worker.timeout", hint=f"raise its timeout in the config; {where}")
    if result.over_bound:
        raise WorkerFailed(f"worker {choice.name} printed more than {limits.max_stdout_bytes} bytes",
                           code="worker.output-too-large", hint="a plan is far smaller; check the worker")
    if result.returncode != 0:
        raise WorkerFailed(f"worker {choice.name} exited with status {result.returncode}", code="worker.exit",
                           hint=where, data={"returncode": result.returncode})
    started = time.perf_counter()
    extracted = extract_plan(result.stdout, limits)
    return WorkerOutcome(extracted, protections, result.duration_s, round((time.perf_counter() - started) * 1000, 3))
