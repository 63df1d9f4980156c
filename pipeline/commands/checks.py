"""The validate command: run the plan validator alone on a run dir, or on plan and manifest files."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from ..errors import MemfoldError, UsageError
from ._app import JsonOpt, app, services, want_json

# plan.json is stored indented, so it may be larger than the worker's compact plan bound.
MAX_JSON_BYTES = 64 << 20
MAX_JSON_DEPTH = 128


def _load(path: Path, what: str) -> Any:
    from ..context.boundedjson import loads_bounded
    from ..fsutil import read_bounded

    try:
        data = read_bounded(path, MAX_JSON_BYTES)
    except FileNotFoundError:
        raise UsageError(f"{what} file {path} does not exist", code="usage.missing-file") from None
    except (OSError, MemfoldError) as exc:
        raise UsageError(f"{what} file {path} cannot be read ({getattr(exc, 'message', exc)})",
                         code="usage.unreadable") from None
    try:
        return loads_bounded(data.decode("utf-8"), MAX_JSON_DEPTH)
    except (UnicodeDecodeError, ValueError):
        raise UsageError(f"{what} file {path} is not valid JSON", code="usage.json") from None


def _paths(run: str | None, plan: Path | None, manifest: Path | None, layout: Any) -> tuple[Path, Path]:
    if (run is None) == (plan is None):
        raise UsageError("give either --run RUN_ID or --plan FILE --manifest FILE", code="usage.validate")
    if run is not None:
        if manifest is not None:
            raise UsageError("--manifest goes with --plan; a run has its own manifest.json", code="usage.validate")
        from ..apply.runs import find_run

        run_dir = find_run(layout.runs, run)
        return run_dir / "plan.json", run_dir / "manifest.json"
    if manifest is None:
        raise UsageError("--plan needs --manifest FILE (the run manifest the plan answers)", code="usage.validate")
    assert plan is not None
    return plan, manifest


def _summary(result: Any) -> str:
    lines = [f"plan {'valid' if result.ok else 'INVALID'}"]
    lines += [f"  ok    {check}" for check in result.checks]
    lines += [f"  FAIL  [{e.code}] {e.path}: {e.message}" for e in result.errors]
    return "\n".join(lines) + "\n"


@app.command()
def validate(
    run: str = typer.Option(None, "--run", help="check plan.json against manifest.json of this run"),
    plan: Path = typer.Option(None, "--plan", help="a plan file (with --manifest)"),
    manifest: Path = typer.Option(None, "--manifest", help="the run manifest the plan answers"),
    repo: Path = typer.Option(None, "--repo", help="repository root for grounding paths (default: the project root)"),
    json_out: bool = JsonOpt,
) -> int:
    """Run the plan validator alone and print its JSON result (exit 0 valid, 1 invalid)."""
    from ..state import read_pre
    from ..validation.plan import validate_plan

    svc = services()
    plan_path, manifest_path = _paths(run, plan, manifest, svc.layout)
    plan_obj = _load(plan_path, "plan")
    manifest_obj = _load(manifest_path, "manifest")
    if not isinstance(manifest_obj, dict):
        raise UsageError(f"manifest file {manifest_path} is not a JSON object", code="manifest.invalid")
    repo_root = repo if repo is not None else svc.layout.project_root
    if not Path(repo_root).is_dir():
        raise UsageError(f"repository {repo_root} is not a directory", code="usage.repo")
    result = validate_plan(
        plan_obj, manifest_obj, pre=read_pre(svc.layout, svc.limits), repo_root=Path(repo_root),
        ruleset=svc.ruleset, allow_publish=manifest_obj.get("allowPublish") is True, limits=svc.limits,
    )
    sys.stdout.write(json.dumps(result.as_dict(), indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    if not want_json(json_out):
        from ..safetext import visible

        sys.stderr.write(visible(_summary(result)))
    return 0 if result.ok else 1
