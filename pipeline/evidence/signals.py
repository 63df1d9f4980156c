"""What a consolidation's worker is told beyond the memories: whether each selected memory's cited code
still holds (with the lines that changed) and which memories nobody used, as the run's ``signals.json``
and a section of its task.

The parent computes both (it may ask git and read the private home's usage log; the worker may not):
the built-in planner reads the file, an LLM worker the task. Usage stays in the run directory, in the
private home, like every other run artifact; nothing of it reaches the mirror.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..store.jsontext import dump_json
from ..store.memory import Memory

KIND = "memfold-run-signals"
NAME = "signals.json"
MAX_TASK_LINES = 400


def run_signals(layout: Any, memories: Mapping[str, Memory], selected: Iterable[str], dormant_days: int,
                forget_dormant: bool, now: float) -> dict[str, Any]:
    from .drift import Drift, findings, unused_report

    chosen = {name: memories[name] for name in selected if name in memories}
    evidence: dict[str, list[dict[str, Any]]] = {}
    if not layout.is_global and any(m.evidence for m in chosen.values()):
        drift = Drift(layout.project_root, {n: m for n, m in chosen.items() if m.evidence})
        for name in sorted(chosen):
            memory = chosen[name]
            if not memory.evidence:
                continue
            found = drift.found.get(name) or findings(layout.project_root, memory, drift.follow)
            evidence[name] = [{**f.as_dict(), **({"diff": drift.changed_lines(f)} if f.drifted else {})}
                              for f in found]
    unused = {u["file"]: u["why"] for u in unused_report(layout, chosen, dormant_days, now)}
    return {"kind": KIND, "schemaVersion": 1, "evidence": evidence, "unused": unused,
            "dormantDays": dormant_days, "forgetDormant": forget_dormant}


def signals_bytes(signals: Mapping[str, Any]) -> bytes:
    return dump_json(dict(signals))


def task_section(signals: Mapping[str, Any]) -> str:
    """The task's lines on the selected memories' citations and usage (Markdown)."""
    lines: list[str] = []
    for name, cites in sorted(signals.get("evidence", {}).items()):
        lines.append(f"- `{name}` cites:")
        for cite in cites:
            now = f" (now {cite['now']})" if cite.get("now") else ""
            lines.append(f"  - `{cite['cited']}`: {cite['status']}{now}")
            lines += [f"        {line}" for line in cite.get("diff", [])]
    unused = signals.get("unused", {})
    if unused:
        rule = "on" if signals.get("forgetDormant") else "off (report them DORMANT, keep them)"
        lines.append(f"- not used in {signals.get('dormantDays')} days (injected, searched or read), deletion of "
                     f"unused memories is {rule}: " + ", ".join(f"`{n}`" for n in sorted(unused)))
    if len(lines) > MAX_TASK_LINES:
        lines = [*lines[:MAX_TASK_LINES], f"- … {len(lines) - MAX_TASK_LINES} more lines in signals.json"]
    return "\n".join(lines) or "(no selected memory cites code, and every one was used recently)"
