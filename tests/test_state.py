"""Reading a store root: hashes come from the bytes on disk, whatever the identity cache holds."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest

from pipeline.store import files
from pipeline.store.state import Limits, read_root


@pytest.fixture
def trusted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Trust every read at once: without the settling time, the cache is what answers unchanged files."""
    monkeypatch.setattr(files, "_SETTLED_NS", -1)


def _root(tmp_path: Path, data: bytes) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    (root / "project_a.md").write_bytes(data)
    return root


def _hash(root: Path) -> str:
    return read_root(root, Limits()).hashes["project_a.md"]


def _cross_a_timestamp_tick() -> None:
    time.sleep(0.03)


@pytest.mark.usefixtures("trusted")
def test_a_file_replaced_by_rename_with_the_same_size_is_read_again(tmp_path: Path) -> None:
    root = _root(tmp_path, b"first version\n")
    assert _hash(root) == hashlib.sha256(b"first version\n").hexdigest()
    assert str(root / "project_a.md") in files._known
    (tmp_path / "next").write_bytes(b"other version\n")
    os.replace(tmp_path / "next", root / "project_a.md")
    assert _hash(root) == hashlib.sha256(b"other version\n").hexdigest()


@pytest.mark.usefixtures("trusted")
def test_a_file_rewritten_in_place_with_its_old_size_and_mtime_is_read_again(tmp_path: Path) -> None:
    root = _root(tmp_path, b"first version\n")
    path = root / "project_a.md"
    before = os.stat(path)
    assert _hash(root) == hashlib.sha256(b"first version\n").hexdigest()
    _cross_a_timestamp_tick()
    with open(path, "r+b") as fh:
        fh.write(b"FIRST")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_mtime_ns == before.st_mtime_ns and os.stat(path).st_size == before.st_size
    assert _hash(root) == hashlib.sha256(b"FIRST version\n").hexdigest()
    assert read_root(root, Limits()).files["project_a.md"] == b"FIRST version\n"


@pytest.mark.usefixtures("trusted")
def test_a_file_that_grew_in_place_is_read_again_and_still_bounded(tmp_path: Path) -> None:
    root = _root(tmp_path, b"short\n")
    assert _hash(root) == hashlib.sha256(b"short\n").hexdigest()
    with open(root / "project_a.md", "ab") as fh:
        fh.write(b"x" * 100)
    assert _hash(root) == hashlib.sha256(b"short\n" + b"x" * 100).hexdigest()
    from pipeline.errors import InputRejected

    with pytest.raises(InputRejected):
        read_root(root, Limits(max_file_bytes=50))


def test_a_file_written_within_the_settling_time_is_never_served_from_the_cache(tmp_path: Path) -> None:
    root = _root(tmp_path, b"fresh\n")
    assert _hash(root) == hashlib.sha256(b"fresh\n").hexdigest()
    assert str(root / "project_a.md") not in files._known


def test_a_name_is_found_case_insensitively_among_ascii_and_other_names_alike() -> None:
    from pipeline.store.state import find_name

    for names in (["a.md", "B.md", "project_x.md", "C.MD"], ["a.md", "B.md", "project_x.md", "C.MD", "Ünï.md"]):
        for wanted in ("a.md", "A.MD", "b.md", "project_X.md", "c.md", "d.md", "x.md", "md", "ÜNÏ.md", "ünï.md"):
            expected = next((name for name in names if name.lower() == wanted.lower()), None)
            assert find_name(names, wanted) == expected, (names, wanted)
    assert find_name(["a.md", "A.md"], "A.MD") == "a.md"  # the first of two
    assert find_name([], "a.md") is None
    assert find_name(iter(["x.md", "Y.md"]), "y.MD") == "Y.md"


def test_an_unhashed_read_gives_the_same_bytes_keeps_no_copy_and_still_refuses_symlinks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "memory"
    root.mkdir()
    (root / "project_a.md").write_bytes(b"A body\n")
    (root / "project_b.md").write_bytes(b"B body\n")
    (root / "MEMORY.md").write_bytes(b"# Memory Index\n")
    (root / "notes.txt").write_bytes(b"not a memory\n")
    monkeypatch.setattr(files, "_SETTLED_NS", -1)  # every file counts as settled: a hashed read keeps a copy
    monkeypatch.setattr(files, "_known", {})
    unhashed = read_root(root, Limits(), hashed=False)
    assert dict(unhashed.files) == {"MEMORY.md": b"# Memory Index\n", "project_a.md": b"A body\n",
                                    "project_b.md": b"B body\n"}
    assert unhashed.hashes == {} and unhashed.ignored == ["notes.txt"]
    assert files._known == {}
    hashed = read_root(root, Limits())
    assert dict(hashed.files) == dict(unhashed.files)
    assert hashed.hashes["project_a.md"] == hashlib.sha256(b"A body\n").hexdigest()
    assert str(root / "project_a.md") in files._known
    with pytest.raises(Exception, match="bytes, over the 4-byte bound"):
        read_root(root, Limits(max_file_bytes=4), hashed=False)
    os.symlink(root / "project_a.md", root / "project_c.md")
    with pytest.raises(Exception, match="symlink"):
        read_root(root, Limits(), hashed=False)


def test_each_files_identity_is_its_lstat_whether_or_not_the_root_opens_as_a_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    root.mkdir()
    for i in range(5):
        (root / f"project_n{i}.md").write_bytes(b"---\ndescription: n\n---\nbody %d\n" % i)
    expected = {}
    for name in os.listdir(root):
        st = os.lstat(root / name)
        expected[name] = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    assert read_root(root, Limits()).identities == expected
    real_open = os.open

    def refused(path: object, *args: object, **kwargs: object) -> int:
        if path == root:
            raise PermissionError(13, "refused for this test")
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", refused)  # the per-entry lstat is what answers then
    assert read_root(root, Limits()).identities == expected


def test_the_mirror_total_counts_memory_files_only_and_a_mirror_past_the_bound_is_refused() -> None:
    from pipeline.errors import InputRejected
    from pipeline.store.state import mirror_total, refuse_mirror_over

    mirror = {"MEMORY.md": b"x" * 900, "project_a.md": b"a" * 3000, "project_b.md": b"b" * 1000,
              "chain-head-0123456789abcdef.json": b"{}" * 100}
    assert mirror_total(mirror) == 4000
    refuse_mirror_over(mirror, Limits(mirror_bytes=4000))
    with pytest.raises(InputRejected) as exc:
        refuse_mirror_over(mirror, Limits(mirror_bytes=3999))
    assert exc.value.code == "bounds.mirror-bytes" and "4000 bytes" in exc.value.message
    assert "limits.mirror_bytes" in (exc.value.hint or "")


def test_a_file_left_as_it_is_does_not_count_against_the_mirror_bound() -> None:
    from pipeline.store.state import mirror_total, refuse_mirror_over

    mirror = {"project_mine.md": b"m" * 3000, "project_teammates.md": b"t" * 3000}
    assert mirror_total(mirror, leave_out={"project_teammates.md"}) == 3000
    refuse_mirror_over(mirror, Limits(mirror_bytes=4096), leave_out={"project_teammates.md"})
