"""A real receipt chain for the report tests: adds, a hostile memory, a merging consolidation, a hand edit, an undo."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import Env

HOSTILE_NAME = "project_hostile"
HOSTILE_DESCRIPTION = "<script>alert(1)</script> </style> javascript:alert(1)"
HOSTILE_BODY = ("<script>alert(1)</script>\n</style><img src=x onerror=alert(2)>\n"
                "[click](javascript:alert(3))\n\" onmouseover=\"alert(4)")
PRIVATE = {
    "user_vault": ("Where the staging vault key is kept", "Ask Priyanka Ostrowska for the vault unseal share."),
    "user_oncall": ("Who is on call for the payment service", "Zebulon Quattlebaum carries the pager this month."),
    # The mirror refuses bidi controls, so the reversing one arrives in a private memory.
    "user_bidi": ("A note with a right-to-left override", "Quillon Marchetti wrote \u202etxt.exe</style>"),
}


def add(env: Env, name: str, *args: str) -> None:
    result = env.run("add", name, *args)
    assert result.code == 0, result.err


def build_chain(env: Env) -> dict[str, Any]:
    """The chain and what the tests need to know about it; returns private names and texts."""
    assert env.run("init").code == 0
    add(env, "project_ci", "-d", "CI runs the full test suite on every push to main", "--visibility", "safe",
        "-b", "CI runs make test on every push.")
    add(env, "project_ci-paraphrase", "-d", "On each push to main the CI runs the complete test suite",
        "--visibility", "safe", "-b", "Every push triggers make test in CI.\nThe nightly job also runs fuzzing.")
    add(env, "project_freeze", "-d", "Release freeze until the 2026 launch", "--expires", "2026-06-01",
        "--visibility", "safe", "-b", "No releases during the freeze.")
    add(env, HOSTILE_NAME, "-d", HOSTILE_DESCRIPTION, "--visibility", "safe", "-b", HOSTILE_BODY)
    for name, (description, body) in PRIVATE.items():
        add(env, name, "-d", description, "-t", "user", "-b", body)
    # A hand edit: a memory file changed outside memfold, between two transactions.
    target = env.harness / "project_ci.md"
    target.write_bytes(target.read_bytes() + b"Edited by hand.\n")
    consolidated = env.run("consolidate", "--no-context", "--json")
    assert consolidated.code == 0, consolidated.out + consolidated.err
    add(env, "project_later", "-d", "A memory added after the consolidation", "--visibility", "safe",
        "-b", "Added later.")
    later = json.loads(max((env.project_home / "receipts").iterdir()).read_bytes())["runId"]
    undone = env.run("undo", later)
    assert undone.code == 0, undone.err
    return {"consolidation": consolidated.json(), "private": PRIVATE}


def receipts(env: Env) -> list[dict[str, Any]]:
    return [json.loads(p.read_bytes()) for p in sorted((env.project_home / "receipts").iterdir())]


def store_sizes(env: Env) -> list[tuple[int, int]]:
    """(private store, mirror) memory counts from each receipt's finalHashes, MEMORY.md left out."""
    def count(files: dict[str, str]) -> int:
        return sum(1 for name in files if name != "MEMORY.md")

    return [(count(r["finalHashes"]["harness"]), count(r["finalHashes"]["public"])) for r in receipts(env)]


def report(env: Env, *args: str) -> tuple[Path, dict[str, Any]]:
    result = env.run("report", "--json", *args)
    assert result.code == 0, result.out + result.err
    data = result.json()
    return Path(data["report"]), data
