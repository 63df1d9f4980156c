"""The memory tool rows: ``create`` and ``str_replace`` through memfold, against the SDK's plain folder.

``memtool create`` and ``memtool str_replace`` time one command each through memfold's memory tool,
and the same commands on the Anthropic SDK's own local-filesystem handler (a plain folder, the shape
of the SDK's example) holding the same files, alternately in one process of their own.

The plain handler is the floor: it writes the file (``create`` with O_EXCL and an fsync, ``str_replace``
through a temp file, fsync and rename) and nothing else. memfold adds the lock, the recovery check, the
privacy gate, the journal, the index, both receipts and the check after the commit; the ratio is what
that costs. The rows are left out, with a progress line, where the SDK is not installed
(``pip install 'memfold[anthropic]'``).

``python -m pipeline.bench.memtool HOME PROJECT PLAIN REPS`` is the driver (it prints the samples as
JSON); ``python -m pipeline.bench.memtool rows [--reps R] [N...]`` prints these rows alone.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import floors

if TYPE_CHECKING:
    from .common import Plan

SIZES = (200, 2000)
SERIES = ("memfold create", "memfold str_replace", "plain create", "plain str_replace")


def available() -> bool:
    return importlib.util.find_spec("anthropic") is not None


def _pair(tool: Any, tag: str) -> tuple[float, float]:
    """One ``create`` of a new file, then one ``str_replace`` in it; the milliseconds of each."""
    path = f"/memories/bench_probe_{tag}.md"
    start = time.perf_counter()
    tool.call({"command": "create", "path": path,
               "file_text": f"# Probe {tag}\nDeploys wait for the release window.\nOwner: the platform team.\n"})
    created = floors.ms_since(start)
    start = time.perf_counter()
    tool.call({"command": "str_replace", "path": path, "old_str": "the release window",
               "new_str": "the Tuesday release window"})
    return created, floors.ms_since(start)


def drive(home: Path, project: Path, plain: Path, reps: int) -> dict[str, list[float]]:
    """Both handlers built once, as an application builds them, warmed up by one untimed pair each,
    then timed pair by pair, alternating so that both see the same machine."""
    from anthropic.tools.memory import BetaLocalFilesystemMemoryTool

    from ..hosts.memory_tool import MemfoldMemoryTool

    ours = MemfoldMemoryTool(project, home=home)
    tools = (("memfold", ours), ("plain", BetaLocalFilesystemMemoryTool(base_path=str(plain))))
    out: dict[str, list[float]] = {name: [] for name in SERIES}
    try:
        for name, tool in tools:
            _pair(tool, f"{name}-warm")
        for round_ in range(reps):
            for name, tool in tools:
                created, replaced = _pair(tool, f"{name}-{round_}")
                out[f"{name} create"].append(created)
                out[f"{name} str_replace"].append(replaced)
    finally:
        ours.close()
    return out


def _plain_copy(harness: Path, where: Path) -> Path:
    """A plain folder with the store's memory files (``<where>/memories``), as the SDK handler keeps them."""
    folder = where / "memories"
    folder.mkdir(parents=True, mode=0o700)
    for path in harness.glob("*.md"):
        if path.name != "MEMORY.md":
            shutil.copyfile(path, folder / path.name)
    return where


def samples(home: Path, project: Path, harness: Path, workdir: Path, env: dict[str, str],
            reps: int) -> dict[str, list[float]]:
    plain = _plain_copy(harness, workdir / "plain-memory")
    try:
        proc = subprocess.run([sys.executable, "-m", "pipeline.bench.memtool", str(home), str(project), str(plain),
                               str(reps)], capture_output=True, env=env, check=False)
    finally:
        shutil.rmtree(plain, ignore_errors=True)
    if proc.returncode != 0:
        raise RuntimeError(f"memory tool driver exited {proc.returncode}: {proc.stderr.decode()[-2000:]}")
    found: dict[str, list[float]] = json.loads(proc.stdout)
    return found


def bench_memory_tool(plan: Plan, n: int, store: Any, env: dict[str, str], add: Any, reps: int) -> None:
    """The two rows of size ``n``, each against the plain handler's median for the same command."""
    if n not in SIZES:
        return
    if not available():
        plan.progress(f"n={n}: memory tool rows left out: the anthropic SDK is not installed")
        return
    plan.progress(f"n={n}: memory tool create, str_replace against the SDK's plain folder handler")
    found = samples(store.home, store.project, store.layout.harness, plan.workdir, env, reps)
    fl = plan.floors.setdefault(str(n), {})
    for command in ("create", "str_replace"):
        fl[f"plain {command}"] = statistics.median(found[f"plain {command}"])
        add(f"memtool {command}", found[f"memfold {command}"], f"plain {command}")


def rows(sizes: tuple[int, ...], reps: int) -> str:
    """These rows alone, each size on a fresh synthetic store, as a table."""
    from .common import rows_alone

    return rows_alone(sizes, reps, lambda plan, n, store, env, add: bench_memory_tool(plan, n, store, env, add, reps))


def main(argv: list[str]) -> int:
    if argv[:1] == ["rows"]:
        reps, sizes = 7, argv[1:]
        if sizes[:1] == ["--reps"] and len(sizes) >= 2 and sizes[1].isdigit():
            reps, sizes = int(sizes[1]), sizes[2:]
        if all(size.isdigit() for size in sizes):
            sys.stdout.write(rows(tuple(int(size) for size in sizes) or SIZES, reps))
            return 0
    if len(argv) != 4 or not argv[3].isdigit():
        sys.stderr.write("usage: python -m pipeline.bench.memtool HOME PROJECT PLAIN REPS\n"
                         "       python -m pipeline.bench.memtool rows [--reps R] [N...]\n")
        return 2
    sys.stdout.write(json.dumps(drive(Path(argv[0]), Path(argv[1]), Path(argv[2]), int(argv[3]))) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
