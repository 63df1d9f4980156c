"""A stand-in third-party worker: prints the built-in planner's plan for a run dir, changed on request.

Usage: fake_plan.py RUN_DIR MODE [ARG]

Modes:
  plan            the planner's plan, as is
  patch JSON      the plan after a list of edits (below)
  sleep SECONDS   wait (holding the caller's lock), then print the plan
  prose           print a claim of success and no plan
  lines JSON      {"lines": N, "pad": P}: N-1 noise events of P bytes each, then the plan as an event
  hang TOKEN      start a detached grandchild, then both sleep; TOKEN marks their command lines

Edits are ``[op, path, ...]`` with ``path`` a list of keys, indexes, or ``{"name": N}`` (the list
item whose ``name`` is N). Ops: ``set path value``, ``del path``, ``append path value``,
``dup path`` (append a copy of that item to its list), ``pad path n`` (append n bytes to a string),
``replace path old new``. A string value ``{"$rev": s}`` is ``s`` reversed, so a test can have the
worker print a secret that never appears in the worker's own configuration.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def _plan(run_dir: Path) -> dict[str, Any]:
    from pipeline.planner.run import plan_run

    value = json.loads(plan_run(run_dir))
    assert isinstance(value, dict)
    return value


def _value(raw: Any) -> Any:
    if isinstance(raw, dict) and set(raw) == {"$rev"}:
        return str(raw["$rev"])[::-1]
    if isinstance(raw, dict):
        return {k: _value(v) for k, v in raw.items()}
    if isinstance(raw, list):
        return [_value(v) for v in raw]
    return raw


def _step(node: Any, key: Any) -> Any:
    if isinstance(key, dict):
        return next(i for i, item in enumerate(node) if isinstance(item, dict) and item.get("name") == key["name"])
    return key


def _locate(plan: dict[str, Any], path: list[Any]) -> tuple[Any, Any]:
    node: Any = plan
    for key in path[:-1]:
        node = node[_step(node, key)]
    return node, _step(node, path[-1])


def _apply(plan: dict[str, Any], edits: list[list[Any]]) -> dict[str, Any]:
    for op, path, *args in edits:
        parent, key = _locate(plan, path)
        if op == "set":
            parent[key] = _value(args[0])
        elif op == "del":
            del parent[key]
        elif op == "append":
            parent[key].append(_value(args[0]))
        elif op == "dup":
            parent.append(copy.deepcopy(parent[key]))
        elif op == "pad":
            parent[key] += "x" * int(args[0]) + "\n"
        elif op == "replace":
            parent[key] = parent[key].replace(args[0], _value(args[1]))
        else:
            raise SystemExit(f"fake_plan: unknown edit {op!r}")
    return plan


def _print(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def main(argv: list[str]) -> int:
    run_dir, mode, arg = Path(argv[1]), argv[2], (argv[3] if len(argv) > 3 else "")
    if mode == "prose":
        _print(b"Consolidation finished.\nAll checks PASSED\n")
        return 0
    if mode == "hang":
        # setsid + a second fork: the grandchild leaves the worker's session and process group.
        code = f"import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(300)  # {arg}\n"
        subprocess.run([sys.executable, "-c", code], check=True)
        time.sleep(300)
        return 0
    plan = _plan(run_dir)
    if mode == "sleep":
        time.sleep(float(arg))
    elif mode == "patch":
        plan = _apply(plan, json.loads(arg))
    elif mode == "lines":
        spec = json.loads(arg)
        noise = json.dumps({"type": "progress", "pad": ""}, separators=(",", ":"))
        line = noise.replace('""', '"' + "p" * (int(spec["pad"]) - len(noise)) + '"').encode() + b"\n"
        event = json.dumps({"type": "consolidation_plan", "plan": plan}, separators=(",", ":")).encode() + b"\n"
        _print(line * (int(spec["lines"]) - 1) + event)
        return 0
    _print(json.dumps(plan, indent=2).encode() + b"\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
