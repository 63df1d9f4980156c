"""The MCP server's kept pre-state (store/warm.py) and its kernel watch (store/watch.py)."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import Env, inotify_count

from pipeline.errors import InputRejected
from pipeline.state import warm as warm_module
from pipeline.store.watch import open_watch


def _backend(env: Env) -> Any:
    """A server's backend built as `memfold mcp` builds it, for this test's home and project only."""
    import datetime as dt

    from pipeline.apply.commit import Services
    from pipeline.apply.due import DuePolicy
    from pipeline.hosts.mcp_server import Backend
    from pipeline.paths import make_layout
    from pipeline.privacy import load_ruleset
    from pipeline.store.state import Limits

    svc = Services(layout=make_layout(env.home, env.project), limits=Limits(),
                   clock=lambda: dt.datetime.now(dt.UTC), ruleset=load_ruleset())
    return Backend(svc=svc, lock_timeout=5, workers={}, due_policy=DuePolicy(24, 10))


def _add(backend: Any, name: str, words: str, visibility: str = "private") -> dict[str, Any]:
    out: dict[str, Any] = backend.add(name, f"{words} for the release", f"{words} body", "project", visibility, None)
    assert out["ok"], out
    return out


def _receipt(out: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(Path(out["receipt"]).read_bytes())
    return data


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    return count_reads(monkeypatch)


def count_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How often the kept pre-state had to be read from disk (one entry a read)."""
    return count_calls(monkeypatch, warm_module, "read_pre")


def count_calls(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    """One entry for each call of ``module.name`` for the rest of the test, the call itself unchanged."""
    calls: list[int] = []
    original = getattr(module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_consecutive_server_writes_read_the_store_once_and_chain_their_receipts(env: Env, reads: list[int]) -> None:
    backend = _backend(env)
    outs = [_add(backend, f"project_w{i}", f"warm note {i}", "safe" if i % 2 else "private") for i in range(4)]
    assert len(reads) == 1
    receipts = [_receipt(out) for out in outs]
    for before, after in itertools.pairwise(receipts):
        assert after["sourceHashes"] == before["finalHashes"]
    assert receipts[-1]["finalHashes"]["harness"]["project_w3.md"] == _sha(env.harness / "project_w3.md")
    assert receipts[-1]["finalHashes"]["public"]["project_w3.md"] == _sha(env.mirror / "project_w3.md")
    assert receipts[-1]["finalHashes"]["harness"]["MEMORY.md"] == _sha(env.harness / "MEMORY.md")
    assert env.run("verify").code == 0
    assert env.run("audit").code == 0


def test_a_hand_edit_keeping_size_and_mtime_is_what_the_next_server_write_starts_from(
        env: Env, reads: list[int]) -> None:
    backend = _backend(env)
    _add(backend, "project_alpha", "alpha deploys use the script")
    _add(backend, "project_beta", "beta runs the smoke tests")
    path = env.harness / "project_alpha.md"
    before = path.stat()
    data = path.read_bytes()
    edited = data.replace(b"alpha deploys", b"ALPHA DEPLOYS")
    assert len(edited) == len(data) and edited != data
    with open(path, "r+b") as fh:
        fh.write(edited)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    receipt = _receipt(_add(backend, "project_gamma", "gamma tags after review"))
    assert len(reads) == 2
    assert receipt["sourceHashes"]["harness"]["project_alpha.md"] == hashlib.sha256(edited).hexdigest()
    assert "ALPHA DEPLOYS use the script" in (env.harness / "MEMORY.md").read_text(encoding="utf-8")


def test_a_memory_forgotten_by_another_process_is_not_written_back(env: Env, reads: list[int]) -> None:
    backend = _backend(env)
    _add(backend, "project_alpha", "alpha deploys use the script", "safe")
    _add(backend, "project_beta", "beta runs the smoke tests")
    assert env.spawn("forget", "project_alpha").code == 0
    receipt = _receipt(_add(backend, "project_gamma", "gamma tags after review"))
    assert len(reads) == 2
    for root, folder in (("harness", env.harness), ("public", env.mirror)):
        assert "project_alpha.md" not in receipt["sourceHashes"][root]
        assert "project_alpha.md" not in receipt["finalHashes"][root]
        assert not (folder / "project_alpha.md").exists()
        index = folder / "MEMORY.md"
        assert not index.exists() or "project_alpha" not in index.read_text(encoding="utf-8")


def test_after_a_crash_mid_apply_and_recovery_the_server_starts_from_the_recovered_store(
        env: Env, reads: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.apply import journal

    backend = _backend(env)
    _add(backend, "project_alpha", "alpha deploys use the script")
    original = journal.roll_forward

    def crash(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt  # killed right after the commit point, before any rename

    monkeypatch.setattr(journal, "roll_forward", crash)
    with pytest.raises(KeyboardInterrupt):
        _add(backend, "project_beta", "beta runs the smoke tests")
    monkeypatch.setattr(journal, "roll_forward", original)
    assert not (env.harness / "project_beta.md").exists()
    receipt = _receipt(_add(backend, "project_gamma", "gamma tags after review"))  # recovery rolls beta forward
    assert len(reads) == 2
    assert receipt["sourceHashes"]["harness"]["project_beta.md"] == _sha(env.harness / "project_beta.md")
    assert {"project_alpha.md", "project_beta.md", "project_gamma.md"} <= receipt["finalHashes"]["harness"].keys()
    assert "beta runs the smoke tests" in (env.harness / "MEMORY.md").read_text(encoding="utf-8")
    assert env.run("audit").code == 0


def test_a_refused_write_keeps_nothing_it_did_not_commit(env: Env, reads: list[int]) -> None:
    backend = _backend(env)
    _add(backend, "project_alpha", "alpha deploys use the script")
    with pytest.raises(InputRejected) as refused:
        backend.add("project_alpha2", "alpha deploys use the script for the release", "x", "project", "private",
                    None)
    assert refused.value.code == "memory.near-duplicate"
    receipt = _receipt(_add(backend, "project_beta", "beta runs the smoke tests"))
    assert "project_alpha2.md" not in receipt["finalHashes"]["harness"]
    assert not (env.harness / "project_alpha2.md").exists()


def test_without_a_kernel_watch_every_server_write_reads_the_store(
        env: Env, reads: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warm_module, "open_watch", lambda _roots: None)
    backend = _backend(env)
    for i in range(3):
        _add(backend, f"project_w{i}", f"cold note {i}")
    assert len(reads) == 3
    assert env.run("audit").code == 0


def test_the_watch_names_writes_renames_and_deletions_and_gives_up_when_its_root_moves(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    watch = open_watch([str(root)])
    assert watch is not None
    assert watch.changes() == set()
    (root / "a.md").write_bytes(b"one")
    assert watch.changes() == {(str(root), "a.md")}
    with open(root / "a.md", "r+b") as fh:
        fh.write(b"two")  # in place, same size
    assert watch.changes() == {(str(root), "a.md")}
    os.rename(root / "a.md", root / "b.md")
    assert watch.changes() == {(str(root), "a.md"), (str(root), "b.md")}
    (root / "b.md").unlink()
    assert watch.changes() == {(str(root), "b.md")}
    assert watch.changes() == set()
    os.rename(root, tmp_path / "moved")
    assert watch.changes() is None
    assert watch.changes() is None  # closed: it never vouches again


def _watch_lines(fd: int) -> list[str]:
    """The kernel's list of the watches on an inotify descriptor (``/proc``'s fdinfo)."""
    with open(f"/proc/self/fdinfo/{fd}", encoding="ascii") as fh:
        return [line for line in fh if line.startswith("inotify wd:")]


def test_closing_a_watch_removes_its_watches_at_once_and_its_descriptor_once_joined(tmp_path: Path) -> None:
    roots = [tmp_path / "a", tmp_path / "b"]
    for root in roots:
        root.mkdir()
    watch = open_watch([str(root) for root in roots])
    assert watch is not None
    fd = watch.fd
    assert len(_watch_lines(fd)) == 2
    dup = os.dup(fd)  # the same inotify instance, still open whatever the kept thread does with ``fd``
    try:
        job = watch.close()
        assert watch.fd == -1 and job is not None
        assert _watch_lines(dup) == []  # removed before close() returned
        job.join()
        with pytest.raises(OSError):
            os.fstat(fd)  # the descriptor itself is closed
        assert watch.changes() is None and watch.close() is None
    finally:
        os.close(dup)


def test_a_one_shot_watch_is_released_by_the_check_after_the_commit_and_closed_with_the_transaction(
        env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    assert env.run("add", "project_alpha", "-d", "alpha deploys use the script", "-b", "Alpha.").code == 0
    monkeypatch.setattr(warm_module, "WATCH_FROM_DIR_BYTES", 0)  # every store counts as large
    seen: list[tuple[bool, bool, bool]] = []
    others_since = warm_module.WarmState.others_since

    def drained(self: Any, pre: Any, ours: Any) -> bool:
        watching = self.watch is not None
        out = others_since(self, pre, ours)
        seen.append((watching, self.watch is None, self.closing is not None))
        return out

    monkeypatch.setattr(warm_module.WarmState, "others_since", drained)
    before = inotify_count()
    result = env.run("add", "project_beta", "-d", "beta runs the smoke tests", "-b", "Beta.")
    assert result.code == 0, result.err
    assert seen == [(True, True, True)]  # watching until the drain, released by it
    assert inotify_count() == before  # closed when the command returned
    assert env.run("verify").code == 0 and env.run("audit").code == 0


def test_a_file_gone_right_after_the_commit_costs_only_a_fresh_read(
        env: Env, reads: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    backend = _backend(env)
    _add(backend, "project_alpha", "alpha deploys use the script")
    original = warm_module._root_after

    def vanished(*_args: Any) -> Any:
        raise FileNotFoundError("removed by someone else meanwhile")

    monkeypatch.setattr(warm_module, "_root_after", vanished)
    out = _add(backend, "project_beta", "beta runs the smoke tests")
    assert (env.harness / "project_beta.md").is_file() and Path(out["receipt"]).is_file()
    monkeypatch.setattr(warm_module, "_root_after", original)
    _add(backend, "project_gamma", "gamma tags after review")
    assert len(reads) == 2


def test_the_kept_pre_state_is_exactly_what_a_fresh_read_of_both_roots_finds(env: Env, reads: list[int]) -> None:
    from pipeline.state.read import read_pre

    backend = _backend(env)
    for i in range(3):
        _add(backend, f"project_k{i}", f"kept note {i}", "safe" if i % 2 else "private")
    assert backend.forget("project_k1")["ok"]
    _add(backend, "project_k0", "kept note zero rewritten")
    kept = backend.warm.pre
    assert kept is not None and len(reads) == 1
    fresh = read_pre(backend.svc.layout, backend.svc.limits)
    for ours, theirs in ((kept.harness, fresh.harness), (kept.public, fresh.public)):
        assert ours.hashes == theirs.hashes
        # Each identity is the file's as it is on disk now: the rewritten and the untouched ones alike.
        assert ours.identities == theirs.identities
        assert set(ours.identities) == set(ours.hashes)
    assert "project_k1.md" not in kept.harness.hashes and "project_k1.md" not in kept.public.hashes


def test_a_servers_write_answers_before_its_retired_run_dir_is_removed_and_the_lock_is_free(
        env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """Removing a retired run dir is no step of the transaction: a server does it after the answer."""
    import threading

    from pipeline.apply import runs as runs_module
    from pipeline.apply.lock import project_lock
    from pipeline.apply.runs import list_runs, settle_pruned

    assert env.run("init").code == 0
    backend = _backend(env)
    backend.svc = type(backend.svc)(backend.svc.layout, backend.svc.limits, backend.svc.clock,
                                    backend.svc.ruleset, keep_runs=1)
    runs = env.project_home / "runs"
    release, started = threading.Event(), threading.Event()
    real_remove = runs_module.remove_tree

    def slow_remove(path: Path) -> None:
        started.set()
        assert release.wait(10)
        real_remove(path)

    _add(backend, "project_first.md", "first fact about the deploy window")
    settle_pruned()
    monkeypatch.setattr(runs_module, "remove_tree", slow_remove)
    second = _add(backend, "project_second.md", "second fact about cache warmup")["runId"]
    assert started.wait(10)
    # Answered while the removal waits: the old run is no run any more, and the lock is free.
    assert list_runs(runs) == [second]
    assert [p.name for p in runs.iterdir() if p.name.startswith(".memfold-pruned-")]
    layout = backend.svc.layout
    with project_lock(layout.lock_path, layout.lock_info, run_id="20261130T120003Z-00000003", operation="add",
                      timeout=0.2, now="2026-11-30T12:00:03Z"):
        pass
    release.set()
    settle_pruned()
    assert sorted(p.name for p in runs.iterdir()) == [second]
    # The CLI removes them before it answers, as before.
    config = env.home / "config.yaml"
    config.write_text((config.read_text() if config.exists() else "") + "runs:\n  keep: 1\n")
    assert env.run("add", "project_third.md", "-d", "third fact about log rotation", "-b", "x").code == 0
    assert [p.name for p in runs.iterdir() if p.name.startswith(".memfold-pruned-")] == []
    assert len(list_runs(runs)) == 1


def test_the_check_after_the_commit_is_the_read_back_the_kept_state_trusts_while_no_event_came(
        env: Env, reads: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    backend = _backend(env)
    _add(backend, "project_alpha", "alpha deploys use the script")
    digests: list[Path] = []
    original = warm_module._digest_on_disk

    def counted(path: Path) -> str | None:
        digests.append(path)
        return original(path)

    monkeypatch.setattr(warm_module, "_digest_on_disk", counted)
    _add(backend, "project_beta", "beta runs the smoke tests")
    assert digests == [] and backend.warm.pre is not None and len(reads) == 1


def test_a_write_to_a_just_written_file_after_the_check_is_not_kept(
        env: Env, reads: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    """Its event names a file the write wrote itself: only its bytes, read again, can tell."""
    from pipeline.apply import commit as commit_module

    backend = _backend(env)
    _add(backend, "project_alpha", "alpha deploys use the script")
    original = commit_module.reverify_on_disk
    path = env.harness / "project_beta.md"

    def then_edited(*args: Any, **kwargs: Any) -> None:
        original(*args, **kwargs)
        path.write_bytes(path.read_bytes().replace(b"beta runs", b"BETA RUNS"))

    monkeypatch.setattr(commit_module, "reverify_on_disk", then_edited)
    _add(backend, "project_beta", "beta runs the smoke tests")
    monkeypatch.setattr(commit_module, "reverify_on_disk", original)
    assert backend.warm.pre is None  # not kept: the next write reads both roots
    receipt = _receipt(_add(backend, "project_gamma", "gamma tags after review"))
    assert len(reads) == 2
    assert receipt["sourceHashes"]["harness"]["project_beta.md"] == _sha(path)
