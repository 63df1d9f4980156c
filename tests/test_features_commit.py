"""Step definitions for features/commit.feature (shared steps live in conftest.py)."""

from __future__ import annotations

import _sqlite3 as sqlite3
import errno
import hashlib
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import Env
from pytest_bdd import given, parsers, scenarios, then, when

from pipeline import fsutil
from pipeline.store.searchdb import cache_file, stat_key

scenarios("commit.feature")


def _index(env: Env) -> Path:
    return Path(cache_file(str(env.project_home), "memory"))


def _files(env: Env) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in env.harness.iterdir() if p.name.endswith(".md")}


def _index_state(env: Env) -> tuple[dict[str, str], dict[str, str], int]:
    conn = sqlite3.connect(str(_index(env)))
    try:
        rows = dict(conn.execute("SELECT file, sha FROM docs"))
        meta = dict(conn.execute("SELECT key, value FROM meta"))
    finally:
        conn.close()
    return rows, meta, _index(env).stat().st_ino


def _add(env: Env, name: str, words: str) -> int:
    return env.run("add", name, "-d", words, "-b", f"{words.capitalize()}, always.").code


@given(parsers.parse('a store with the memories "{first}", "{second}" and "{third}"'))
def store_with(env: Env, ctx: dict[str, Any], first: str, second: str, third: str) -> None:
    for name, words in ((first, "alpha deploys use the blue script"), (second, "beta runs the smoke tests"),
                        (third, "gamma tags after the review")):
        assert _add(env, name, words) == 0
    ctx["files"], ctx["index"] = _files(env), _index_state(env)


@when(parsers.parse('I add "{name}" saying "{words}"'))
def add(env: Env, ctx: dict[str, Any], name: str, words: str) -> None:
    ctx["code"] = _add(env, name, words)
    assert ctx["code"] == 0


@when(parsers.parse('the disk reports a failed write-back while I add "{name}" saying "{words}"'))
def add_failing(env: Env, ctx: dict[str, Any], monkeypatch: pytest.MonkeyPatch, name: str, words: str) -> None:
    def failed(fd: int) -> None:
        raise OSError(errno.EIO, "write-back failed")

    with monkeypatch.context() as patch:
        patch.setattr(fsutil.ops, "fsync", failed)
        patch.setattr(fsutil.ops, "syncfs", failed)
        ctx["code"] = _add(env, name, words)


@then("the search index describes exactly the memory files on disk")
def index_describes(env: Env) -> None:
    rows, meta, _ = _index_state(env)
    files = _files(env)
    assert rows == {name: sha for name, sha in files.items() if name != "MEMORY.md"}
    digest = hashlib.sha256("\0".join(f"{n}/{h}" for n, h in sorted(files.items())).encode()).hexdigest()
    assert meta["state"] == digest


@then("the search index records the store directory as the commit left it")
def index_records_dir(env: Env) -> None:
    assert _index_state(env)[1]["dir"] == stat_key(os.stat(env.harness))


@then(parsers.parse('a prompt about "{prompt}" shows "{words}" from the same index file'))
def prompt_shows(env: Env, prompt: str, words: str) -> None:
    inode = _index(env).stat().st_ino
    result = env.run("inject", "--prompt", prompt)
    assert result.code == 0 and words.lower() in result.out.lower(), result
    assert _index(env).stat().st_ino == inode  # served, not rebuilt


@then("the add exits 6 and the store files are unchanged")
def add_failed(env: Env, ctx: dict[str, Any]) -> None:
    assert ctx["code"] == 6
    assert _files(env) == ctx["files"]


@then("the search index holds the same rows, state and file as before the add")
def index_unchanged(env: Env, ctx: dict[str, Any]) -> None:
    assert _index_state(env) == ctx["index"]


@then(parsers.parse('a prompt about "{prompt}" does not show "{words}"'))
def prompt_lacks(env: Env, prompt: str, words: str) -> None:
    result = env.run("inject", "--prompt", prompt)
    assert result.code == 0 and words.lower() not in result.out.lower(), result
