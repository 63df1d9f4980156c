"""``memfold bench --instructions``: recall, false positives and throughput of the instruction-text rules.

The corpus is two JSON-lines files: ``injections.jsonl`` (attempts collected from public prompt-injection
datasets) and ``benign.jsonl`` (memory files and agent instruction files), each row with ``source``,
``kind``, ``split`` and ``text``. An attempt counts as found when the rules report any finding in its
text; a benign text counts as a false positive when they report any. Figures are given for each split
(the rules were written against ``train`` only) and, within a split, for each source repository.
"""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from .corpora import NOTE_BYTES, pack_notes, print_report
from .corpora import rows as _rows

FP_TARGET = 0.01
THROUGHPUT_TARGET_MB_S = 3.0


def default_corpus() -> Path | None:
    """The corpus shipped with the source tree's tests, when this is a source checkout."""
    here = Path(__file__).resolve().parents[2] / "tests" / "data" / "instructions"
    return here if (here / "injections.jsonl").is_file() else None


def _repository(source: str) -> str:
    return source.split("@", 1)[0] if "@" in source else ":".join(source.split(":")[:2])


def _cells(rows: list[dict[str, Any]], flagged: list[bool]) -> dict[str, dict[str, list[int]]]:
    """[hits, total] by split ("all" too), and within it by repository and by repository and kind."""
    cells: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for row, hit in zip(rows, flagged, strict=True):
        repository = _repository(row.get("source", ""))
        kind = "/".join(str(row.get("kind", "")).split("/")[:2])  # e.g. "direct/persuasion", not the language
        for split in ("all", row.get("split", "all")):
            for key in ("", repository, f"{repository} {kind}"):
                cells[split][key][0] += hit
                cells[split][key][1] += 1
    return cells


def _rate(hits: int, total: int) -> float:
    return round(hits / total, 4) if total else 0.0


def measure(corpus: Path, megabytes: float = 2.0) -> dict[str, Any]:
    """The figures of the corpus; ``megabytes`` of notes for the throughput (0: none)."""
    from ..privacy.instructions import instruction_findings

    injections = _rows(corpus / "injections.jsonl")
    benign = _rows(corpus / "benign.jsonl")
    found = [bool(instruction_findings(row["text"])) for row in injections]
    rules: dict[str, int] = defaultdict(int)
    flagged = []
    false_positives = []
    for row in benign:
        findings = instruction_findings(row["text"])
        flagged.append(bool(findings))
        if findings:
            false_positives.append({"source": row.get("source", ""), "split": row.get("split", ""),
                                    "rules": sorted({f.rule for f in findings})})
            for rule in {f.rule for f in findings}:
                rules[rule] += 1
    recall, fp = _cells(injections, found), _cells(benign, flagged)
    report: dict[str, Any] = {"corpus": str(corpus), "injections": len(injections), "benign": len(benign), "splits": {}}
    for split in sorted(set(recall) | set(fp), key=lambda s: (s != "all", s)):
        hit, total = recall[split][""]
        wrong, clean = fp[split][""]
        report["splits"][split] = {
            "recall": _rate(hit, total), "found": hit, "total": total,
            "fpRate": _rate(wrong, clean), "falsePositives": wrong, "benign": clean,
            "sources": {key: {"found": c[0], "total": c[1], "recall": _rate(c[0], c[1])}
                        for key, c in sorted(recall[split].items()) if key and " " not in key},
            "kinds": {key: {"found": c[0], "total": c[1], "recall": _rate(c[0], c[1])}
                      for key, c in sorted(recall[split].items()) if " " in key},
            "benignSources": {key: {"flagged": c[0], "total": c[1]}
                              for key, c in sorted(fp[split].items()) if key and " " not in key},
        }
    report["falsePositiveRules"] = dict(sorted(rules.items()))
    report["falsePositiveTexts"] = false_positives
    if megabytes:
        report["throughput"] = throughput([row["text"] for row in benign], megabytes)
    return report


def throughput(texts: list[str], megabytes: float = 2.0) -> dict[str, float]:
    """MB/s scanning benign texts packed into memory-sized notes: CPU time of this process, one core."""
    from ..privacy.instructions import instruction_findings

    notes, size = pack_notes(texts, megabytes)
    instruction_findings("warm up: the patterns compile on first use")
    start = time.process_time()
    for note in notes:
        instruction_findings(note)
    seconds = max(time.process_time() - start, 1e-9)
    return {"megabytes": round(size / 1e6, 2), "seconds": round(seconds, 3), "mbPerS": round(size / 1e6 / seconds, 2)}


def format_report(report: dict[str, Any]) -> str:
    lines = [f"instruction corpus {report['corpus']}: {report['injections']} injection attempts, "
             f"{report['benign']} benign texts"]
    for split, figures in report["splits"].items():
        lines.append("")
        lines.append(f"[{split}] recall {figures['recall']:.1%} ({figures['found']}/{figures['total']}), "
                     f"false positives {figures['fpRate']:.2%} ({figures['falsePositives']}/{figures['benign']})"
                     f"{'' if figures['fpRate'] <= FP_TARGET else f'  above target {FP_TARGET:.0%}'}")
        for source, f in figures["sources"].items():
            lines.append(f"  {source:<44} {f['recall']:>7.1%}  {f['found']:>5}/{f['total']:<5}")
    t = report["throughput"]
    lines.append("")
    lines.append(f"throughput {t['mbPerS']:.1f} MB/s on {t['megabytes']} MB of {NOTE_BYTES}-byte notes, one core "
                 f"(target >= {THROUGHPUT_TARGET_MB_S} MB/s)")
    return "\n".join(lines) + "\n"


def run_command(corpus: Path | None, as_json: bool) -> int:
    """``memfold bench --instructions``: print the report; the figures are the result, so exit 0."""
    return print_report("instruction", corpus or default_corpus(), ("injections.jsonl", "benign.jsonl"), measure,
                        format_report, as_json)
