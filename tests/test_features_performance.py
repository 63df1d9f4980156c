"""Step definitions for features/performance.feature (shared steps live in conftest.py)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from conftest import Env
from pytest_bdd import given, parsers, scenarios, then, when
from test_statecache import _add_counting_opens, _newest_receipt, _seed, _settle

from pipeline.bench.synth import write_store

scenarios("performance.feature")


@given(parsers.parse("settled synthetic stores of {small:d} and {large:d} memories"))
def settled_stores(ctx: dict[str, Any], tmp_path: Path, small: int, large: int) -> None:
    ctx["stores"] = [write_store(tmp_path / f"s{n}", n) for n in (small, large)]
    _settle()


@when("I add two memories to each store, each add in its own process")
def add_twice(ctx: dict[str, Any]) -> None:
    counts = []
    for store in ctx["stores"]:
        args = (store.home, store.project, store.layout.harness, store.layout.mirror)
        _add_counting_opens(*args, "project_first-probe")
        _settle()
        counts.append(_add_counting_opens(*args, "project_second-probe"))
        assert (store.layout.harness / "project_second-probe.md").is_file()
    ctx["counts"] = counts


@then(parsers.parse("the second add opened the same number of store files in both stores, at most {most:d}"))
def same_opens(ctx: dict[str, Any], most: int) -> None:
    small, large = ctx["counts"]
    assert small == large <= most, ctx["counts"]


@given("three settled memories written by separate processes")
def three_memories(env: Env) -> None:
    _seed(env)


@when(parsers.parse('I rewrite "{name}" in place to say "{words}", keeping its size and mtime'))
def rewrite_in_place(env: Env, ctx: dict[str, Any], name: str, words: str) -> None:
    path = env.harness / name
    before = path.stat()
    data = path.read_bytes()
    edited = data.replace(words.lower().encode(), words.encode())
    assert edited != data and len(edited) == len(data)
    with open(path, "r+b") as fh:
        fh.write(edited)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_ino == before.st_ino and path.stat().st_mtime_ns == before.st_mtime_ns
    ctx["edited"] = (name, hashlib.sha256(edited).hexdigest())


@when(parsers.parse('I add "{name}" in a new process'))
def add_in_process(env: Env, name: str) -> None:
    result = env.spawn("add", name, "-d", f"{name} waits for the window", "-b", name)
    assert result.code == 0, result.err


@then(parsers.parse("the newest receipt's source hash of \"{name}\" is the hash of the edited bytes"))
def receipt_has_edit(env: Env, ctx: dict[str, Any], name: str) -> None:
    assert ctx["edited"][0] == name
    assert _newest_receipt(env)["sourceHashes"]["harness"][name] == ctx["edited"][1]
    assert hashlib.sha256((env.harness / name).read_bytes()).hexdigest() == ctx["edited"][1]


@then(parsers.parse('the private index shows "{text}"'))
def index_shows(env: Env, text: str) -> None:
    assert text in (env.harness / "MEMORY.md").read_text(encoding="utf-8")
