"""Step definitions for features/planner.feature."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from planner_golden import GOLDEN, REPO_ROOT, stores, write_run
from pytest_bdd import given, parsers, scenarios, then, when

from pipeline.planner.bound import deferred_count, lean
from pipeline.planner.plan import build_plan
from pipeline.planner.planjson import PRINT_LINE_BUDGET, compacted, plan_json
from pipeline.planner.run import _json
from pipeline.store.memory import parse_memory

scenarios("planner.feature")

LAZY = {"grounding": ("_LINK", "_URL", "_TICKS", "_PATHISH", "_SYMBOL", "_FILE_TAIL"), "staleness": ("_REMINDER",)}


def _env(seed: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMFOLD_")}
    env["PYTHONHASHSEED"] = seed
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    return env


@given(parsers.parse('the planner\'s run directory for the recorded store "{label}"'))
def run_dir(ctx: dict[str, Any], tmp_path: Path, label: str) -> None:
    ctx["store"] = stores()[label][0]()
    ctx["run"] = write_run(tmp_path / "w", ctx["store"])


@given(parsers.parse('the planner\'s run directory for the recorded store "{label}" with a plan bound of '
                     '{bound:d} bytes'))
def run_dir_bounded(ctx: dict[str, Any], tmp_path: Path, label: str, bound: int) -> None:
    store = stores()[label][0]()
    store.limits = {"maxPlanBytes": bound}
    ctx["store"] = store
    ctx["run"] = write_run(tmp_path / "w", store)


@when(parsers.parse("the built-in planner plans it in two processes with hash seeds {a} and {b}"))
def plan_twice(ctx: dict[str, Any], tmp_path: Path, a: str, b: str) -> None:
    outputs = []
    for seed in (a, b):
        proc = subprocess.run([sys.executable, "-m", "pipeline.planner", "--run-dir", str(ctx["run"])],
                              capture_output=True, env=_env(seed), cwd=tmp_path, check=False)
        assert proc.returncode == 0, proc.stderr.decode()
        outputs.append(proc.stdout)
    ctx["outputs"] = outputs


@when("the planner plans it in a fresh interpreter that reports which patterns it compiled")
def plan_reporting_patterns(ctx: dict[str, Any], tmp_path: Path) -> None:
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from pipeline.planner import grounding, staleness\n"
        "from pipeline.planner.run import plan_run\n"
        f"lazy = {LAZY!r}\n"
        "data = plan_run(Path(sys.argv[1]))\n"
        "mods = {'grounding': grounding, 'staleness': staleness}\n"
        "used = [f'{m}.{n}' for m, names in lazy.items() for n in names if getattr(mods[m], n)._compiled]\n"
        "sys.stdout.write(json.dumps({'used': used, 'plan': data.decode('utf-8')}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, str(ctx["run"])], capture_output=True, env=_env("0"),
                          cwd=tmp_path, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    report = json.loads(proc.stdout)
    ctx["used"] = report["used"]
    ctx["outputs"] = [report["plan"].encode("utf-8")]


@then("both printed the same bytes")
def same_bytes(ctx: dict[str, Any]) -> None:
    first, second = ctx["outputs"]
    assert first and first == second


@then(parsers.parse('their sha256 is the one recorded for "{label}"'))
@then(parsers.parse('the printed plan\'s sha256 is the one recorded for "{label}"'))
def recorded(ctx: dict[str, Any], label: str) -> None:
    record = json.loads(GOLDEN.read_text())[label]
    assert hashlib.sha256(ctx["outputs"][0]).hexdigest() == record["sha256"]
    assert len(ctx["outputs"][0]) == record["bytes"]


@then("the printed plan is the compact shape of the plan the planner builds, byte for byte")
def compact_shape(ctx: dict[str, Any]) -> None:
    run: Path = ctx["run"]
    manifest = _json(run / "manifest.json", 1 << 24)
    harness = Path(manifest["roots"]["harness"])
    memories = {p.name: (p.read_bytes(), parse_memory(p.read_bytes(), p.name)) for p in sorted(harness.iterdir())}
    plan = build_plan(manifest, memories, _json(run / "snapshot.json", 1 << 24), Path(manifest["roots"]["project"]),
                      reserved=list(memories))
    printed = ctx["outputs"][0]
    assert "defaults" in json.loads(printed)
    assert printed == plan_json(compacted(lean(plan)), PRINT_LINE_BUDGET)
    assert len(plan_json(plan, PRINT_LINE_BUDGET)) > manifest["limits"]["maxPlanBytes"] // 2


@then("none of the path, URL, link, backtick and reminder patterns was compiled")
def none_compiled(ctx: dict[str, Any]) -> None:
    assert ctx["used"] == []


@then("the printed plan is extracted as one plan under the default worker output bounds")
def within_default_bounds(ctx: dict[str, Any]) -> None:
    from pipeline.worker.extract import ExtractLimits, extract_plan

    printed = ctx["outputs"][0]
    limits = ExtractLimits()
    assert len(printed) <= limits.max_plan_bytes and printed.count(b"\n") <= limits.max_lines
    assert max(map(len, printed.split(b"\n"))) <= limits.max_line_bytes
    extracted = extract_plan(printed, limits)
    manifest = _json(ctx["run"] / "manifest.json", 1 << 24)
    assert extracted.source == "bare-json" and extracted.plan["selected"] == manifest["selected"]
    assert len(extracted.plan["inventory"]) == len(manifest["selected"])
    assert len(extracted.plan_bytes) <= limits.max_plan_bytes


@then("its notes say how many memories' changes were left for the next run")
def notes_say_left(ctx: dict[str, Any]) -> None:
    plan = json.loads(ctx["outputs"][0])
    left = deferred_count(plan["notes"])
    assert 0 < left < len(plan["selected"])
    assert left == len(plan["selected"]) - len(plan["staleness"])  # the deferred item is the default
