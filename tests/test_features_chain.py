"""Step definitions for features/chain.feature: forging receipts and heads as an attacker would."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import rfc8785
from conftest import Env
from pytest_bdd import parsers, scenarios, then, when

scenarios("chain.feature")


def _receipts(env: Env) -> list[Path]:
    return sorted((env.project_home / "receipts").iterdir())


def _digest(path: Path) -> str:
    return hashlib.sha256(rfc8785.dumps(json.loads(path.read_bytes()))).hexdigest()


def _rewrite(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    data = json.loads(path.read_bytes())
    change(data)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def _rewrite_newest(env: Env, change: Callable[[dict[str, Any]], None]) -> None:
    newest = _receipts(env)[-1]
    run_dir = env.project_home / "runs" / json.loads(newest.read_bytes())["runId"]
    for path in (newest, run_dir / "post-receipt.json", run_dir / "pre-receipt.json"):
        _rewrite(path, change)


def _head(env: Env) -> Path:
    (head,) = env.heads.glob("*.json")
    return head


@when("I change the newest receipt's source hashes in its pre, post and log copies")
def forge_sources(env: Env) -> None:
    _rewrite_newest(env, lambda r: r["sourceHashes"]["harness"].update({"project_a.md": "5" * 64}))


@when(parsers.parse('I tamper with "{name}" and rewrite the newest receipt\'s final hashes to match'))
def tamper(env: Env, name: str) -> None:
    target = env.harness / name
    target.write_bytes(target.read_bytes() + b"planted\n")
    planted = hashlib.sha256(target.read_bytes()).hexdigest()
    _rewrite_newest(env, lambda r: r["finalHashes"]["harness"].update({name: planted}))


@when("I rewrite the chain head beside the mirror to name the rewritten receipt")
def forge_head(env: Env) -> None:
    digest = _digest(_receipts(env)[-1])
    _rewrite(_head(env), lambda h: h.update(receipt=digest))


@when("I commit the mirror to git")
def commit(env: Env) -> None:
    for args in (("add", "-A", ".memory", ".memfold"), ("commit", "-q", "--allow-empty", "-m", "memory")):
        subprocess.run(["git", "-C", str(env.project), "-c", "user.name=t", "-c", "user.email=t@example.invalid",
                        "-c", "commit.gpgsign=false", *args], check=True, capture_output=True)


@when("I keep a copy of both roots")
def keep(env: Env, ctx: dict[str, Any]) -> None:
    ctx["kept"] = {root: {p.name: p.read_bytes() for p in root.iterdir()}
                   for root in (env.harness, env.mirror, env.heads)}


@when("I drop the newest receipt and put the copy of both roots back")
def drop_and_revert(env: Env, ctx: dict[str, Any]) -> None:
    newest = _receipts(env)[-1]
    shutil.rmtree(env.project_home / "runs" / json.loads(newest.read_bytes())["runId"])
    newest.unlink()
    for root, files in ctx["kept"].items():
        for path in root.iterdir():
            if path.name not in files:
                path.unlink()
        for name, data in files.items():
            (root / name).write_bytes(data)


@then("the chain head beside the mirror names the newest receipt")
def head_names_newest(env: Env) -> None:
    receipts = _receipts(env)
    head = json.loads(_head(env).read_bytes())
    assert head["chain"] == _digest(receipts[0])
    assert head["seq"] == int(receipts[-1].name[:8]) == len(receipts)
    assert head["receipt"] == _digest(receipts[-1])
