"""A power loss between the journal's rename and the fsync round after the renames.

The journal's rename and the renames it names are made durable by one round of fsyncs. A power loss
before that round returns may keep any subset of the renames and lose the journal's own: recovery then
finds the journal only under its temp name (its bytes were durable before any rename) and puts the
whole pre-state back from the backups. A SIGKILL cannot lose a rename, so these tests undo the
journal's rename by hand after letting some of the renames land.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from conftest import Env

from pipeline import fsutil
from pipeline.apply import journal, roots

UPDATE = ("update", "user_b", "--visibility", "safe", "-b", "b2")


def _seed(env: Env) -> None:
    assert env.run("add", "project_a", "-d", "alpha fact", "--visibility", "safe", "-b", "a").code == 0
    assert env.run("add", "user_b", "-d", "beta fact", "-t", "user", "-b", "b").code == 0


def _private_files(env: Env) -> dict[str, bytes]:
    home = env.project_home
    files = {f"receipts/{p.name}": p.read_bytes() for p in (home / "receipts").iterdir()}
    files["newest-receipt.json"] = (home / "newest-receipt.json").read_bytes()
    heads = {f"heads/{p.name}": p.read_bytes() for p in env.heads.glob("*.json")}
    return {**files, **heads}


def lose_power_after(landed: int | None, seen: list[int] | None = None) -> Any:
    """A stand-in for the renames of a commit: the first ``landed`` of them (all with None) reach the
    disk, the journal's own rename does not, then the process stops (KeyboardInterrupt, exit 130)."""

    def power_loss(resolve: roots.RootResolver, entries: list[dict[str, object]], staged_checked: bool = False,
                   run_dir: Path | None = None) -> None:
        assert run_dir is not None and staged_checked
        keep = len(entries) if landed is None else landed
        if seen is not None:
            seen.append(len(entries))
        for entry in entries[:keep]:  # these renames reached the disk
            folder = resolve(str(entry["root"]))
            if entry["temp"] is None:
                os.unlink(folder / str(entry["name"]))
            else:
                os.rename(folder / str(entry["temp"]), folder / str(entry["name"]))
        # ... and the journal's own rename did not.
        os.rename(run_dir / journal.JOURNAL, run_dir / fsutil.temp_name(journal.JOURNAL, run_dir.name[-12:]))
        raise KeyboardInterrupt

    return power_loss


@pytest.mark.parametrize("landed", [0, 1, 3, None])
def test_a_lost_journal_rename_rolls_back_every_rename_that_landed(
    env: Env, monkeypatch: pytest.MonkeyPatch, landed: int | None
) -> None:
    _seed(env)
    before, files_before = env.snapshot(), _private_files(env)
    original = journal.roll_forward
    seen: list[int] = []
    power_loss = lose_power_after(landed, seen)

    monkeypatch.setattr(journal, "roll_forward", power_loss)
    assert env.run(*UPDATE).code == 130
    monkeypatch.setattr(journal, "roll_forward", original)
    assert seen and (landed is None or landed < seen[0])
    assert (env.project_home / "pending").exists()
    assert env.snapshot() != before or landed == 0
    result = env.run("recover", "--json")
    assert result.code == 0 and result.json()["recovered"].startswith("rolled-back"), result.out
    assert env.snapshot() == before
    assert _private_files(env) == files_before
    assert not (env.project_home / "pending").exists()
    leftovers = [p for root in (env.harness, env.mirror, env.project_home, env.project_home / "receipts")
                 for p in root.iterdir() if p.name.startswith(fsutil.TEMP_PREFIX)]
    assert leftovers == []
    assert env.run("audit").code == 0
    # The store takes the same edit again, whole.
    assert env.run(*UPDATE).code == 0
    assert (env.mirror / "user_b.md").exists()


def test_a_torn_journal_temp_means_nothing_was_renamed(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """A temp that fails its checksum was not durable, so no rename happened: it is swept, nothing restored."""
    _seed(env)
    before = env.snapshot()

    def power_loss(resolve: roots.RootResolver, entries: list[dict[str, object]], staged_checked: bool = False,
                   run_dir: Path | None = None) -> None:
        assert run_dir is not None
        temp = run_dir / fsutil.temp_name(journal.JOURNAL, run_dir.name[-12:])
        os.rename(run_dir / journal.JOURNAL, temp)
        temp.write_bytes(temp.read_bytes()[:100])
        raise KeyboardInterrupt

    monkeypatch.setattr(journal, "roll_forward", power_loss)
    assert env.run(*UPDATE).code == 130
    monkeypatch.undo()
    result = env.run("recover", "--json")
    assert result.code == 0 and result.json()["recovered"].startswith("discarded"), result.out
    assert env.snapshot() == before
    assert env.run("audit").code == 0
