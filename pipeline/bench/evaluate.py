"""The labelled consolidation evaluation: a real ``memfold consolidate`` on ``evalset.yaml``, scored per memory."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..planner.text import fact_key, fact_lines
from ..store.memory import INDEX_NAME, parse_memory

DATA = Path(__file__).with_name("evalset.yaml")
TARGETS: dict[str, float] = {"mergePrecision": 0.98, "mergeRecall": 0.90, "supersessionRecall": 0.90,
                             "distinctFactsLost": 0, "visibilityFlips": 0}
TIME_VERDICTS = {"dormant": "DORMANT", "one-shot": "ONE-SHOT"}


@dataclass(frozen=True)
class Case:
    kind: str
    file: str
    data: bytes
    visibility: str
    expect: str  # keep | into:F | superseded:F | flag | dormant | one-shot


def _file(entry: dict[str, str]) -> tuple[bytes, str]:
    """The memory file as the host writes it: memfold's shape, Claude Code's (metadata, CRLF) or Pi's."""
    stamp = f"{entry['m']}T09:00:00Z" if "m" in entry else "2026-01-01T09:00:00Z"
    kind, shape = entry.get("type", "project"), entry.get("shape", "")
    visibility = entry.get("v", "private")
    lines = [f"name: {json.dumps(entry['t'], ensure_ascii=False)}",
             f"description: {json.dumps(entry['d'], ensure_ascii=False)}"]
    if shape == "claude":
        lines += ["metadata:", f"  type: {kind}", f"visibility: {visibility}", f"modified: {stamp}"]
    elif shape == "pi":
        visibility = "private"  # Pi's entry files carry no visibility: private, as memfold reads them
        day = entry.get("m", "2026-01-01")
        lines += [f"type: {kind}", f"created: {day}", f"modified: {day}"]
    else:
        lines += [f"type: {kind}", f"visibility: {visibility}", "created: 2026-01-01", f"modified: {stamp}"]
    if "e" in entry:
        lines.append(f"expires: {entry['e']}")
    text = "---\n" + "\n".join(lines) + "\n---\n" + entry["b"].rstrip("\n") + "\n"
    if shape == "claude":
        text = text.replace("\n", "\r\n")
    return text.encode("utf-8"), visibility


def load_cases(path: Path = DATA) -> tuple[str, list[Case]]:
    import yaml

    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    cases: list[Case] = []
    for kind, spec in raw["kinds"].items():
        for fill in spec["each"]:
            values = {k: str(v) for k, v in fill.items()}
            for template in spec["templates"]:
                entry = {k: str(v).format(**values) for k, v in template.items()}
                data, visibility = _file(entry)
                cases.append(Case(kind, entry["f"], data, visibility, entry["x"]))
    return str(raw["today"]), cases


def write_store(base: Path, cases: list[Case]) -> tuple[Path, Path]:
    """A git project with the cases in the private store, the safe ones mirrored, no receipt yet."""
    home, project = base / "home", base / "project"
    project.mkdir(parents=True)
    subprocess.run(("git", "init", "-q", str(project)), check=True, capture_output=True)
    from ..paths import make_layout
    from ..paths.ondisk import ensure_layout

    layout = make_layout(home, project)
    ensure_layout(layout)
    assert layout.mirror is not None
    for case in cases:
        (layout.harness / case.file).write_bytes(case.data)
        if case.visibility == "safe":
            (layout.mirror / case.file).write_bytes(case.data)
    return home, project


def consolidate(home: Path, project: Path, today: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The real CLI, clock pinned to the data set's day; returns the summary and the validated plan."""
    env = {**os.environ, "MEMFOLD_NOW": f"{today}T12:00:00Z"}
    env.pop("MEMFOLD_HOME", None)
    package_parent = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, "-m", "pipeline", "--home", str(home), "--project", str(project), "--json",
                           "consolidate", "--no-context"], capture_output=True, env=env, check=False)
    summary = json.loads(proc.stdout or b"{}")
    if proc.returncode != 0:
        raise RuntimeError(f"consolidate exited {proc.returncode}: {summary.get('code')} {summary.get('message')}")
    plan = json.loads((Path(summary["runDir"]) / "plan.json").read_bytes())
    from ..planner.planjson import expanded

    return summary, expanded(plan, plan["selected"])


def score(cases: list[Case], plan: dict[str, Any], after: dict[str, bytes]) -> dict[str, Any]:
    """Merge precision and recall (pairs that end in one memory), supersession recall, facts lost, flips."""
    verdict = {s["name"]: s["verdict"] for s in plan["staleness"]}
    into = {op["name"]: op.get("into") for op in plan["operations"] if op["kind"] == "delete"}
    post = {n: parse_memory(b, n) for n, b in after.items() if n != INDEX_NAME}
    carried: set[str] = set()
    for memory in post.values():
        carried |= {fact_key(memory.description), *(key for _, key in fact_lines(memory))}

    def final(name: str) -> str:
        seen = {name}
        while into.get(name) and into[name] not in seen:
            name = str(into[name])
            seen.add(name)
        return name

    expected_home = {c.file: c.expect.split(":", 1)[1] if ":" in c.expect else c.file for c in cases}
    groups: dict[str, set[str]] = {}
    labelled: dict[str, set[str]] = {}
    for case in cases:
        if case.expect in TIME_VERDICTS:
            continue
        groups.setdefault(final(case.file), set()).add(case.file)
        labelled.setdefault(expected_home[case.file], set()).add(case.file)
    predicted = {frozenset(p) for g in groups.values() for p in itertools.combinations(sorted(g), 2)}
    wanted = {frozenset(p) for g in labelled.values() for p in itertools.combinations(sorted(g), 2)}
    superseded = [c for c in cases if c.expect.startswith("superseded:")]
    hit = [c for c in superseded if verdict.get(c.file) == "SUPERSEDED" and final(c.file) == c.expect.split(":", 1)[1]]
    lost: list[str] = []
    flips: list[str] = []
    by_file = {c.file: c for c in cases}
    for case in cases:
        if case.expect in TIME_VERDICTS or case.expect.startswith("superseded:"):
            continue
        memory = parse_memory(case.data, case.file)
        for raw, key in [(memory.description, fact_key(memory.description)), *fact_lines(memory)]:
            if key and key not in carried:
                lost.append(f"{case.file}: {raw}")
    for case in cases:
        # A flip moves content across visibilities: a safe memory's facts now only in a private one, or a
        # private memory's lines published in a safe one (a private copy of what the mirror shows moves nothing).
        where = final(case.file)
        home, before = post.get(where), by_file.get(where)
        if home is None or home.visibility == case.visibility:
            continue
        shown = set() if before is None or before.visibility != "safe" else {
            key for _, key in fact_lines(parse_memory(before.data, where))}
        memory = parse_memory(case.data, case.file)
        if case.visibility == "safe" or any(key not in shown for _, key in fact_lines(memory)):
            flips.append(f"{case.file} ({case.visibility} -> {home.visibility} in {where})")
    flags = [c for c in cases if c.expect == "flag"]
    timed = [c for c in cases if c.expect in TIME_VERDICTS]
    titles = [m.name.casefold() for m in post.values()]
    kinds = sorted({c.kind for c in cases})
    figures: dict[str, Any] = {
        "memories": len(cases), "kinds": len(kinds), "kindNames": kinds,
        "mergePrecision": round(len(predicted & wanted) / len(predicted), 4) if predicted else 1.0,
        "mergeRecall": round(len(predicted & wanted) / len(wanted), 4) if wanted else 1.0,
        "supersessionRecall": round(len(hit) / len(superseded), 4) if superseded else 1.0,
        "contradictionsFlagged": f"{sum(1 for c in flags if verdict.get(c.file) == 'CONTRADICTED')}/{len(flags)}",
        "timeVerdicts": f"{sum(1 for c in timed if verdict.get(c.file) == TIME_VERDICTS[c.expect])}/{len(timed)}",
        "distinctFactsLost": len(lost), "visibilityFlips": len(flips),
        "duplicateTitles": len(titles) - len(set(titles)),
        "wrongMerges": sorted(" + ".join(sorted(p)) for p in predicted - wanted)[:20],
        "missedMerges": sorted(" + ".join(sorted(p)) for p in wanted - predicted)[:20],
        "lost": lost[:20], "flips": flips[:20],
        "missedSupersessions": sorted(f"{c.file} ({verdict.get(c.file)}, in {final(c.file)})"
                                      for c in superseded if c not in hit)[:20],
        "unknown": sorted(n for n in into if n not in by_file),
    }
    figures["met"] = (figures["mergePrecision"] >= TARGETS["mergePrecision"]
                      and figures["mergeRecall"] >= TARGETS["mergeRecall"]
                      and figures["supersessionRecall"] >= TARGETS["supersessionRecall"]
                      and not lost and not flips)
    return figures


def run_eval(workdir: Path) -> dict[str, Any]:
    today, cases = load_cases()
    home, project = write_store(workdir / "eval", cases)
    summary, plan = consolidate(home, project, today)
    from ..paths import make_layout

    harness = make_layout(home, project).harness
    after = {p.name: p.read_bytes() for p in harness.iterdir() if p.name.endswith(".md")}
    figures = score(cases, plan, after)
    figures["capacityNote"] = summary.get("capacity")
    return figures


def format_eval(figures: dict[str, Any]) -> str:
    lines = [f"consolidation evaluation: {figures['memories']} memories, {figures['kinds']} case kinds",
             f"  merge precision      {figures['mergePrecision']:.3f}  (target >= {TARGETS['mergePrecision']})",
             f"  merge recall         {figures['mergeRecall']:.3f}  (target >= {TARGETS['mergeRecall']})",
             f"  supersession recall  {figures['supersessionRecall']:.3f}  (target >= {TARGETS['supersessionRecall']})",
             f"  distinct facts lost  {figures['distinctFactsLost']}  (target 0)",
             f"  visibility flips     {figures['visibilityFlips']}  (target 0)",
             f"  contradictions flagged {figures['contradictionsFlagged']}, time verdicts {figures['timeVerdicts']}, "
             f"duplicate titles {figures['duplicateTitles']}",
             f"  targets {'met' if figures['met'] else 'NOT met'}"]
    for key in ("wrongMerges", "missedMerges", "missedSupersessions", "lost", "flips"):
        lines.extend(f"  {key}: {item}" for item in figures[key])
    return "\n".join(lines) + "\n"


def report(workdir: Path | None, as_json: bool) -> int:
    """``memfold bench --eval``: print the figures; exit 1 when a target is missed."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="memfold-eval-", dir=workdir) as tmp:
        figures = run_eval(Path(tmp))
    sys.stdout.write(json.dumps(figures, indent=2) + "\n" if as_json else format_eval(figures))
    return 0 if figures["met"] else 1
