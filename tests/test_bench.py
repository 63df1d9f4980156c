"""memfold bench: the synthetic stores are what the engine would write, and the quick run prints its table."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, Env

from pipeline.bench.common import Row, format_table
from pipeline.bench.synth import Synthetic, build_memories, write_store
from pipeline.state.post import compute_post
from pipeline.state.read import read_pre
from pipeline.store.state import Limits


def test_a_synthetic_store_is_byte_identical_to_what_the_engine_would_derive(tmp_path: Path) -> None:
    store = write_store(tmp_path / "s", 120)
    pre = read_pre(store.layout, Limits(max_files=50_000, index_lines=1000, index_bytes=1 << 20))
    assert len(pre.memories) == 120
    post = compute_post(pre, [])
    assert post.hash_maps() == pre.hash_maps()
    safe = {n for n, m in pre.memories.items() if m.is_safe}
    assert set(pre.public.hashes) == safe | {"MEMORY.md"}


def test_synthetic_memories_hold_duplicates_and_expired_ones_deterministically() -> None:
    memories = build_memories(1000)
    assert memories == build_memories(1000)
    again = [n for n in memories if "_again-" in n]
    expired = [n for n, m in memories.items() if m.expires]
    assert 50 <= len(again) <= 150
    assert 5 <= len(expired) <= 60


def test_the_table_names_every_row_its_floor_and_ratio() -> None:
    rows = [Row("inject", 200, [30.0, 40.0, 50.0], "python", 20.0, "<= 3x floor at 200", True).as_dict()]
    text = format_table({"rows": rows, "scaling": None,
                         "machine": {"cpu": "cpu", "cpus": 2, "platform": "linux", "python": "3.11", "loadavg1": 0.1}})
    line = next(line for line in text.splitlines() if line.startswith("inject"))
    assert "40.0" in line and "30.0" in line and "50.0" in line and "python 20.0" in line and "2.00" in line
    assert line.endswith("ok")


def _result(*rows: Row, scaling: dict[str, object] | None = None) -> dict[str, object]:
    return {"rows": [r.as_dict() for r in rows], "scaling": scaling, "importScaling": None, "machine": {
        "cpu": "cpu", "cpus": 2, "platform": "linux", "python": "3.11", "loadavg1": 0.1}}


def test_missed_lists_each_missed_target_and_nothing_met_or_untargeted() -> None:
    from pipeline.bench.run import missed

    met = Row("inject", 200, [10.0], "python", 8.0, "<= 2.5x floor", True)
    untargeted = Row("list", 200, [50.0], "python", 8.0)
    slow = Row("  apply (in-process)", 2000, [90.0], "staged-writes", 30.0, "<= 1.5x floor", False)
    assert missed(_result(met, untargeted)) == []
    assert missed(_result(met, slow, untargeted)) == ["apply (in-process) at 2000: 90.0 ms, target <= 1.5x floor"]
    scaling = {"consolidate t(20000)/t(2000)": 14.2, "target": "<= 12", "met": False}
    assert missed(_result(met, scaling=scaling)) == ["consolidate t(20000)/t(2000) = 14.2, target <= 12"]


@pytest.mark.parametrize("strict", [False, True])
def test_strict_exits_1_on_a_missed_target_and_names_it(env: Env, monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path, strict: bool) -> None:
    """The real command with the measuring replaced: only --strict turns a miss into exit 1."""
    from pipeline.bench import run

    slow = Row("add (CLI)", 2000, [120.0, 130.0], "add floor", 30.0, "<= 2x floor at 2000", False)
    monkeypatch.setattr(run, "run_bench", lambda plan: _result(slow))
    result = env.run("bench", "--sizes", "2000", "--workdir", str(tmp_path / "w"), *(["--strict"] if strict else []))
    assert "MISSED" in result.out
    if strict:
        assert result.code == 1
        assert "1 bench target(s) missed" in result.err and "add (CLI) at 2000: 125.0 ms" in result.err
    else:
        assert result.code == 0 and result.err == ""
    monkeypatch.setattr(run, "run_bench", lambda plan: _result(Row("inject", 200, [10.0], "python", 8.0, "t", True)))
    assert env.run("bench", "--quick", "--strict", "--workdir", str(tmp_path / "w")).code == 0


@pytest.mark.integration
def test_the_import_rows_are_measured_before_any_store_size_and_printed_last(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sizes free many files, which slows every file ext4 creates next: the import comes first."""
    from pipeline.bench import importing, run

    calls: list[str] = []

    def sized(plan: Any, n: int, env: dict[str, str], python_ms: float) -> None:
        calls.append(f"size {n}")
        plan.rows.append(Row("inject", n, [10.0], "python", python_ms, "", None))

    def imported(plan: Any, env: dict[str, str], python_ms: float, row: Any) -> dict[str, Any]:
        calls.append("import")
        plan.rows.append(row("import claude", 300, [100.0], "python+staged-writes", 50.0, "", None))
        return {"import t(3000)/t(300) = ": 1.0, "exponent": 1.0, "target": "", "met": True}

    monkeypatch.setattr(run, "bench_size", sized)
    monkeypatch.setattr(importing, "bench_import", imported)
    plan = run.Plan(sizes=(200, 2000), reps=1, consolidate_reps=1, workdir=tmp_path / "w", progress=lambda m: None)
    result = run.run_bench(plan)
    assert calls == ["import", "size 200", "size 2000"]
    assert [(r["path"], r["n"]) for r in result["rows"]] == [
        ("floor: import typer", 0), ("inject", 200), ("inject", 2000), ("import claude", 300)]


@pytest.mark.integration
def test_the_time_outside_the_stage_rows_leaves_out_each_stage_once() -> None:
    from pipeline.bench.consolidate import outside_stages

    timings = {"recover": 0.5, "read": 5.0, "worker": 100.0, "commit": 60.0, "commit: apply": 30.0,
               "commit: re-verify": 9.0, "commit: index wait": 10.0}
    assert outside_stages(300.0, timings) == 300.0 - 0.5 - 5.0 - 100.0 - 60.0  # a commit's parts are in its row
    assert outside_stages(100.0, {"worker": 150.0}) == 0.0


def test_bench_quick_completes_and_prints_the_table(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MEMFOLD_NOW", None)
    workdir = tmp_path / "not" / "yet"  # made on demand, like any output dir
    proc = subprocess.run([sys.executable, "-m", "pipeline", "bench", "--quick", "--strict", "--workdir", str(workdir)],
                          capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    lines = proc.stdout.splitlines()
    # --strict: the exit code and stderr agree with the table, whichever targets this machine misses.
    missed = [(line[:22].strip(), int(line[22:29])) for line in lines[2:]
              if line.endswith(" MISSED") and line[22:29].strip().isdigit()]
    assert proc.returncode == (1 if missed or any(line.endswith(") MISSED") for line in lines) else 0), \
        proc.stderr[-3000:]
    for path, n in missed:
        assert f"  {path} at {n}: " in proc.stderr, (path, proc.stderr[-3000:])
    assert lines[0].split()[:5] == ["path", "N", "median", "min", "max"]
    paths = {line[:22].strip() for line in lines[2:]}
    for expected in ("inject", "inject --prompt", "claude hook (start)", "claude hook (prompt)",
                     "session bytes (prompt)", "mcp memory_search", "mcp initialize",
                     "add", "list", "search", "consolidate", "consolidate (CLI)", "consolidate (cold)",
                     "worker", "validation", "commit", "outside stages", "apply (in-process)", "verify", "audit", "import claude",
                     "floor: stat both roots", "floor: receipts+stat"):
        assert expected in paths, (expected, proc.stdout)
    # The write and audit rows each carry the floor they are held to and a numeric ratio to it.
    for expected, floor in (("add (CLI)", "add floor"), ("memory_add (warm)", "memory_add fsync"),
                            ("memory_add (runs kept)", "memory_add fsync"),
                            ("validate (process)", "python+jsonschema"), ("verify (process)", "python+jsonschema"),
                            ("audit (process)", "python+jsonschema"), ("memtool create", "plain create"),
                            ("memtool str_replace", "plain str_replace")):
        line = next((line for line in lines if line[:22].strip() == expected), None)
        assert line is not None, (expected, proc.stdout)
        rest = line[22:].split()
        at = rest.index(floor.split()[0])
        assert float(rest[at + len(floor.split())]) > 0  # the floor's own milliseconds
        assert float(rest[at + len(floor.split()) + 1]) > 0, line  # the ratio
    assert {int(line[22:29]) for line in lines if line.startswith("import claude")} == {300, 1000, 3000}
    assert any(line.startswith("import t(3000)/t(300) = ") and "growth exponent" in line for line in lines)
    assert lines[-1].startswith("machine: ")
    assert list(workdir.iterdir()) == [], "the bench removes its synthetic stores"


def _live_and_pristine(tmp_path: Path) -> tuple[Synthetic, Path]:
    """A synthetic store at ``live`` and a copy of it at ``pristine``, as the bench keeps both."""
    from pipeline.bench.consolidate import PARTS

    store = write_store(tmp_path / "live", 30)
    pristine = tmp_path / "pristine"
    for part in PARTS:
        (pristine / part).parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(("cp", "-a", str(tmp_path / "live" / part), str(pristine / part)), check=True)
    return store, pristine


@pytest.mark.integration
def test_a_swapped_out_store_is_moved_aside_during_the_samples_and_removed_after(tmp_path: Path) -> None:
    """No sample runs right after the bench deleted a whole store in its directory: the previous copy
    is renamed aside (its inodes untouched) and removed once the set of samples is done."""
    from pipeline.bench.consolidate import PARTS, RETIRED, _swap_in, settled_copies

    store, pristine = _live_and_pristine(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    live, retired = tmp_path / "live", tmp_path / RETIRED
    with settled_copies(pristine, live, 2, env) as copies:
        first = {os.stat(copies[0] / part).st_ino for part in PARTS}
        _swap_in(copies[0], live)
        _swap_in(copies[1], live)
        aside = sorted(retired.iterdir())
        assert first <= {os.stat(p).st_ino for p in aside}, "the replaced store was moved aside, not deleted"
        assert any(p.rglob("*.md") for p in aside)
    assert not retired.exists()
    assert store.layout.harness.is_dir()


@pytest.mark.integration
def test_a_settled_copy_keeps_the_state_an_earlier_transaction_left(tmp_path: Path) -> None:
    """The settled consolidate rows run on copies whose state cache vouches for every store file,
    as a user's store after any earlier command, and renaming the copy into place keeps it valid."""
    from pipeline.bench.consolidate import _swap_in, settled_copies
    from pipeline.store.statecache import _OPEN, cache_for

    store, pristine = _live_and_pristine(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with settled_copies(pristine, tmp_path / "live", 2, env) as copies:
        _swap_in(copies[1], tmp_path / "live")
        _OPEN.clear()
        cache = cache_for(store.layout.project_home)
        layout = store.layout
        assert layout.mirror is not None
        files = {root: sorted(p.name for p in folder.iterdir()) for root, folder in
                 ((str(layout.harness), layout.harness), (str(layout.mirror), layout.mirror))}
        assert {root: sorted(cache.roots.get(root, {})) for root in files} == files
        pre = read_pre(layout, Limits())
        assert list(pre.harness.files.loaded()) == [], "no store file is read: the cache vouches for each"
    _OPEN.clear()


@pytest.mark.integration
def test_the_in_process_apply_row_takes_one_sample_per_settled_consolidation(tmp_path: Path) -> None:
    from pipeline.bench.consolidate import bench_apply

    store, pristine = _live_and_pristine(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    samples = bench_apply(store, pristine, tmp_path / "live", env, 1)
    assert len(samples) == 3 and all(ms > 0 for ms in samples)  # three after the untimed first
    receipts = sorted((store.layout.project_home / "receipts").iterdir())
    assert len(receipts) == 1, "each sample consolidated a fresh copy of the pristine store"
    assert not (tmp_path / "settled").exists()


@pytest.mark.integration
def test_the_add_rows_run_alone_with_their_floors() -> None:
    proc = subprocess.run([sys.executable, "-m", "pipeline.bench.writes", "add", "--reps", "1", "30"],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = {line.split()[0] + " " + line.split()[1]: line for line in proc.stdout.splitlines()
            if line.startswith(("add (CLI)", "floor: stat"))}
    assert set(rows) == {"add (CLI)", "floor: stat"}
    assert "add floor" in rows["add (CLI)"]
    assert proc.stdout.splitlines()[-1].startswith("machine: ")


@pytest.mark.parametrize("linked", [True, False])
def test_the_staged_writes_floor_counts_the_runs_receipt_only_where_it_is_a_copy(
    env: Env, monkeypatch: pytest.MonkeyPatch, linked: bool
) -> None:
    import errno
    import json

    from pipeline import fsutil
    from pipeline.bench.common import changed_files
    from pipeline.paths import make_layout

    if not linked:
        def refused(_src: str, _dst: str, **_at: int) -> None:
            raise OSError(errno.EPERM, os.strerror(errno.EPERM))

        monkeypatch.setattr(fsutil.ops, "link", refused)
    assert env.run("add", "project_a", "-d", "a fact", "--visibility", "safe").code == 0
    log = max((env.project_home / "receipts").iterdir())
    run = env.project_home / "runs" / json.loads(log.read_bytes())["runId"]
    counted = changed_files(log, make_layout(env.home, env.project))
    pre_size, post_size = (run / "pre-receipt.json").stat().st_size, (run / "post-receipt.json").stat().st_size
    assert counted["receipts"] == ([log.stat().st_size], 0)
    assert counted["run"] == (([pre_size], 0) if linked else ([post_size, pre_size], 0))


def test_the_staged_writes_floor_writes_in_the_store_directories_and_leaves_them_as_they_were(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A creation costs what the directory's block group makes it cost: the floor stages its files where
    the write lands (a fresh run directory inside ``runs``, as a write makes one), then removes them."""
    from pipeline.bench import floors
    from pipeline.bench.common import changed_files, write_places

    store = write_store(tmp_path / "s", 30)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-m", "pipeline", "--home", str(store.home), "--project", str(store.project),
                    "add", "project_probe", "-d", "a probe fact", "--visibility", "safe"], env=env, check=True,
                   capture_output=True)
    layout = store.layout
    changed = changed_files(max(layout.receipts.iterdir()), layout)
    places = write_places(layout)

    def listing() -> dict[str, bytes]:
        return {str(p.relative_to(tmp_path)): p.read_bytes() if p.is_file() else b"<dir>"
                for p in sorted((tmp_path / "s").rglob("*"))}

    before = listing()
    created: list[Path] = []
    real_open = os.open

    def recording(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & os.O_CREAT:
            created.append(Path(os.fsdecode(path)))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", recording)
    samples = floors.staged_writes(changed, 2, where=tmp_path, places=places)
    monkeypatch.undo()
    assert len(samples) == 2 and all(ms > 0 for ms in samples)
    staged = sum(len(sizes) for sizes, _deleted in changed.values())
    assert len(created) == 2 * staged
    parents = {p.parent for p in created}
    assert {places["harness"], places["public"], places["receipts"]} <= parents
    runs = {p for p in parents if p.parent == places["run"]}
    assert len(runs) == 2 and all(p.name.startswith(".memfold-bench-run-") for p in runs)
    assert parents <= {places["harness"], places["public"], places["receipts"], *runs}
    assert listing() == before
    # A failure inside a rep (a rename refused) leaves the store's directories as they were too.

    def refused(_src: Any, _dst: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refused)
    with pytest.raises(OSError, match="No space"):
        floors.staged_writes(changed, 1, where=tmp_path, places=places)
    monkeypatch.undo()
    assert listing() == before
