"""apply.commit: the gate before anything is written, one commit for files and receipt, re-verify after."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from conftest import Env, op_path, tree_hashes

from pipeline.apply.commit import RunRecord, Services, commit_run, gate, reverify_on_disk
from pipeline.apply.runs import create_run_dir, list_runs
from pipeline.errors import InputRejected, VerifyFailed
from pipeline.fsutil import sha256_bytes
from pipeline.paths import global_layout, make_layout
from pipeline.receipts.receipt import normalize_maps
from pipeline.state.model import Operation
from pipeline.state.post import compute_post
from pipeline.state.read import read_pre
from pipeline.store.memory import Memory, render_memory
from pipeline.store.state import Limits

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)


def _content(name: str, description: str, visibility: str = "safe") -> bytes:
    return render_memory(Memory(name=name, description=description, type="project", visibility=visibility,
                                created="2026-11-30", modified="2026-11-30T12:00:00Z", expires=None,
                                body="body", extra={}))


def _services(env: Env, keep: int = 50) -> Services:
    return Services(make_layout(env.home, env.project), Limits(), lambda: NOW, None, keep_runs=keep)


def _commit(svc: Services, run_id: str, ops: list[Operation]) -> tuple[dict[str, object], Path]:
    pre = read_pre(svc.layout, svc.limits)
    post = compute_post(pre, ops)
    gate(svc, pre, post)
    run_dir = create_run_dir(svc.layout.runs, svc.layout.home, run_id)
    record = RunRecord(run_id, "a" * 64, "b" * 64, [], "add", {"name": "parent"}, {"kind": "none"})
    return commit_run(svc, run_dir, record, pre, post, b"{}", {"plan.json": b"{}"})


def test_one_commit_lands_the_memory_both_indexes_the_receipt_and_the_chain_head(env: Env) -> None:
    assert env.run("init").code == 0
    svc = _services(env)
    receipt, log = _commit(svc, "20261130T120000Z-00000001", [Operation("project_a.md", "create", "safe",
                                                                         _content("project_a", "a fact"))])
    harness, mirror = tree_hashes(env.harness), tree_hashes(env.mirror)
    final = normalize_maps(receipt["finalHashes"])
    assert final["harness"] == harness
    assert final["public"] == mirror
    assert len(list(env.heads.glob("*.json"))) == 1
    run = env.project_home / "runs" / "20261130T120000Z-00000001"
    assert log.read_bytes() == (run / "post-receipt.json").read_bytes()
    assert json.loads((run / "pre-receipt.json").read_bytes())["phase"] == "pre"
    assert (run / "plan.json").read_bytes() == b"{}"
    assert receipt["planDigest"] == sha256_bytes(b"{}")
    assert json.loads((run / "journal.json").read_bytes())["state"] == "done"


def test_the_next_receipt_starts_where_the_last_one_ended(env: Env) -> None:
    assert env.run("init").code == 0
    svc = _services(env)
    first, _ = _commit(svc, "20261130T120000Z-00000001",
                       [Operation("project_a.md", "create", "safe", _content("project_a", "a fact"))])
    second, _ = _commit(svc, "20261130T120000Z-00000002",
                        [Operation("project_a.md", "delete", "safe")])
    assert second["sourceHashes"] == first["finalHashes"]
    assert not (env.harness / "project_a.md").exists() and not (env.mirror / "project_a.md").exists()


def test_a_hand_edit_of_the_mirror_is_kept_byte_for_byte_while_the_users_write_goes_through(env: Env) -> None:
    assert env.run("add", "project_a", "-d", "a fact", "--visibility", "safe").code == 0
    (env.mirror / "project_a.md").write_bytes(b"edited by hand\n")
    private = (env.harness / "project_a.md").read_bytes()
    result = env.run("add", "project_b", "-d", "another fact", "--visibility", "safe")
    assert result.code == 0, result.err
    assert (env.mirror / "project_a.md").read_bytes() == b"edited by hand\n"  # held: not ours to overwrite
    assert (env.harness / "project_a.md").read_bytes() == private
    assert (env.mirror / "project_b.md").read_bytes() == (env.harness / "project_b.md").read_bytes()
    receipt = json.loads(sorted((env.project_home / "receipts").iterdir())[-1].read_bytes())
    assert [(h["name"], h["code"]) for h in receipt["sync"]["held"]] == [("project_a.md", "held.untrusted")]


def test_the_global_store_refuses_a_safe_memory_at_the_gate(env: Env) -> None:
    svc = Services(global_layout(env.home), Limits(), lambda: NOW, None)
    from pipeline.paths.ondisk import ensure_layout

    ensure_layout(svc.layout)
    pre = read_pre(svc.layout, svc.limits)
    post = compute_post(pre, [Operation("project_a.md", "create", "safe", _content("project_a", "a fact"))])
    with pytest.raises(InputRejected) as exc:
        gate(svc, pre, post)
    assert exc.value.code == "global.safe"


def test_re_verification_on_disk_names_a_file_changed_after_the_commit(env: Env) -> None:
    assert env.run("add", "project_a", "-d", "a fact", "--visibility", "safe").code == 0
    svc = _services(env)
    final = read_pre(svc.layout, svc.limits).hash_maps()
    reverify_on_disk(svc, final)
    (env.harness / "project_a.md").write_bytes(b"changed\n")
    with pytest.raises(VerifyFailed) as exc:
        reverify_on_disk(svc, final)
    assert exc.value.code == "verify.post-commit" and "project_a.md" in exc.value.message


def test_old_run_dirs_are_pruned_to_the_newest_n_and_receipts_never(env: Env) -> None:
    assert env.run("init").code == 0
    svc = _services(env, keep=2)
    for i in range(1, 5):
        _commit(svc, f"20261130T12000{i}Z-0000000{i}",
                [Operation(f"project_{i}.md", "create", "private", _content(f"project_{i}", f"fact {i}", "private"))])
    assert len(list_runs(env.project_home / "runs")) == 2
    assert len(list((env.project_home / "receipts").iterdir())) == 4


def test_a_prune_killed_while_removing_files_leaves_no_partial_run_dir(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run dir leaves by one rename before its files go: killed mid-removal, audit sees no half run."""
    from pipeline.apply import runs as runs_module

    assert env.run("init").code == 0
    svc = _services(env, keep=2)
    runs = env.project_home / "runs"
    removed: list[str] = []
    written: dict[str, list[str]] = {}

    def dies_after_one_file(path: Path) -> None:
        removed.append(Path(path).name)
        first = min(p for p in Path(path).iterdir() if p.is_file())
        first.unlink()  # the removal got this far, then the process died
        raise KeyboardInterrupt

    for i in range(1, 4):
        if i == 3:
            monkeypatch.setattr(runs_module, "remove_tree", dies_after_one_file)
        run_id = f"20261130T12000{i}Z-0000000{i}"
        try:
            _commit(svc, run_id,
                    [Operation(f"project_{i}.md", "create", "private", _content(f"project_{i}", f"fact {i}", "private"))])
        except KeyboardInterrupt:
            pass
        written[run_id] = sorted(p.name for p in (runs / run_id).iterdir())
    monkeypatch.undo()
    # Removal only ever starts on a hidden name: no run dir lost a file, and the run is simply gone.
    assert removed == [".memfold-pruned-20261130T120001Z-00000001"]
    assert list_runs(runs) == ["20261130T120002Z-00000002", "20261130T120003Z-00000003"]
    for name in list_runs(runs):  # every run dir still has all its files
        assert sorted(p.name for p in (runs / name).iterdir()) == written[name], name
    # The next prune finishes the removal.
    _commit(svc, "20261130T120004Z-00000004",
            [Operation("project_4.md", "create", "private", _content("project_4", "fact 4", "private"))])
    assert sorted(p.name for p in runs.iterdir()) == ["20261130T120003Z-00000003", "20261130T120004Z-00000004"]


def _written_bytes(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Bytes written through ``fsutil.ops.write``, by the name each descriptor was opened under."""
    import os

    from pipeline import fsutil

    written: dict[str, int] = {}
    write = fsutil.ops.write

    def recording(fd: int, data: bytes) -> int:
        name = os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))
        written[name] = written.get(name, 0) + len(data)
        return write(fd, data)

    monkeypatch.setattr(fsutil.ops, "write", recording)
    return written


def _newest(env: Env) -> tuple[Path, Path]:
    """The newest log entry and its run's post receipt."""
    log = sorted((env.project_home / "receipts").iterdir())[-1]
    return log, env.project_home / "runs" / json.loads(log.read_bytes())["runId"] / "post-receipt.json"


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names descriptors through /proc")
def test_the_log_entry_and_the_runs_post_receipt_are_one_file_written_once(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert env.run("init").code == 0
    written = _written_bytes(monkeypatch)
    assert env.run("add", "project_a", "-d", "a fact", "--visibility", "safe").code == 0
    log, post = _newest(env)
    assert log.samefile(post) and log.stat().st_nlink == 2
    assert log.stat().st_mode & 0o777 == 0o600
    data = log.read_bytes()
    assert json.loads(data)["phase"] == "post"
    # The receipt's bytes went to disk once, under the log entry's temp name; none under the run's.
    assert sum(size for n, size in written.items() if n.endswith(f"-{log.name}.tmp")) == len(data)
    assert [n for n in written if "post-receipt" in n] == []
    assert [p.name for p in post.parent.iterdir() if p.name.startswith(".memfold-")] == []
    assert env.run("verify", post.parent.name).code == 0
    assert env.run("verify", str(log)).code == 0


@pytest.mark.parametrize("err", ["EPERM", "EXDEV", "EMLINK"])
def test_where_links_are_refused_the_runs_post_receipt_is_a_copy(
    env: Env, monkeypatch: pytest.MonkeyPatch, err: str
) -> None:
    import errno
    import os

    from pipeline import fsutil

    def refused(_src: str, _dst: str, **_at: int) -> None:
        code = getattr(errno, err)
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(fsutil.ops, "link", refused)
    assert env.run("add", "project_a", "-d", "a fact", "--visibility", "safe").code == 0
    log, post = _newest(env)
    assert not log.samefile(post) and log.stat().st_nlink == 1 and post.stat().st_nlink == 1
    assert log.read_bytes() == post.read_bytes()
    assert post.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in post.parent.iterdir() if p.name.startswith(".memfold-")] == []
    assert env.run("verify", post.parent.name).code == 0


def test_a_crash_between_the_two_receipt_renames_recovers_both_names_of_one_file(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipeline import fsutil

    assert env.run("add", "project_a", "-d", "a fact", "--visibility", "safe").code == 0
    rename = fsutil.ops.rename

    def crash_at_the_runs_receipt(src: str, dst: str, **at: int) -> None:
        if op_path(dst, at.get("dst_dir_fd")).endswith("/post-receipt.json"):
            raise KeyboardInterrupt  # stands in for a kill after the log entry landed
        rename(src, dst, **at)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fsutil.ops, "rename", crash_at_the_runs_receipt)
        assert env.run("add", "project_b", "-d", "b fact", "--visibility", "safe").code == 130
    log, post = _newest(env)
    assert not post.exists()
    assert [p for p in post.parent.iterdir() if p.name.startswith(".memfold-") and "post-receipt" in p.name] != []
    assert env.run("recover", "--json").json()["recovered"].startswith("rolled-forward")
    assert log.samefile(post) and log.stat().st_nlink == 2
    assert [p.name for p in post.parent.iterdir() if p.name.startswith(".memfold-")] == []
    assert (env.harness / "project_b.md").exists() and (env.mirror / "project_b.md").exists()
    assert env.run("verify").code == 0 and env.run("audit").code == 0


def test_pruning_a_run_dir_leaves_its_log_entry_whole_and_verifiable(env: Env) -> None:
    assert env.run("init").code == 0
    (env.home / "config.yaml").write_text("runs: {keep: 1}\n")
    assert env.run("add", "project_a", "-d", "a fact", "--visibility", "safe").code == 0
    log, post = _newest(env)
    data = log.read_bytes()
    assert log.stat().st_nlink == 2
    assert env.run("add", "project_b", "-d", "b fact", "--visibility", "safe").code == 0
    assert not post.parent.exists()
    assert log.read_bytes() == data and log.stat().st_nlink == 1
    assert env.run("verify", str(log)).code == 0
    assert env.run("audit").code == 0


def test_a_staged_receipt_changed_before_its_second_name_is_linked_rolls_back(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from pipeline import fsutil

    assert env.run("add", "project_a", "-d", "a fact", "--visibility", "safe").code == 0
    before = (tree_hashes(env.harness), tree_hashes(env.mirror))
    receipts = sorted(p.name for p in (env.project_home / "receipts").iterdir())
    link = fsutil.ops.link

    def changed_first(src: str, dst: str, **at: int) -> None:
        source = op_path(src, at.get("src_dir_fd"))
        with open(source, "ab") as fh:  # another writer appends to the staged receipt before the link
            fh.write(b" ")
        os.utime(source, ns=(0, 0))
        link(src, dst, **at)

    monkeypatch.setattr(fsutil.ops, "link", changed_first)
    result = env.run("add", "project_b", "-d", "b fact", "--visibility", "safe")
    assert result.code == 6 and "staged copy" in result.err, result.err
    assert (tree_hashes(env.harness), tree_hashes(env.mirror)) == before
    assert sorted(p.name for p in (env.project_home / "receipts").iterdir()) == receipts
    leftovers = [p for p in env.project_home.rglob(".memfold-*")]
    assert leftovers == []
