"""The planner as a worker: determinism, the run-dir entry point, candidates, grounding safety, scale."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_planner_support import (
    REPO,
    apply_plan,
    check_plan,
    load_projects,
    manifest_for,
    memory_bytes,
    plan_store,
    store_of,
    write_repo,
)

from pipeline.planner.grounding import Tree, extract, ground
from pipeline.planner.plan import build_plan
from pipeline.planner.planjson import PRINT_LINE_BUDGET, plan_json
from pipeline.store.jsontext import dump_json
from pipeline.store.memory import Memory, render_memory


def _shop() -> dict[str, Any]:
    return next(p for p in load_projects() if p["id"] == "shop-api")


def test_the_same_inputs_give_a_byte_identical_plan(tmp_path: Path) -> None:
    project = _shop()
    store = store_of(project)
    repo = write_repo(tmp_path / "repo", project["files"])
    assert dump_json(plan_store(store, repo)) == dump_json(plan_store(dict(reversed(list(store.items()))), repo))


def test_an_empty_scope_without_candidates_is_a_valid_no_op(tmp_path: Path) -> None:
    plan = plan_store({}, tmp_path)
    assert check_plan(plan, [], {}, tmp_path) == []
    assert all(plan[k] == [] for k in ("selected", "inventory", "clusters", "staleness", "grounding", "report",
                                       "operations"))


def _run_dir(tmp_path: Path, store: dict[str, bytes], files: dict[str, str],
             candidates: list[dict[str, str]]) -> Path:
    harness, public, run = tmp_path / "harness", tmp_path / "public", tmp_path / "run"
    for d in (harness, public, run):
        d.mkdir()
    for name, data in store.items():
        (harness / name).write_bytes(data)
    project = write_repo(tmp_path / "project", files)
    manifest = {**manifest_for(sorted(store)), "contextMode": "transcript", "snapshotPath": "snapshot.json",
                "roots": {"harness": str(harness), "public": str(public), "project": str(project),
                          "runDir": str(run)}, "sourceHashes": {"harness": {}, "public": {}},
                "worker": {"name": "builtin"}, "sandbox": {}}
    (run / "manifest.json").write_bytes(dump_json(manifest))
    (run / "snapshot.json").write_bytes(dump_json({"kind": "memfold-context-snapshot", "candidates": candidates}))
    for d in (harness, public, run):
        for f in d.iterdir():
            f.chmod(stat.S_IRUSR)
        d.chmod(stat.S_IRUSR | stat.S_IXUSR)
    return run


@pytest.mark.integration
def test_the_module_prints_one_plan_for_a_read_only_run_dir(tmp_path: Path) -> None:
    project = _shop()
    store = store_of(project)
    run = _run_dir(tmp_path, store, project["files"], [{"body": "Staging deploys use ops/deploy.sh --env staging",
                                                        "origin": "remember-line"}])
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    proc = subprocess.run([sys.executable, "-m", "pipeline.planner", "--run-dir", str(run)], cwd=scratch,
                          capture_output=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    plan = json.loads(proc.stdout)
    assert check_plan(plan, sorted(store), store, tmp_path / "project") == []
    assert proc.stdout == plan_json(plan, PRINT_LINE_BUDGET)
    assert any(op["kind"] == "create" for op in plan["operations"])


@pytest.mark.integration
def test_the_planner_process_imports_no_heavy_module(tmp_path: Path) -> None:
    store = {f"project_note-{i}.md": render_memory(Memory(
        name=f"project_note-{i}", description=f"Deploy note {i} about the staging cache", type="project",
        created="2026-01-02",
        body=f"- Run `make deploy` before tagging release {i}.\n- The cache lives in ops/cache.sh.\n",
    )) for i in range(12)}
    run = _run_dir(tmp_path, store, {"ops/cache.sh": "echo cache\n"}, [])
    code = ("import io, json, sys\n"
            "from pipeline.planner.run import main\n"
            f"assert main(['--run-dir', {str(run)!r}], stdout=io.BytesIO()) == 0\n"
            "print(json.dumps(sorted(sys.modules)))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    loaded = set(json.loads(proc.stdout))
    assert "pipeline.planner.plan" in loaded
    heavy = {"argparse", "yaml", "pydantic", "jsonschema", "typer", "portalocker", "re2", "datetime",
             "dataclasses", "inspect", "hashlib"}
    assert sorted(loaded & heavy) == []


def test_the_module_fails_with_a_message_when_the_manifest_is_missing(tmp_path: Path) -> None:
    from io import BytesIO, StringIO

    from pipeline.planner.run import main

    out, err = BytesIO(), StringIO()
    assert main(["--run-dir", str(tmp_path)], stdout=out, stderr=err) == 1
    assert out.getvalue() == b"" and "manifest.json" in err.getvalue()


def test_candidates_become_creates_or_updates_and_a_second_run_is_a_no_op(tmp_path: Path) -> None:
    project = _shop()
    store = store_of(project)
    repo = write_repo(tmp_path / "repo", project["files"])
    candidates = [
        {"body": "Feature branches are squash-merged.", "type": "feedback", "origin": "remember-line"},
        {"body": "Feature branches are squash-merged!", "type": "feedback", "origin": "tool-call"},
        {"description": "Run make test before pushing any branch", "type": "feedback", "origin": "record",
         "body": "Always run `make test` before pushing; CI is slow and fails on lint.\nAlso run it after rebases."},
        {"name": "Team glossary", "body": "SKU means stock keeping unit.", "visibility": "safe", "type": "reference",
         "origin": "candidates-array"},
        {"body": "remind me on 2026-01-02 to renew the token", "origin": "remember-line"},
    ]
    plan = plan_store(store, repo, candidates=candidates)
    assert check_plan(plan, sorted(store), store, repo) == []
    creates = {op["name"]: op for op in plan["operations"] if op["kind"] == "create"}
    assert sorted(creates) == ["feedback_feature-branches-are-squash-merged.md", "reference_team-glossary.md"]
    assert creates["reference_team-glossary.md"]["classification"] == "safe"
    assert creates["feedback_feature-branches-are-squash-merged.md"]["classification"] == "private"
    rewritten = [op for op in plan["operations"] if op["kind"] == "rewrite" and "after rebases" in op["content"]]
    assert len(rewritten) == 1
    assert any("one-shot" in n for n in plan["notes"])
    after = apply_plan(store, plan)
    assert plan_store(after, repo, candidates=candidates)["operations"] == []


def test_a_candidate_duplicating_a_memory_outside_the_scope_is_skipped_with_a_note(tmp_path: Path) -> None:
    store = store_of(_shop())
    plan = plan_store(store, tmp_path, selected=[], candidates=[
        {"body": "Always run `make test` before pushing; CI is slow and fails on lint.\nAnd after rebases.",
         "description": "Run make test before pushing any branch", "type": "feedback", "origin": "record"}])
    assert plan["operations"] == []
    assert any("outside the selected scope" in n for n in plan["notes"])


def test_create_names_avoid_names_in_the_mirror(tmp_path: Path) -> None:
    cand = [{"body": "Feature branches are squash-merged.", "type": "feedback", "origin": "remember-line"}]
    plan = plan_store({}, tmp_path, candidates=cand, mirror=("FEEDBACK_feature-branches-are-squash-merged.md",))
    assert [op["name"] for op in plan["operations"]] == ["feedback_feature-branches-are-squash-merged-2.md"]


def test_grounding_never_looks_outside_the_project_root(tmp_path: Path) -> None:
    outside = write_repo(tmp_path / "outside", {"secret.py": "x = 1\n"})
    repo = write_repo(tmp_path / "repo", {"src/app/main.py": "def create_app():\n    pass\n"})
    (repo / "src" / "escape.py").symlink_to(outside / "secret.py")
    memory = Memory(name="m", description="entry point is src/app/main.py", body=(
        "See /etc/passwd, ../outside/secret.py, ~/notes.md and src/escape.py.\n"
        "The factory is `create_app` and `missing_helper()`.\nDeploy is blue/green via https://x.io/a/b.py\n"))
    entry = ground("project_m.md", memory, Tree(repo))
    paths = {(o["path"], o["status"], o.get("note", "")) for o in entry["observations"]}
    assert ("src/app/main.py", "found", "") in paths
    assert ("src/escape.py", "missing", "") in paths
    assert all(not p.startswith(("/", "~")) and ".." not in p for p, _, _ in paths)
    assert any("create_app" in note and status == "found" for _, status, note in paths)
    assert any("missing_helper" in note and status == "missing" for _, status, note in paths)
    assert entry["status"] == "partially-grounded"


def test_grounding_caps_observations_and_says_when_nothing_is_claimed(tmp_path: Path) -> None:
    body = "\n".join(f"- src/mod{i}.py" for i in range(50))
    assert len(ground("a.md", Memory(name="a", description="d", body=body), Tree(tmp_path))["observations"]) == 20
    none = ground("b.md", Memory(name="b", description="prefers short answers", body="no preamble\n"), None)
    assert none["status"] == "not-applicable" and none["reason"]
    assert extract(Memory(name="c", description="CI/CD and blue/green", body="and/or")).paths == ()


def test_a_selected_name_missing_from_the_store_is_an_input_error(tmp_path: Path) -> None:
    from pipeline.planner.plan import PlanInputError

    with pytest.raises(PlanInputError):
        build_plan({**manifest_for(["project_x.md"])}, {}, {}, tmp_path)


def test_duplicates_of_two_visibilities_stay_apart_when_the_private_one_says_more(tmp_path: Path) -> None:
    a = memory_bytes({"n": "project_cache.md", "d": "product pages are cached in redis for five minutes",
                      "b": "Cache keys start with shop product.\n", "v": "safe", "m": "2026-05-01T00:00:00Z"})
    b = memory_bytes({"n": "project_page-cache.md", "d": "Product pages are cached in redis for five minutes.",
                      "b": "Invalidate on price change.\n", "m": "2026-01-01T00:00:00Z", "c": "2025-12-01"})
    store = {"project_cache.md": a, "project_page-cache.md": b}
    plan = plan_store(store, tmp_path)
    # Merging would either publish the private line or hide the safe memory in the private store.
    assert plan["operations"] == []
    assert apply_plan(store, plan) == store


def test_a_private_copy_of_a_safe_memory_merges_into_it_and_the_safe_one_stays_safe(tmp_path: Path) -> None:
    a = memory_bytes({"n": "project_cache.md", "d": "product pages are cached in redis for five minutes",
                      "b": "Cache keys start with shop product.\n", "v": "safe", "m": "2026-01-01T00:00:00Z"})
    b = memory_bytes({"n": "project_page-cache.md", "d": "Product pages are cached in redis for five minutes.",
                      "b": "- cache keys start with shop product\n", "m": "2026-05-01T00:00:00Z"})
    store = {"project_cache.md": a, "project_page-cache.md": b}
    plan = plan_store(store, tmp_path)
    [delete] = [op for op in plan["operations"] if op["kind"] == "delete"]
    assert delete["name"] == "project_page-cache.md" and delete["into"] == "project_cache.md"
    after = apply_plan(store, plan)
    assert after["project_cache.md"] == a and "project_page-cache.md" not in after


def test_the_planner_as_a_library_leaves_the_callers_collector_on(tmp_path: Path) -> None:
    import gc

    from pipeline.planner.run import main

    assert main(["--run-dir", str(tmp_path / "missing")]) != 0  # no manifest: an error exit, no plan
    assert gc.isenabled()


@pytest.mark.integration
def test_the_planner_plans_without_site_packages_and_imports_only_the_standard_library_and_itself(
        tmp_path: Path) -> None:
    # The launcher runs it in-process as it started (-S): no site directory is on its import path.
    store = {f"project_note-{i}.md": render_memory(Memory(
        name=f"project_note-{i}", description=f"Deploy note {i} about the staging cache", type="project",
        created="2026-01-02", body=f"- Run `make deploy` before tagging release {i}.\n",
    )) for i in range(6)}
    run = _run_dir(tmp_path, store, {"ops/cache.sh": "echo cache\n"}, [])
    code = ("import io, json, sys\n"
            "assert not any('site-packages' in p for p in sys.path), sys.path\n"
            "from pipeline.planner.run import main\n"
            f"out = io.BytesIO()\nassert main(['--run-dir', {str(run)!r}], stdout=out) == 0\n"
            "print(json.dumps([len(out.getvalue()), sorted(sys.modules)]))\n")
    proc = subprocess.run([sys.executable, "-S", "-P", "-c", code], cwd=tmp_path, capture_output=True,
                          env={"PYTHONPATH": str(REPO), "LC_ALL": "C.UTF-8"}, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    size, loaded = json.loads(proc.stdout)
    assert size > 0 and "pipeline.planner.plan" in loaded
    outside = sorted(m for m in loaded if m.split(".")[0] not in sys.stdlib_module_names | {"pipeline", "__main__"})
    assert outside == []


def _sandboxed_planner(tmp_path: Path, run: Path, *, in_process: bool, argv: tuple[str, ...] | None = None) -> Any:
    from pipeline.worker.run import WorkerSpec, build_env, run_worker

    scratch = tmp_path / f"scratch-{in_process}"
    scratch.mkdir()
    env = {**build_env(os.environ, [], scratch), "PYTHONPATH": str(REPO)}
    spec = WorkerSpec(argv=argv or (sys.executable, "-m", "pipeline.planner", "--run-dir", str(run)), cwd=scratch,
                      env=env, timeout=60, read_paths=(run, run.parent / "harness", run.parent / "public",
                                                      run.parent / "project", REPO), in_process=in_process)
    return run_worker(spec, stdout_path=tmp_path / f"out-{in_process}", stderr_path=tmp_path / f"err-{in_process}")


@pytest.mark.integration
def test_the_launcher_runs_the_built_in_planner_itself_with_the_same_plan_and_protections(tmp_path: Path) -> None:
    project = _shop()
    store = store_of(project)
    run = _run_dir(tmp_path, store, project["files"], [])
    forked = _sandboxed_planner(tmp_path, run, in_process=True)
    execed = _sandboxed_planner(tmp_path, run, in_process=False)
    assert (forked.returncode, execed.returncode) == (0, 0), forked.stderr_tail + execed.stderr_tail
    assert forked.stdout == execed.stdout
    assert check_plan(json.loads(forked.stdout), sorted(store), store, tmp_path / "project") == []
    assert (forked.protections.pop("worker_start"), execed.protections.pop("worker_start")) == ("in-process", "exec")
    assert forked.protections == execed.protections
    assert forked.protections["landlock"]["fs"] is True and forked.protections["seccomp"]["installed"] is True


@pytest.mark.integration
def test_an_in_process_planner_that_fails_exits_with_its_message(tmp_path: Path) -> None:
    empty = tmp_path / "run"
    for d in ("run", "harness", "public", "project"):
        (tmp_path / d).mkdir()
    result = _sandboxed_planner(tmp_path, empty, in_process=True)
    assert result.returncode == 1 and result.stdout == b""
    assert b"memfold planner:" in result.stderr_tail and b"manifest.json" in result.stderr_tail


@pytest.mark.integration
def test_only_the_built_in_planner_runs_in_process(tmp_path: Path) -> None:
    from pipeline.errors import WorkerFailed

    run = tmp_path / "run"
    for d in ("run", "harness", "public", "project"):
        (tmp_path / d).mkdir()
    marker = tmp_path / "scratch-True" / "ran"
    with pytest.raises(WorkerFailed) as caught:
        _sandboxed_planner(tmp_path, run, in_process=True, argv=("/bin/sh", "-c", f"touch {marker}"))
    assert caught.value.code == "worker.spawn"
    assert not marker.exists()


def test_past_half_the_plan_bound_the_planner_prints_the_compact_shape_and_below_it_the_full_one(
        tmp_path: Path) -> None:
    from pipeline.planner.planjson import expanded
    from pipeline.planner.run import plan_run

    project = _shop()
    store = store_of(project)
    run = _run_dir(tmp_path, store, project["files"], [])
    manifest_path = run / "manifest.json"
    run.chmod(0o700)
    manifest_path.chmod(0o600)
    manifest = json.loads(manifest_path.read_bytes())
    printed: dict[str, bytes] = {}
    for bound in (1 << 30, 0):
        # Past half the bound, yet the compact shape fits it: the whole plan, only shaped otherwise.
        bound = bound or len(printed[str(1 << 30)]) - 1
        manifest["limits"] = {**manifest.get("limits", {}), "maxPlanBytes": bound}
        manifest_path.write_bytes(dump_json(manifest))
        printed[str(bound)] = plan_run(run)
    full, compact = (json.loads(data) for data in printed.values())
    assert "defaults" not in full and "defaults" in compact

    def items(plan: dict[str, Any]) -> dict[str, Any]:
        return {k: sorted(json.dumps(i, sort_keys=True) for i in v) if isinstance(v, list) else v for k, v in plan.items()}

    # A delete's reason is said once, in staleness: the compact shape leaves out only that repeat.
    said = {i["name"]: f"{i['verdict']}: {i['reason']}" for i in full["staleness"]}
    repeats = [op for op in full["operations"] if op["kind"] == "delete" and op["reason"] == said[op["name"]]]
    assert repeats
    lean = {**full, "operations": [{k: v for k, v in op.items() if not (op in repeats and k == "reason")}
                                   for op in full["operations"]]}
    assert items(expanded(compact, full["selected"])) == items(lean)
