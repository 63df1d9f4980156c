"""Step definitions for features/warm_writes.feature (shared steps live in conftest.py)."""

from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import test_features_performance as performance
from conftest import Env
from pytest_bdd import given, parsers, scenarios, then, when
from test_statecache import _newest_receipt
from test_warm import _backend as backend_for
from test_warm import count_reads

scenarios("warm_writes.feature")

WORDS = {"project_alpha": "alpha deploys use the blue green script", "project_beta": "beta runs the smoke tests first"}


def _backend(env: Env, ctx: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Any:
    ctx["reads"], ctx["receipts"] = count_reads(monkeypatch), []
    ctx["backend"] = backend_for(env)
    return ctx["backend"]


def _add(ctx: dict[str, Any], name: str, words: str | None = None) -> None:
    words = words or f"{name.replace('_', ' ')} waits for the window"
    out = ctx["backend"].add(name, words, f"{words}.", "project", "safe" if name.endswith("beta") else "private", None)
    assert out["ok"], out
    ctx["receipts"].append(json.loads(Path(out["receipt"]).read_bytes()))


@given("an MCP server backend on an empty project")
def backend_on_empty(env: Env, ctx: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    _backend(env, ctx, monkeypatch)


@given(parsers.parse('an MCP server backend that has added "{first}" and "{second}"'))
def backend_with_two(env: Env, ctx: dict[str, Any], monkeypatch: pytest.MonkeyPatch, first: str, second: str) -> None:
    _backend(env, ctx, monkeypatch)
    for name in (first, second):
        _add(ctx, name, WORDS.get(name))


@when(parsers.parse("the backend adds {count:d} memories"))
def backend_adds_many(ctx: dict[str, Any], count: int) -> None:
    for i in range(count):
        _add(ctx, f"project_note-{i}", f"note {i} about the release train")


@when(parsers.parse('the backend adds "{name}"'))
def backend_adds(ctx: dict[str, Any], name: str) -> None:
    _add(ctx, name)


@when(parsers.parse('another process forgets "{name}"'))
def other_forgets(env: Env, name: str) -> None:
    assert env.spawn("forget", name).code == 0


@when(parsers.parse('the backend is killed right after the commit point of adding "{name}"'))
def killed_after_commit_point(ctx: dict[str, Any], monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    from pipeline.apply import journal

    original = journal.roll_forward

    def crash(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt  # a kill after the journal's rename, before the first file rename

    monkeypatch.setattr(journal, "roll_forward", crash)
    with pytest.raises(KeyboardInterrupt):
        _add(ctx, name)
    monkeypatch.setattr(journal, "roll_forward", original)


@then(parsers.parse("the backend read the store from disk {count:d} time"))
@then(parsers.parse("the backend read the store from disk {count:d} times"))
def store_reads(ctx: dict[str, Any], count: int) -> None:
    assert len(ctx["reads"]) == count


@then("each receipt's source hashes are the previous receipt's final hashes")
def chained(ctx: dict[str, Any]) -> None:
    assert len(ctx["receipts"]) >= 2
    for before, after in itertools.pairwise(ctx["receipts"]):
        assert after["sourceHashes"] == before["finalHashes"]
        assert after["previous"] is not None


@when(parsers.parse('I rewrite "{name}" in place to say "{words}", keeping its size and mtime'))
def rewrite(env: Env, ctx: dict[str, Any], name: str, words: str) -> None:
    performance.rewrite_in_place(env, ctx, name, words)


@then(parsers.parse("the newest receipt's source hash of \"{name}\" is the hash of the edited bytes"))
def has_edit(env: Env, ctx: dict[str, Any], name: str) -> None:
    performance.receipt_has_edit(env, ctx, name)


@then(parsers.parse('the private index shows "{text}"'))
def shows(env: Env, text: str) -> None:
    performance.index_shows(env, text)


@then("memfold audit passes")
def audit_passes(env: Env) -> None:
    result = env.run("audit")
    assert result.code == 0, result.out + result.err


@then(parsers.parse('no root and no receipt of the newest write holds "{name}"'))
def nowhere(env: Env, name: str) -> None:
    receipt = _newest_receipt(env)
    for root, folder in (("harness", env.harness), ("public", env.mirror)):
        assert name not in receipt["sourceHashes"][root] and name not in receipt["finalHashes"][root]
        assert not (folder / name).exists()
        index = folder / "MEMORY.md"
        assert not index.exists() or name not in index.read_text(encoding="utf-8")


@then(parsers.parse("the newest receipt's source hash of \"{name}\" is the hash of the file on disk"))
def source_is_disk(env: Env, name: str) -> None:
    digest = hashlib.sha256((env.harness / name).read_bytes()).hexdigest()
    receipt = _newest_receipt(env)
    assert receipt["sourceHashes"]["harness"][name] == digest == receipt["finalHashes"]["harness"][name]


def _run_files(env: Env) -> list[Path]:
    runs = env.project_home / "runs"
    return sorted(path for run in runs.iterdir() if not run.name.startswith(".")
                  for path in run.iterdir() if path.suffix == ".json" and path.name != "journal.json")


@then("every receipt, snapshot and manifest of those writes is exactly its whole JSON encoding")
def whole_encodings(env: Env, ctx: dict[str, Any]) -> None:
    from pipeline.store.jsontext import dump_json

    files = [*_run_files(env), *sorted((env.project_home / "receipts").iterdir())]
    assert len(files) >= 4 * 5
    for path in files:
        data = path.read_bytes()
        assert dump_json(json.loads(data)) == data, path


@then("each receipt's previous digest is the RFC 8785 digest of the receipt before it")
def previous_digests(env: Env) -> None:
    import rfc8785

    log = sorted((env.project_home / "receipts").iterdir())
    assert len(log) >= 4
    for before, after in itertools.pairwise(log):
        digest = hashlib.sha256(rfc8785.dumps(json.loads(before.read_bytes()))).hexdigest()
        assert json.loads(after.read_bytes())["previous"] == digest, after.name


@when(parsers.parse('the backend adds "{name}" and another process rewrites it right after the check'))
def rewritten_after_check(env: Env, ctx: dict[str, Any], monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    from pipeline.apply import commit

    original = commit.reverify_on_disk
    path = env.harness / f"{name}.md"

    def then_rewritten(*args: Any, **kwargs: Any) -> None:
        original(*args, **kwargs)
        path.write_bytes(path.read_bytes().replace(b"waits for", b"WAITS FOR"))

    monkeypatch.setattr(commit, "reverify_on_disk", then_rewritten)
    _add(ctx, name)
    monkeypatch.setattr(commit, "reverify_on_disk", original)
    assert b"WAITS FOR" in path.read_bytes()


@given(parsers.parse('an MCP server backend that keeps {keep:d} run and has added "{name}"'))
def backend_keeping(env: Env, ctx: dict[str, Any], monkeypatch: pytest.MonkeyPatch, keep: int, name: str) -> None:
    backend = _backend(env, ctx, monkeypatch)
    svc = backend.svc
    backend.svc = type(svc)(svc.layout, svc.limits, svc.clock, svc.ruleset, keep_runs=keep)
    _add(ctx, name, WORDS.get(name))


@when(parsers.parse('the backend adds "{name}" while removing files is held up'))
def adds_while_removal_held(ctx: dict[str, Any], monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    import threading

    from pipeline.apply import runs as runs_module
    from pipeline.apply.runs import settle_pruned

    settle_pruned()
    release, started = threading.Event(), threading.Event()
    real_remove = runs_module.remove_tree

    def held(path: Path) -> None:
        started.set()
        if release.wait(10):
            real_remove(path)

    monkeypatch.setattr(runs_module, "remove_tree", held)
    _add(ctx, name, WORDS.get(name))
    ctx["release"], ctx["started"] = release, started


@then("the write has answered, its run is the only run and the project lock is free")
def answered_unlocked(env: Env, ctx: dict[str, Any]) -> None:
    from pipeline.apply.lock import project_lock
    from pipeline.apply.runs import list_runs

    assert ctx["started"].wait(10)
    runs = env.project_home / "runs"
    assert list_runs(runs) == [ctx["receipts"][-1]["runId"]]
    assert [p.name for p in runs.iterdir() if p.name.startswith(".memfold-pruned-")]
    layout = ctx["backend"].svc.layout
    with project_lock(layout.lock_path, layout.lock_info, run_id="20261130T120003Z-00000003", operation="check",
                      timeout=0.2, now="2026-11-30T12:00:03Z"):
        pass


@then("once the removal goes on only the newest run dir is left")
def removal_done(env: Env, ctx: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.apply.runs import settle_pruned

    ctx["release"].set()
    settle_pruned()
    monkeypatch.undo()
    assert sorted(p.name for p in (env.project_home / "runs").iterdir()) == [ctx["receipts"][-1]["runId"]]
