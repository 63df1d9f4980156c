"""What every bench shares: its plan, its rows and their table, the machine, and the CLI it times."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import floors

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .synth import Synthetic


@dataclass
class Row:
    path: str
    n: int
    samples: list[float]
    floor_name: str | None = None
    floor_ms: float | None = None
    target: str = ""
    met: bool | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def ratio(self) -> float | None:
        return self.median / self.floor_ms if self.floor_ms else None

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "n": self.n, "medianMs": round(self.median, 2), "minMs": round(min(self.samples), 2),
                "maxMs": round(max(self.samples), 2), "reps": len(self.samples), "floor": self.floor_name,
                "floorMs": None if self.floor_ms is None else round(self.floor_ms, 2),
                "ratio": None if self.ratio is None else round(self.ratio, 2), "target": self.target, "met": self.met}


@dataclass
class Plan:
    sizes: tuple[int, ...]
    reps: int
    consolidate_reps: int
    workdir: Path
    progress: Callable[[str], None] = lambda _msg: None
    rows: list[Row] = field(default_factory=list)
    floors: dict[str, dict[str, float]] = field(default_factory=dict)


def cli_env(workdir: Path) -> dict[str, str]:
    """What a user's shell gives memfold: bytecode cached (as after `pip install`), no pinned clock."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "MEMFOLD_NOW", "MEMFOLD_HOME")}
    package_parent = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    env["PYTHONPYCACHEPREFIX"] = str(workdir / "pycache")
    return env


def compile_bytecode(env: dict[str, str]) -> None:
    """Compile the package first, as `pip install` does, so that no measured run pays for compiling it.

    Commands read bytecode from the bench's cache prefix. The sandboxed worker gets no such variable
    and may not write, so it reads the package's own ``__pycache__``, which is compiled too.
    """
    package = str(Path(__file__).resolve().parents[1])
    in_tree = {k: v for k, v in env.items() if k != "PYTHONPYCACHEPREFIX"}
    for where in (env, in_tree):
        subprocess.run([sys.executable, "-m", "compileall", "-q", package], env=where, capture_output=True,
                       check=False)


class Cli:
    def __init__(self, store: Synthetic, env: dict[str, str]) -> None:
        self.store = store
        self.env = env

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "pipeline", "--home", str(self.store.home), "--project",
                str(self.store.project), *args]

    def run(self, *args: str, stdin: bytes | None = None, ok: tuple[int, ...] = (0,)) -> tuple[float, bytes]:
        start = time.perf_counter()
        proc = subprocess.run(self.argv(*args), input=stdin, capture_output=True, env=self.env, check=False)
        elapsed = floors.ms_since(start)
        if proc.returncode not in ok:
            raise RuntimeError(f"memfold {' '.join(args)} exited {proc.returncode}: "
                               f"{proc.stderr.decode(errors='replace')[-2000:]}")
        return elapsed, proc.stdout

    def timed(self, reps: int, *args: str, stdin: bytes | None = None) -> list[float]:
        self.run(*args, stdin=stdin)  # warm-up: bytecode cached, as for an installed tool
        return [self.run(*args, stdin=stdin)[0] for _ in range(reps)]


def settle_file(path: Path) -> None:
    """inject caches its config section only once the file is 2 s old (racy-timestamp rule)."""
    age = time.time() - path.stat().st_ctime
    if age < 2.1:
        time.sleep(2.1 - age)


def write_places(layout: Any) -> dict[str, Path]:
    """The directories a write of the store touches, by the keys of ``changed_files``: where the
    staged-writes floor stages its files (see ``floors.staged_writes``)."""
    places = {"receipts": layout.receipts, "run": layout.runs, "harness": layout.harness}
    if layout.mirror is not None:
        places["public"] = layout.mirror
    return places


def changed_files(receipt_path: Path, layout: Any) -> dict[str, tuple[list[int], int]]:
    """Every file the commit writes, by directory, with its size as it landed (the post-state is on
    disk now), and the files it deletes: both roots' differences, indexes included, the receipt log
    entry, and the run dir's pre receipt (and its post receipt where it is a copy, not a link)."""
    receipt = json.loads(receipt_path.read_bytes())
    run_dir = layout.runs / receipt["runId"]
    # The run's post receipt is a second name of the log entry where the filesystem links: not written.
    run_files = ("pre-receipt.json",) if (run_dir / "post-receipt.json").samefile(receipt_path) \
        else ("post-receipt.json", "pre-receipt.json")
    plan: dict[str, tuple[list[int], int]] = {
        "receipts": ([receipt_path.stat().st_size], 0),
        "run": ([(run_dir / name).stat().st_size for name in run_files], 0),
    }
    for root, folder in (("harness", layout.harness), ("public", layout.mirror)):
        before, after = receipt["sourceHashes"][root], receipt["finalHashes"][root]
        changed = [name for name in set(before) | set(after) if before.get(name) != after.get(name)]
        plan[root] = ([(folder / name).stat().st_size for name in sorted(changed) if name in after],
                      sum(1 for name in changed if name not in after))
    return plan


def row_adder(plan: Plan, n: int) -> Callable[..., Row]:
    """What appends a row of size ``n`` to the plan, its floor looked up among the size's floors."""
    fl = plan.floors.setdefault(str(n), {})

    def add(path: str, samples: list[float], floor: str | None, target: str = "",
            met: Callable[[Row], bool] | None = None) -> Row:
        row = Row(path, n, samples, floor, fl.get(floor) if floor else None, target)
        row.met = met(row) if met is not None else None
        plan.rows.append(row)
        return row

    return add


def rows_alone(sizes: tuple[int, ...], reps: int, measure: Callable[..., None]) -> str:
    """Some rows alone, as a table: ``measure(plan, n, store, env, add)`` on a fresh synthetic store of
    each size, with bytecode compiled as for the full bench."""
    import tempfile

    from .synth import write_store

    with tempfile.TemporaryDirectory(prefix="memfold-bench-rows-") as tmp:
        plan = Plan(sizes=sizes, reps=reps, consolidate_reps=0, workdir=Path(tmp),
                    progress=lambda msg: print(msg, file=sys.stderr))
        env = cli_env(plan.workdir)
        compile_bytecode(env)
        for n in sizes:
            measure(plan, n, write_store(plan.workdir / f"n{n}", n), env, row_adder(plan, n))
        return format_table({"rows": [r.as_dict() for r in plan.rows], "machine": machine()})


def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            cpu = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), cpu)
    except OSError:
        pass
    try:
        load = round(os.getloadavg()[0], 1)
    except OSError:
        load = None
    return {"python": platform.python_version(), "platform": platform.platform(), "cpu": cpu,
            "cpus": os.cpu_count(), "loadavg1": load}


def format_table(result: dict[str, Any]) -> str:
    head = f"{'path':<22} {'N':>6} {'median':>9} {'min':>9} {'max':>9}  {'floor':<24} {'x floor':>7}  target"
    lines = [head, "-" * len(head)]
    for r in result["rows"]:
        floor = "" if r["floor"] is None else f"{r['floor']} {r['floorMs']:.1f}"
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.2f}"
        verdict = "" if r["met"] is None else (" ok" if r["met"] else " MISSED")
        lines.append(f"{r['path']:<22} {r['n']:>6} {r['medianMs']:>9.1f} {r['minMs']:>9.1f} {r['maxMs']:>9.1f}  "
                     f"{floor:<24} {ratio:>7}  {r['target']}{verdict}")
    scaling = result.get("scaling")
    if scaling:
        verdict = "ok" if scaling["met"] else "MISSED"
        lines.append(f"consolidate t(20000)/t(2000) = {scaling['consolidate t(20000)/t(2000)']} "
                     f"(target {scaling['target']}) {verdict}")
    if result.get("importScaling"):
        lines.append(scaling_line(result["importScaling"]))
    m = result["machine"]
    lines.append(f"machine: {m['cpu']} x{m['cpus']}, {m['platform']}, Python {m['python']}, "
                 f"load {m['loadavg1']}; times in ms")
    return "\n".join(lines) + "\n"


def scaling_line(scaling: dict[str, Any]) -> str:
    verdict = "ok" if scaling["met"] else "MISSED"
    label = next(k for k in scaling if k.startswith("import t("))
    return f"{label} = {scaling[label]}, growth exponent {scaling['exponent']} ({scaling['target']}) {verdict}"
