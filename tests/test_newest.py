"""The log pointer: a commit finds the chain head without listing the receipt log, and stays right when it cannot."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
from conftest import Env
from long_log import Listings, grow_log

from pipeline import fsutil
from pipeline.receipts.log import log_entries
from pipeline.receipts.newest import NEWEST, read_newest
from pipeline.receipts.receipt import chain_head, file_digest, receipt_digest


def _pointer(env: Env) -> dict[str, object]:
    data: dict[str, object] = json.loads((env.project_home / NEWEST).read_bytes())
    return data


def _newest(env: Env) -> dict[str, object]:
    data: dict[str, object] = json.loads(log_entries(env.project_home / "receipts")[-1].path.read_bytes())
    return data


def _add(env: Env, name: str) -> None:
    assert env.run("add", name, "-d", f"fact about {name}", "-b", name).code == 0


def test_every_commit_names_its_receipt_and_the_first_in_the_pointer(env: Env) -> None:
    _add(env, "project_a")
    first = _newest(env)["runId"]
    _add(env, "project_b")
    assert _pointer(env) == {"kind": "memfold-receipt-log-newest", "schemaVersion": 1, "seq": 2,
                             "runId": _newest(env)["runId"], "firstRunId": first}
    assert (env.project_home / NEWEST).stat().st_mode & 0o777 == 0o600


def test_a_write_after_a_thousand_receipts_lists_the_log_once_and_then_never(env: Env) -> None:
    _add(env, "project_a")
    grow_log(env.project_home, 1000)
    receipts = env.project_home / "receipts"
    with Listings(receipts) as first:
        _add(env, "project_b")
    with Listings(receipts) as second:
        _add(env, "project_c")
        assert env.run("forget", "project_a").code == 0
    assert (first.count, second.count) == (1, 0)
    entries = log_entries(receipts)
    assert [e.seq for e in entries] == list(range(1, 1005))
    assert _pointer(env)["seq"] == 1004 and _pointer(env)["runId"] == entries[-1].run_id
    # Each new receipt links to the one before it, the thousand untouched ones included.
    for before, after in zip(entries[-4:], entries[-3:], strict=False):
        assert json.loads(after.path.read_bytes())["previous"] == receipt_digest(json.loads(before.path.read_bytes()))
    with Listings(receipts) as walk:
        result = env.run("audit", "--json")
    assert result.code == 0 and result.json()["receipts"] == 1004 and walk.count == 1


def test_a_pointer_naming_a_receipt_removed_by_hand_falls_back_to_the_listed_log(env: Env) -> None:
    _add(env, "project_a")
    _add(env, "project_b")
    receipts = env.project_home / "receipts"
    newest = log_entries(receipts)[-1]
    newest.path.unlink()
    assert read_newest(receipts) is None
    assert chain_head(receipts) == (2, file_digest(log_entries(receipts)[0].path))


def test_a_receipt_an_older_version_added_after_the_pointer_is_found_by_listing(env: Env) -> None:
    _add(env, "project_a")
    _add(env, "project_b")
    time.sleep(0.05)  # past the clock tick of the commit's own renames
    grow_log(env.project_home, 1, drop_pointer=False)
    receipts = env.project_home / "receipts"
    assert _pointer(env)["seq"] == 2 and read_newest(receipts) is None
    newest = log_entries(receipts)[-1]
    assert newest.seq == 3 and chain_head(receipts) == (4, file_digest(newest.path))
    _add(env, "project_c")
    assert _pointer(env)["seq"] == 4 and read_newest(receipts) is not None
    assert env.run("audit").code == 0


@pytest.mark.parametrize("damage", [b"", b"{not json", b'{"kind": "memfold-receipt-log-newest"}',
                                    b'{"kind": "memfold-receipt-log-newest", "schemaVersion": 1, "seq": 1, '
                                    b'"runId": "a", "firstRunId": "b"}'])
def test_a_torn_or_foreign_pointer_is_ignored_and_rewritten_by_the_next_commit(env: Env, damage: bytes) -> None:
    _add(env, "project_a")
    _add(env, "project_b")
    (env.project_home / NEWEST).write_bytes(damage)
    receipts = env.project_home / "receipts"
    assert read_newest(receipts) is None
    with Listings(receipts) as listed:
        _add(env, "project_c")
    assert listed.count == 1 and _pointer(env)["seq"] == 3
    assert env.run("audit").code == 0


def test_a_commit_that_fails_after_landing_the_pointer_puts_the_old_one_back(
        env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    _add(env, "project_a")
    before = (env.project_home / NEWEST).read_bytes()
    logged = sorted(p.name for p in (env.project_home / "receipts").iterdir())
    rename, fsync = fsutil.ops.rename, fsutil.ops.fsync
    landed: list[str] = []

    def track(src: str, dst: str, **kwargs: int) -> None:
        rename(src, dst, **kwargs)
        if dst.endswith(NEWEST):
            landed.append(dst)

    def fail_after_landing(fd: int) -> None:
        if landed and len(landed) < 2:
            landed.append("failed")  # once: the roll-back's own fsyncs succeed
            raise OSError(5, "injected I/O error")
        fsync(fd)

    monkeypatch.setattr(fsutil.ops, "rename", track)
    monkeypatch.setattr(fsutil.ops, "fsync", fail_after_landing)
    assert env.run("add", "project_b", "-d", "beta", "-b", "b").code == 6
    monkeypatch.undo()
    assert landed, "the pointer was renamed before the failure"
    assert (env.project_home / NEWEST).read_bytes() == before
    assert sorted(p.name for p in (env.project_home / "receipts").iterdir()) == logged
    _add(env, "project_b")
    assert _pointer(env)["seq"] == 2 and env.run("audit").code == 0


def test_recovery_rolls_the_pointer_forward_with_the_receipt_it_names(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.apply import journal

    _add(env, "project_a")
    before = (env.project_home / NEWEST).read_bytes()

    def crash(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt  # a kill right after the commit point

    monkeypatch.setattr(journal, "roll_forward", crash)
    assert env.run("add", "project_b", "-d", "beta", "-b", "b").code == 130
    monkeypatch.undo()
    assert (env.project_home / NEWEST).read_bytes() == before
    staged = [p.name for p in env.project_home.iterdir() if p.name.startswith(fsutil.TEMP_PREFIX)]
    assert len(staged) == 1 and NEWEST in staged[0]
    assert env.run("recover").code == 0
    assert not [p for p in env.project_home.iterdir() if p.name.startswith(fsutil.TEMP_PREFIX)]
    assert _pointer(env)["seq"] == 2 and _pointer(env)["runId"] == _newest(env)["runId"]
    _add(env, "project_c")
    assert _pointer(env)["seq"] == 3 and env.run("audit").code == 0


def test_an_empty_log_has_no_pointer_and_starts_at_one(tmp_path: Path) -> None:
    (tmp_path / "receipts").mkdir()
    assert read_newest(tmp_path / "receipts") is None
    assert chain_head(tmp_path / "receipts") == (1, None)


_READ: list[str] = []


def _reads(event: str, args: tuple[object, ...]) -> None:
    if event == "open" and isinstance(args[0], str) and "/receipts/" in args[0] and isinstance(args[2], int) \
            and not args[2] & os.O_CREAT:
        _READ.append(args[0])


sys.addaudithook(_reads)


def test_a_process_links_its_next_receipt_to_the_one_it_committed_without_reading_it_back(env: Env) -> None:
    _add(env, "project_a")
    _READ.clear()
    _add(env, "project_b")  # in this process, as a warm server's next write
    assert _READ == []
    entries = log_entries(env.project_home / "receipts")
    assert json.loads(entries[1].path.read_bytes())["previous"] == receipt_digest(json.loads(entries[0].path.read_bytes()))


def test_a_head_rewritten_after_its_commit_is_read_back_and_linked_as_it_is_now(env: Env) -> None:
    _add(env, "project_a")
    head = log_entries(env.project_home / "receipts")[-1].path
    changed = json.loads(head.read_bytes())
    changed["createdAt"] = "2026-11-30T12:00:01Z"
    head.write_bytes(json.dumps(changed, indent=2).encode() + b"\n")
    _READ.clear()
    _add(env, "project_b")
    assert str(head) in _READ
    newest = log_entries(env.project_home / "receipts")[-1].path
    assert json.loads(newest.read_bytes())["previous"] == receipt_digest(changed)
