"""Concurrency: many writers and two consolidations at once; no lost acknowledged write, no torn file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, Env

from pipeline.store.memory import parse_memory

# One writer: a process of its own that calls the CLI entry point for each operation and logs
# what it was told (exit code), so the test can replay exactly the acknowledged writes.
WRITER = r"""
import io, json, random, sys
from contextlib import redirect_stderr, redirect_stdout
sys.path.insert(0, {repo!r})
from pipeline.cli import main
home, project, writer, count, log = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
rng = random.Random(writer)
names = [f"project_w{{writer}}-n{{k}}" for k in range(4)]
with open(log, "w") as out:
    for step in range(count):
        name = rng.choice(names)
        op = rng.choice(["add", "add", "update", "forget"])
        desc = f"writer {{writer}} step {{step}} {{rng.choice(['alpha', 'bravo', 'delta', 'sierra'])}} {{name}}"
        args = {{"add": ["add", name, "-d", desc, "-b", f"body {{step}} of {{name}}"],
                "update": ["update", name, "-d", desc],
                "forget": ["forget", name]}}[op]
        err = io.StringIO()
        with redirect_stdout(io.StringIO()), redirect_stderr(err):
            code = main(["--home", home, "--project", project, *args])
        out.write(json.dumps({{"op": op, "name": name + ".md", "description": desc, "code": code,
                              "err": err.getvalue()[-300:]}}) + "\n")
        out.flush()
"""

CONSOLIDATOR = r"""
import io, json, sys, time
from contextlib import redirect_stderr, redirect_stdout
sys.path.insert(0, {repo!r})
from pipeline.cli import main
home, project, rounds, log = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
# A consolidation never waits for the lock (exit 3 at once); like a host, retry until `rounds` succeed.
done, attempts = 0, 0
with open(log, "w") as out:
    while done < rounds and attempts < 400:
        attempts += 1
        err = io.StringIO()
        with redirect_stdout(io.StringIO()), redirect_stderr(err):
            code = main(["--home", home, "--project", project, "consolidate", "--no-context"])
        out.write(json.dumps({{"code": code, "err": err.getvalue()[-300:]}}) + "\n")
        out.flush()
        done += code == 0
        time.sleep(0.01 if code else 0.3)
"""


def _logs(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def hammer(env: Env, tmp_path: Path, *, writers: int, ops: int, consolidators: int, rounds: int) -> Counter[str]:
    env.home.mkdir(parents=True, exist_ok=True)
    (env.home / "config.yaml").write_text("lock: {timeout: 120}\nruns: {keep: 5}\n")
    assert env.run("init").code == 0
    writer_py, consolidator_py = tmp_path / "writer.py", tmp_path / "consolidator.py"
    writer_py.write_text(WRITER.format(repo=str(REPO)))
    consolidator_py.write_text(CONSOLIDATOR.format(repo=str(REPO)))
    base = [str(env.home), str(env.project)]
    pyenv = {**os.environ, "PYTHONPATH": str(REPO)}
    started = time.monotonic()
    procs = [subprocess.Popen([sys.executable, str(writer_py), *base, str(w), str(ops), str(tmp_path / f"w{w}.log")],
                              env=pyenv) for w in range(writers)]
    time.sleep(0.5)  # writers are under way; then both consolidators start at once
    procs += [subprocess.Popen([sys.executable, str(consolidator_py), *base, str(rounds), str(tmp_path / f"c{c}.log")],
                               env=pyenv) for c in range(consolidators)]
    for proc in procs:
        assert proc.wait(timeout=600) == 0
    figures: Counter[str] = Counter(seconds=round(time.monotonic() - started))

    for c in range(consolidators):
        for entry in _logs(tmp_path / f"c{c}.log"):
            # Lock contention is the only acceptable failure; exit 3 names the holder.
            assert entry["code"] in (0, 3), entry
            if entry["code"] == 3:
                assert "[lock.held]" in entry["err"], entry
                figures["lock.held naming the holder's run"] += "locked by run" in entry["err"]
            figures[f"consolidations exit {entry['code']}"] += 1

    receipts = [json.loads(p.read_text()) for p in sorted((env.project_home / "receipts").iterdir())]
    merged = {op["name"] for r in receipts if r["command"] == "consolidate" for op in r["operations"]}
    figures["consolidation receipts"] = sum(r["command"] == "consolidate" for r in receipts)
    model: dict[str, str | None] = {}
    for w in range(writers):
        for entry in _logs(tmp_path / f"w{w}.log"):
            figures["operations"] += 1
            figures[f"{entry['op']} exit {entry['code']}"] += 1
            name = entry["name"]
            if entry["code"] == 0:
                model[name] = None if entry["op"] == "forget" else entry["description"]
            elif entry["code"] == 1:
                # Only a name that is (as far as this writer knows) absent, or that a consolidation merged away.
                assert entry["op"] in ("update", "forget") and (model.get(name) is None or name in merged), entry
            else:
                assert entry["code"] == 3 and "[lock.held]" in entry["err"], entry

    on_disk = {p.name: p.read_bytes() for p in env.harness.iterdir() if p.name != "MEMORY.md"}
    for name, data in on_disk.items():
        parse_memory(data, name)  # raises on a torn or half-written file
    for name in os.listdir(env.mirror):
        if name != "MEMORY.md":
            assert (env.mirror / name).read_bytes() == on_disk[name]
            parse_memory((env.mirror / name).read_bytes(), name)
    for name, description in model.items():
        if name in merged:
            figures["acknowledged writes later merged by a receipted plan"] += 1
            continue
        if description is None:
            assert name not in on_disk, f"{name} was forgotten (exit 0) but is back"
        else:
            assert name in on_disk, f"acknowledged write to {name} is lost"
            assert parse_memory(on_disk[name], name).description == description, name
        figures["acknowledged final states checked"] += 1
    audit = env.run("audit", "--json")
    assert audit.code == 0 and audit.json()["drift"] == [], audit.out
    assert not (env.project_home / "pending").exists()
    figures["writers"] = writers
    figures["receipts"] = len(receipts)
    return figures


def _print(title: str, figures: Counter[str]) -> None:
    print(f"\n{title}: " + ", ".join(f"{k}={v}" for k, v in sorted(figures.items())))


@pytest.mark.integration
def test_eight_writers_and_two_consolidations_lose_nothing(env: Env, tmp_path: Path) -> None:
    figures = hammer(env, tmp_path, writers=8, ops=25, consolidators=2, rounds=2)
    _print("concurrency (CI)", figures)
    assert figures["operations"] == 200
    assert figures["consolidation receipts"] >= 1


@pytest.mark.integration
@pytest.mark.stress
def test_sixteen_writers_and_two_consolidations_lose_nothing(env: Env, tmp_path: Path) -> None:
    figures = hammer(env, tmp_path, writers=16, ops=60, consolidators=2, rounds=6)
    _print("concurrency (stress)", figures)
    assert figures["operations"] == 960
