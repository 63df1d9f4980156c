"""bench.memtool: the memory tool's create and str_replace against the SDK's plain folder handler, on the same files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from pipeline.bench import memtool
from pipeline.bench.common import Plan, row_adder
from pipeline.bench.synth import write_store

pytestmark = pytest.mark.integration


def test_the_driver_times_both_handlers_on_the_same_files_and_memfold_receipts_each_write(tmp_path: Path) -> None:
    store = write_store(tmp_path / "s", 30)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    found = memtool.samples(store.home, store.project, store.layout.harness, tmp_path, env, 2)
    assert set(found) == set(memtool.SERIES)
    assert all(len(samples) == 2 and min(samples) > 0 for samples in found.values())
    receipts = sorted((store.layout.project_home / "receipts").glob("*.json"))
    commands = [json.loads(p.read_bytes())["command"] for p in receipts]
    assert commands == ["memory-tool create", "memory-tool str_replace"] * 3  # the warm-up pair, then two
    probe = (store.layout.harness / "bench_probe_memfold-1.md").read_bytes()
    assert probe.endswith(b"# Probe memfold-1\nDeploys wait for the Tuesday release window.\nOwner: the platform team.\n")
    assert not (tmp_path / "plain-memory").exists(), "the plain copy is removed after the samples"


def test_the_rows_are_only_for_the_sizes_of_the_issue_and_left_out_without_the_sdk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    said: list[str] = []
    plan = Plan(sizes=(30,), reps=1, consolidate_reps=0, workdir=tmp_path, progress=said.append)
    memtool.bench_memory_tool(plan, 30, None, {}, row_adder(plan, 30), 1)
    assert plan.rows == [] and said == []
    monkeypatch.setattr(memtool, "available", lambda: False)
    memtool.bench_memory_tool(plan, 200, None, {}, row_adder(plan, 200), 1)
    assert plan.rows == [] and said == ["n=200: memory tool rows left out: the anthropic SDK is not installed"]


def test_the_rows_run_alone_with_their_floors() -> None:
    proc = subprocess.run([sys.executable, "-m", "pipeline.bench.memtool", "rows", "--reps", "1", "200"],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line for line in proc.stdout.splitlines() if line.startswith("memtool")]
    assert [line[:22].strip() for line in rows] == ["memtool create", "memtool str_replace"]
    for line, floor in zip(rows, ("plain create", "plain str_replace"), strict=True):
        rest = line[22:].split()
        at = rest.index("plain")
        assert rest[at + 1] == floor.split()[1] and float(rest[at + 2]) > 0 and float(rest[at + 3]) > 0
    assert proc.stdout.splitlines()[-1].startswith("machine: ")
