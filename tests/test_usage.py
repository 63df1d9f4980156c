"""store.usage: the private home's log of when each memory was last used, and what counts as dormant."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.store import usage

DAY = 86400


def test_each_use_is_one_appended_line_and_the_latest_use_of_each_kind_is_kept(tmp_path: Path) -> None:
    usage.record(str(tmp_path), usage.INJECT, ["a.md", "b.md"], now=1000)
    usage.record(str(tmp_path), usage.SEARCH, ["a.md"], now=2000)
    usage.record(str(tmp_path), usage.INJECT, ["a.md"], now=1500)
    text = (tmp_path / usage.NAME).read_text()
    assert text == ("# since 1000\n1000 inject a.md\n1000 inject b.md\n2000 search a.md\n1500 inject a.md\n")
    known = usage.load(str(tmp_path))
    assert known.since == 1000 and known.last == {"a.md": {"inject": 1500, "search": 2000}, "b.md": {"inject": 1000}}
    assert known.latest("a.md") == 2000 and known.latest("c.md") is None


def test_a_torn_or_foreign_line_is_skipped_and_a_missing_home_records_nothing(tmp_path: Path) -> None:
    (tmp_path / usage.NAME).write_text("# since 5\n7 inject a.md\n8 launch b.md\n9 inj")
    assert usage.load(str(tmp_path)).last == {"a.md": {"inject": 7}}
    usage.record(str(tmp_path / "absent"), usage.READ, ["a.md"])
    assert not (tmp_path / "absent").exists()


def test_past_its_bound_the_log_is_rewritten_as_one_line_per_memory_and_kind(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(usage, "COMPACT_BYTES", 200)
    for i in range(40):
        usage.record(str(tmp_path), usage.INJECT, ["a.md"], now=100 + i)
    lines = (tmp_path / usage.NAME).read_text().splitlines()
    assert lines[0] == "# since 100" and len(lines) < 12
    assert usage.load(str(tmp_path)).last == {"a.md": {"inject": 139}}


def test_dormant_means_unused_for_as_long_as_the_log_covers_the_memory(tmp_path: Path) -> None:
    now = 400 * DAY
    usage.record(str(tmp_path), usage.INJECT, ["used.md"], now=now - 10 * DAY)
    usage.record(str(tmp_path), usage.SEARCH, ["stale.md"], now=now - 200 * DAY)
    known = usage.load(str(tmp_path))
    created = {"used.md": None, "stale.md": None, "never.md": "1970-01-02", "new.md": "1971-01-30"}
    found = usage.dormant(known, created, 90, now)
    assert sorted(found) == ["never.md", "stale.md"]
    assert "last used 1970-07-20" in found["stale.md"]
    assert "never used since 1970-07-20" in found["never.md"]
    # Nothing recorded yet: nothing is dormant, whatever its age.
    assert usage.dormant(usage.load(str(tmp_path / "none")), created, 1, now) == {}
