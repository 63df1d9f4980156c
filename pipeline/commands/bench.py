"""``memfold bench``: time every path on synthetic stores against its floor and print the table."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import typer

from ..errors import UsageError
from ._app import JsonOpt, app, want_json

QUICK_SIZES = (200,)
FULL_SIZES = (200, 2000, 20_000)


def _sizes(raw: str | None, quick: bool) -> tuple[int, ...]:
    if raw is None:
        return QUICK_SIZES if quick else FULL_SIZES
    try:
        sizes = tuple(int(part) for part in raw.split(",") if part.strip())
    except ValueError:
        raise UsageError(f"--sizes takes numbers separated by commas, not {raw!r}", code="usage.sizes") from None
    if not sizes or any(n < 1 for n in sizes):
        raise UsageError("--sizes needs at least one positive number", code="usage.sizes")
    return sizes


@app.command()
def bench(
    quick: bool = typer.Option(False, "--quick", help="N=200 and few repetitions: well under a minute"),
    sizes: str = typer.Option(None, "--sizes", help="store sizes, e.g. 200,2000,20000 (default: all three)"),
    reps: int = typer.Option(None, "--reps", min=1, help="repetitions of each per-prompt path"),
    consolidate_reps: int = typer.Option(None, "--consolidate-reps", min=1, help="repetitions of consolidate"),
    workdir: Path = typer.Option(None, "--workdir", help="where the synthetic stores go (default: a temp dir)"),
    retrieval: bool = typer.Option(False, "--retrieval", help="recall@5 and MRR on the labelled retrieval set"),
    evaluate: bool = typer.Option(False, "--eval", help="score consolidation on the labelled data set instead"),
    privacy: bool = typer.Option(False, "--privacy", help="recall per family, false positives and throughput "
                                 "of the privacy rules on a labelled corpus"),
    instructions: bool = typer.Option(False, "--instructions", help="recall, false positives and throughput of "
                                      "the instruction-text rules on a labelled corpus, per split"),
    corpus: Path = typer.Option(None, "--corpus", help="folder with positives.jsonl and benign.jsonl "
                                "(default: the source tree's tests/data/privacy/corpus); with --instructions, "
                                "injections.jsonl and benign.jsonl (default: tests/data/instructions)"),
    strict: bool = typer.Option(False, "--strict", help="exit 1 when any target is missed (for cron or CI)"),
    json_out: bool = JsonOpt,
) -> int:
    """Benchmark inject, add, list, search, consolidate (and its stages), verify and audit."""
    if retrieval:
        from ..bench.retrieval import format_result, run

        found = run()
        sys.stdout.write(json.dumps(found, indent=2, ensure_ascii=False) + "\n" if want_json(json_out)
                         else format_result(found))
        return 0
    if instructions:
        from ..bench.instructions import run_command as run_instructions

        return run_instructions(corpus, want_json(json_out))
    if privacy or corpus is not None:
        from ..bench.privacy import run_command

        return run_command(corpus, want_json(json_out))
    from ..bench.common import Plan, format_table
    from ..bench.run import as_json, missed, run_bench

    if evaluate:
        from ..bench.evaluate import report

        return report(workdir, want_json(json_out))

    def progress(message: str) -> None:
        sys.stderr.write(f"bench: {message}\n")
        sys.stderr.flush()

    chosen = _sizes(sizes, quick)
    if workdir is not None:
        workdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="memfold-bench-", dir=workdir) as tmp:
        plan = Plan(sizes=chosen, reps=reps or (3 if quick else 7),
                    consolidate_reps=consolidate_reps or (1 if quick else 3), workdir=Path(tmp), progress=progress)
        result = run_bench(plan)
    sys.stdout.write(as_json(result) if want_json(json_out) else format_table(result))
    misses = missed(result)
    if strict and misses:
        sys.stderr.write(f"memfold: {len(misses)} bench target(s) missed (--strict):\n"
                         + "".join(f"  {line}\n" for line in misses)
                         + "  hint: the figures are machine-bound; rerun on a quiet machine before reading a miss "
                         "as a regression\n")
        return 1
    return 0
