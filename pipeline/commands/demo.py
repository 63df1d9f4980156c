"""``memfold demo``: the main job end to end on built-in sample data, in a throwaway directory."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import typer

from ._app import app

SAMPLES: list[tuple[str, list[str]]] = [
    ("project_deploy-target", ["-d", "production deploys go through the blue/green script in ops/deploy.sh",
                               "--visibility", "safe", "-b", "Run ops/deploy.sh --blue-green; never deploy by hand."]),
    ("project_deploy-howto", ["-d", "deploy to production with the blue/green script ops/deploy.sh",
                              "--visibility", "safe",
                              "-b", "Run ops/deploy.sh --blue-green; never deploy by hand.\n"
                                    "Push the release tag before deploying."]),
    ("feedback_use-real-db", ["-d", "integration tests hit a real Postgres, never mocks", "-t", "feedback",
                              "--visibility", "safe", "-b", "Mocked databases hid a migration bug once."]),
    ("user_staging-token", ["-d", "where the staging token lives", "-t", "user",
                            "-b", "The staging token is in the team vault under staging/api."]),
    ("project_code-freeze", ["-d", "code freeze for the spring release", "--visibility", "safe",
                             "--expires", "2026-04-30", "-b", "No merges to main until the release is cut."]),
    ("project_ports", ["-d", "the dev server listens on port 8080", "--visibility", "safe",
                       "-b", "Start it with `make dev`; it serves http://localhost:8080."]),
]


Run = Callable[[list[str]], int]


def _step(main: Run, title: str, home: Path, project: Path, *args: str, secret: str = "") -> int:
    shown = " ".join(args).replace(secret, "<a GitHub token>") if secret else " ".join(args)
    sys.stdout.write(f"\n$ memfold {shown}\n")
    sys.stdout.flush()
    code = main(["--home", str(home), "--project", str(project), *args])
    sys.stdout.flush()
    sys.stderr.flush()
    sys.stdout.write(f"[{title}: exit {code}]\n")
    return code


@app.command()
def demo(ctx: typer.Context,
         keep: bool = typer.Option(False, "--keep", help="keep the sample home and project afterwards")) -> int:
    """Run the main job on sample data in a temporary home and project, and verify the result."""
    # The shell hands in its own entry point (as the context object): each step is a whole command.
    run: Run = ctx.obj
    base = Path(tempfile.mkdtemp(prefix="memfold-demo-"))
    home, project = base / "home", base / "project"
    project.mkdir()
    (project / "ops").mkdir()
    (project / "ops" / "deploy.sh").write_text("#!/bin/sh\necho deploy\n")
    from ..mirror.gitinfo import run_git

    run_git(("init", "-q", str(project)))
    sys.stdout.write(f"memfold demo: sample project {project}, memfold home {home}\n")
    failures = 0
    failures += _step(run, "init", home, project, "init") != 0
    for name, args in SAMPLES:
        failures += _step(run, "add", home, project, "add", name, *args) != 0
    token = "ghp_" + "Zx81" * 9
    refused = _step(run, "a secret in a safe memory is refused", home, project, "add", "project_ci-token",
                    "-d", "the CI token", "--visibility", "safe", "-b", f"token: {token}", secret=token)
    failures += refused != 1
    failures += _step(run, "near-duplicate refused", home, project, "add", "project_deploy",
                      "-d", "Production deploys go through the blue/green script in ops/deploy.sh.") != 1
    failures += _step(run, "update", home, project, "update", "project_ports", "-d",
                      "the dev server listens on port 8081", "-b", "Start it with `make dev` on port 8081.") != 0
    failures += _step(run, "list", home, project, "list") != 0
    failures += _step(run, "consolidate with the built-in worker (dry run)", home, project,
                      "consolidate", "--dry-run") != 0
    failures += _step(run, "consolidate with the built-in worker", home, project, "consolidate") != 0
    failures += _step(run, "a second consolidation is a verified no-op", home, project, "consolidate") != 0
    failures += _step(run, "list", home, project, "list") != 0
    failures += _step(run, "status", home, project, "status") != 0
    failures += _step(run, "verify the newest receipt", home, project, "verify") != 0
    failures += _step(run, "audit the receipt chain", home, project, "audit") != 0
    mirror = project / ".memory"
    # The two deploy notes are duplicates: they merge into the newer one, which is the second unless both
    # adds fell within the same second of the clock (then the names decide). Either way one is left,
    # holding the facts of both.
    left = [name for name in ("project_deploy-target.md", "project_deploy-howto.md") if (mirror / name).exists()]
    merged = (mirror / left[0]).read_text(encoding="utf-8") if len(left) == 1 else ""
    kept = all(fact in merged for fact in ("never deploy by hand", "Push the release tag before deploying."))
    sys.stdout.write(f"\nthe two deploy notes merged into {' and '.join(left) or 'nothing'}, which kept the facts "
                     f"of both: {'yes' if kept else 'NO'}\n")
    failures += not kept
    failures += (mirror / "user_staging-token.md").exists() or (mirror / "project_code-freeze.md").exists()
    sys.stdout.write(f"\nmirror {mirror} (tracked by git, shared with the team):\n")
    for entry in sorted(os.listdir(mirror)):
        sys.stdout.write(f"  {entry}\n")
    sys.stdout.write((mirror / "MEMORY.md").read_text(encoding="utf-8"))
    if keep:
        sys.stdout.write(f"\nkept: {base}\n")
    else:
        shutil.rmtree(base, ignore_errors=True)
    sys.stdout.write(f"\ndemo {'passed' if not failures else f'FAILED ({failures} unexpected results)'}\n")
    return 0 if not failures else 1
