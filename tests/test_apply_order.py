"""Apply's batched fsyncs still keep the order durability needs: staged files, their directory entries
and the journal's bytes before the journal's rename, which is made durable with the renames it names
(the run dir and the roots after the last rename, in one round)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import Env, op_path

from pipeline import fsutil


def _record(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, str]]:
    """fsyncs by path and by inode ("inode", "dev:ino"), renames with the inode they move."""
    events: list[tuple[str, str, str]] = []
    fsync, rename = fsutil.ops.fsync, fsutil.ops.rename

    def recording_fsync(fd: int) -> None:
        fsync(fd)
        st = os.fstat(fd)
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}"), f"{st.st_dev}:{st.st_ino}"))  # once durable

    def recording_rename(src: str, dst: str, **at: int) -> None:
        src_path, dst_path = op_path(src, at.get("src_dir_fd")), op_path(dst, at.get("dst_dir_fd"))
        st = os.lstat(src_path)
        events.append(("rename", src_path, dst_path))
        events.append(("moved", f"{st.st_dev}:{st.st_ino}", dst_path))
        rename(src, dst, **at)

    monkeypatch.setattr(fsutil.ops, "fsync", recording_fsync)
    monkeypatch.setattr(fsutil.ops, "rename", recording_rename)
    return events


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="names descriptors through /proc")
def test_every_file_and_directory_is_durable_before_the_commit_point_and_after_the_renames(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert env.run("add", "project_a", "-d", "alpha fact", "-b", "a").code == 0
    assert env.run("add", "user_b", "-d", "beta fact", "-t", "user", "--visibility", "safe", "-b", "b").code == 0
    events = _record(monkeypatch)
    assert env.run("update", "project_a", "--visibility", "safe", "-b", "a2").code == 0
    synced = [path for kind, path, _ in events if kind == "fsync"]
    journal = next(i for i, (kind, _, dst) in enumerate(events) if kind == "rename" and dst.endswith("/journal.json"))
    run_dir = str(Path(events[journal][2]).parent)
    before = {path for kind, path, _ in events[:journal] if kind == "fsync"}
    durable_inodes = {inode for kind, _, inode in events[:journal] if kind == "fsync"}
    moved = {dst: inode for kind, inode, dst in events if kind == "moved"}
    renames = [(i, src, dst) for i, (kind, src, dst) in enumerate(events)
               if kind == "rename" and i > journal and not dst.startswith(run_dir + "/journal")]
    # The project home holds the log's pointer (newest-receipt.json), renamed with the rest; the chain head
    # lands beside the mirror.
    roots = {str(env.harness), str(env.mirror), str(env.heads), str(env.project_home / "receipts"),
             str(env.project_home), run_dir}
    assert {str(Path(dst).parent) for _, _, dst in renames} == roots
    for _, src, dst in renames:
        # A second name of a staged file (the run's receipt) is durable through the file's own fsync.
        assert src in before or moved[dst] in durable_inodes, f"{src} was not durable before the journal"
        assert str(Path(src).parent) in before, f"the entry of {src} was not durable before the journal"
    for name in ("pending", f"runs/{Path(run_dir).name}"):
        assert str(env.project_home / name) in before
    for name in ("snapshot.json", "manifest.json", "plan.json", "pre-receipt.json", "backup"):
        assert f"{run_dir}/{name}" in before
    first, last = renames[0][0], renames[-1][0]
    # No wait between the journal's rename and the renames: a power loss before the round after them
    # keeps the journal's temp, durable here, and recovery rolls back (tests/test_power_loss.py).
    assert not [path for kind, path, _ in events[journal:first] if kind == "fsync"]
    assert events[journal + 1][0] == "moved" and events[journal + 1][1] in durable_inodes
    after = [path for kind, path, _ in events[last:] if kind == "fsync"]
    assert roots <= set(after)
    assert synced.count(str(env.harness)) == 2  # once for the staged entries, once after the renames
    assert (Path(run_dir) / "journal.json").read_text().count('"done"') == 1
    assert not (env.project_home / "pending").exists()
