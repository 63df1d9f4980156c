"""The import rows: `memfold import claude` of a Claude Code memory dir of 300, 1,000 and 3,000 files, and
its growth from the first size to the last.

``python -m pipeline.bench.importing [--reps R] [N...]`` prints these rows alone.
"""

from __future__ import annotations

import math
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SIZES = (300, 1000, 3000)
TARGET_MS = 3000.0
MAX_EXPONENT = 1.1
_KINDS = ("user", "feedback", "project", "reference")
_TOPICS = ("deploy", "cache", "queue", "review", "tests", "build", "lint", "docs", "release", "schema")


def write_claude_dir(dest: Path, n: int) -> None:
    """``n`` topic files as Claude Code writes them (name/description/type frontmatter, a Markdown body),
    with the shapes real dirs hold: a CJK file name, a YAML-hostile description, ``metadata.type``."""
    dest.mkdir(parents=True, exist_ok=True)
    lines = ["# Memory Index", ""]
    for i in range(n):
        topic = _TOPICS[i % len(_TOPICS)]
        kind = _KINDS[i % len(_KINDS)]
        stem = f"{topic}-note-{i}" if i % 50 else f"部署-{i}"
        description = f"Note: {topic} rule {i} holds for module m{i}" if i % 7 == 0 else f"{topic} rule {i} for m{i}"
        kind_line = f"metadata:\n  type: {kind}" if i % 11 == 0 else f"type: {kind}"
        body = f"The {topic} step {i} runs before step {i + 1}; see src/m{i}.py.\n"
        (dest / f"{stem}.md").write_text(f"---\nname: {topic} {i}\ndescription: {description}\n{kind_line}\n---\n"
                                         f"{body}", encoding="utf-8")
        lines.append(f"- [{topic} {i}]({stem}.md) — {description}")
    (dest / "MEMORY.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def time_import(workdir: Path, source: Path, env: dict[str, str]) -> float:
    """One whole `memfold import claude` process into a fresh home and project (``workdir`` must not
    exist), in ms.

    Nothing is deleted between two samples: on ext4 without a journal the kernel skips inodes freed
    in the last minute or more when it allocates new ones, scanning past each of them, so an import
    right after the removal of the previous sample's 3,000 files measured that scan (1-2 s) instead.
    """
    home, project = workdir / "home", workdir / "project"
    project.mkdir(parents=True)
    argv = [sys.executable, "-m", "pipeline", "--home", str(home), "--project", str(project), "--json",
            "import", "claude", str(source)]
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, env=env, check=False)
    elapsed = (time.perf_counter() - start) * 1000
    if proc.returncode != 0:
        raise RuntimeError(f"memfold import exited {proc.returncode}: {proc.stderr.decode(errors='replace')[-2000:]}")
    return elapsed


def bench_import(plan: Any, env: dict[str, str], python_ms: float, row: Any,
                 sizes: tuple[int, ...] = SIZES) -> dict[str, Any]:
    """Adds one row per size to ``plan.rows``; returns the growth figures.

    The floor of a row: ``python -c pass`` plus staging the same files durably (create, write, one
    fsync round, rename, the directory fsync), measured after the samples since it deletes its files.
    Every sample's home stays until the bench's work dir goes (see ``time_import``).
    """
    from .floors import staged_writes

    medians: dict[int, float] = {}
    for n in sizes:
        plan.progress(f"import claude: {n:,} files")
        source = plan.workdir / f"claude-{n}"
        shutil.rmtree(source, ignore_errors=True)
        write_claude_dir(source, n)
        samples = [time_import(plan.workdir / f"import-{n}-{k}", source, env) for k in range(max(plan.reps // 2, 2))]
        medians[n] = statistics.median(samples)
        file_sizes = [p.stat().st_size for p in sorted(source.iterdir()) if p.name != "MEMORY.md"]
        floor = python_ms + statistics.median(staged_writes({"harness": (file_sizes, 0)}, 3, where=plan.workdir))
        target = f"<= {TARGET_MS:.0f} ms" if n == 3000 else ""
        plan.rows.append(row("import claude", n, samples, "python+staged-writes", floor, target,
                             medians[n] <= TARGET_MS if target else None))
    low, high = sizes[0], sizes[-1]
    ratio = medians[high] / medians[low]
    exponent = math.log(ratio) / math.log(high / low) if high != low else 0.0
    return {f"import t({high})/t({low})": round(ratio, 2), "exponent": round(exponent, 3),
            "target": f"exponent <= {MAX_EXPONENT}", "met": exponent <= MAX_EXPONENT}


def main(argv: list[str]) -> int:
    """The import rows alone, with their floors and the growth line."""
    import tempfile

    from . import floors
    from .common import Plan, Row, cli_env, compile_bytecode, format_table, machine, scaling_line

    reps = 6
    if argv[:1] == ["--reps"]:
        reps, argv = int(argv[1]), argv[2:]
    sizes = tuple(int(a) for a in argv) or SIZES
    with tempfile.TemporaryDirectory(prefix="memfold-import-bench-") as tmp:
        plan = Plan(sizes=(), reps=reps, consolidate_reps=0, workdir=Path(tmp),
                    progress=lambda msg: print(msg, file=sys.stderr))
        env = cli_env(plan.workdir)
        compile_bytecode(env)
        python_ms = statistics.median(floors.interpreter(env, 5))
        scaling = bench_import(plan, env, python_ms, Row, sizes)
    result = {"rows": [r.as_dict() for r in plan.rows], "machine": machine()}
    print(format_table(result), end="")
    print(scaling_line(scaling))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
