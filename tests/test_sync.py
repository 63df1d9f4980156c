"""The three-way reconcile of base, mirror and private store (``mirror.sync``), as a pure function."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.errors import InputRejected
from pipeline.fsutil import sha256_bytes
from pipeline.mirror.settle import settle
from pipeline.mirror.shape import declared_visibility, has_conflict_markers, safe_by_place
from pipeline.mirror.sync import consistent, merge_operations, reconcile, synced_view
from pipeline.state.base import Base
from pipeline.state.model import Operation, PreState
from pipeline.store.memory import parse_memory
from pipeline.store.state import RootState


def _memory(title: str, text: str, visibility: str | None = "safe") -> bytes:
    vis = f"visibility: {visibility}\n" if visibility else ""
    return f"---\nname: {title}\ndescription: {text}\ntype: project\n{vis}---\n{text}\n".encode()


def _pre(tmp_path: Path, harness: dict[str, bytes], mirror: dict[str, bytes],
         held: dict[str, tuple[str, str]] | None = None) -> PreState:
    def root(name: str, files: dict[str, bytes]) -> RootState:
        return RootState(tmp_path / name, files, {n: sha256_bytes(d) for n, d in files.items()})

    public = root("mirror", mirror)
    public.held = held or {}
    memories = {n: parse_memory(d, n) for n, d in harness.items()}
    return PreState(root("harness", harness), public, memories)


def _base(files: dict[str, bytes], agreed: dict[str, str | None] | None = None, source: str = "head") -> Base:
    return Base({n: sha256_bytes(d) for n, d in files.items()}, agreed, seq=1, receipt="0" * 64, source=source)


def _clean(name: str, data: bytes) -> None:
    return None


A1, A2, B1 = _memory("a", "alpha one"), _memory("a", "alpha two"), _memory("b", "beta one")


def test_a_teammates_new_file_is_adopted_with_its_bytes(tmp_path: Path) -> None:
    pre = _pre(tmp_path, {"a.md": A1}, {"a.md": A1, "b.md": B1})
    sync = reconcile(pre, _base({"a.md": A1}), trusted=True, screen=_clean)
    assert [(op.name, op.kind, op.content) for op in sync.operations] == [("b.md", "create", B1)]
    assert [(a.name, a.change) for a in sync.adopted] == [("b.md", "added")]
    assert not sync.kept and not sync.held and not sync.conflicts


def test_a_change_is_adopted_only_where_the_private_copy_is_as_at_the_base(tmp_path: Path) -> None:
    unchanged = reconcile(_pre(tmp_path, {"a.md": A1}, {"a.md": A2}), _base({"a.md": A1}), trusted=True,
                          screen=_clean)
    assert [(op.name, op.kind, op.content) for op in unchanged.operations] == [("a.md", "rewrite", A2)]
    mine = _memory("a", "alpha mine")
    both = reconcile(_pre(tmp_path, {"a.md": mine}, {"a.md": A2}), _base({"a.md": A1}), trusted=True,
                     screen=_clean)
    assert both.operations == []
    assert [(c.name, c.mine, c.theirs, c.agreed) for c in both.conflicts] == [
        ("a.md", sha256_bytes(mine), sha256_bytes(A2), sha256_bytes(A1))]
    assert both.kept.files == {"a.md": A2}  # the mirror keeps theirs; the store keeps mine


def test_a_deletion_is_carried_out_only_with_a_base_git_carried(tmp_path: Path) -> None:
    pre = _pre(tmp_path, {"a.md": A1, "b.md": B1}, {"a.md": A1})
    with_head = reconcile(pre, _base({"a.md": A1, "b.md": B1}), trusted=True, screen=_clean)
    assert [(op.name, op.kind) for op in with_head.operations] == [("b.md", "delete")]
    without = reconcile(pre, _base({"a.md": A1, "b.md": B1}, source="worktree"), trusted=True, screen=_clean)
    assert without.operations == [] and without.quiet  # an older checkout may simply lack it


def test_a_version_this_store_wrote_before_is_no_news_without_a_head(tmp_path: Path) -> None:
    base = Base({"a.md": sha256_bytes(A2)}, source="worktree", seen=lambda name, digest: digest == sha256_bytes(A1))
    sync = reconcile(_pre(tmp_path, {"a.md": A2}, {"a.md": A1}), base, trusted=True, screen=_clean)
    assert sync.quiet and sync.operations == []


def test_an_untrusted_project_adopts_nothing_and_keeps_every_incoming_change(tmp_path: Path) -> None:
    pre = _pre(tmp_path, {"a.md": A1}, {"a.md": A2, "b.md": B1})
    sync = reconcile(pre, _base({"a.md": A1}), trusted=False, screen=_clean)
    assert sync.operations == []
    assert sorted((h.name, h.code) for h in sync.held) == [("a.md", "held.untrusted"), ("b.md", "held.untrusted")]
    assert sync.kept.files == {"a.md": A2, "b.md": B1}
    assert sync.held[0].agreed == sha256_bytes(A1)


def test_a_file_that_fails_the_screen_is_held_with_the_version_last_agreed(tmp_path: Path) -> None:
    def screen(name: str, data: bytes) -> tuple[str, str, str] | None:
        return ("held.privacy", "a token", "rotate it") if b"two" in data else None

    sync = reconcile(_pre(tmp_path, {"a.md": A1}, {"a.md": A2}), _base({"a.md": A1}), trusted=True, screen=screen)
    assert [(h.name, h.code, h.agreed) for h in sync.held] == [("a.md", "held.privacy", sha256_bytes(A1))]
    assert sync.operations == [] and sync.kept.files == {"a.md": A2}
    # Next time the base says what was agreed, so the held file is judged again, not taken as agreed.
    again = reconcile(_pre(tmp_path, {"a.md": A1}, {"a.md": A2}),
                      _base({"a.md": A2}, {"a.md": sha256_bytes(A1)}), trusted=True, screen=_clean)
    assert [(op.name, op.content) for op in again.operations] == [("a.md", A2)]


def test_a_link_the_reader_held_is_kept_and_never_read(tmp_path: Path) -> None:
    pre = _pre(tmp_path, {}, {}, held={"x.md": ("held.link", "x.md is a symbolic link")})
    sync = reconcile(pre, _base({}), trusted=True, screen=_clean)
    assert [(h.name, h.code) for h in sync.held] == [("x.md", "held.link")]
    assert sync.kept.files == {"x.md": None}


def test_the_mirror_as_the_store_left_it_is_consistent_whatever_the_base(tmp_path: Path) -> None:
    private = _memory("p", "private one", "private")
    assert consistent(_pre(tmp_path, {"a.md": A1, "p.md": private}, {"a.md": A1}))
    assert not consistent(_pre(tmp_path, {"a.md": A1}, {"a.md": A2}))
    assert not consistent(_pre(tmp_path, {"a.md": A1}, {"a.md": A1, "b.md": B1}))


def test_settling_takes_mine_or_theirs_and_releases_the_kept_file(tmp_path: Path) -> None:
    mine = _memory("a", "alpha mine")
    pre = _pre(tmp_path, {"a.md": mine}, {"a.md": A2})
    sync = reconcile(pre, _base({"a.md": A1}), trusted=True, screen=_clean)
    theirs = settle(sync, pre, "a.md", "theirs")
    assert [(op.name, op.kind, op.content) for op in theirs.operations] == [("a.md", "rewrite", A2)]
    assert not theirs.conflicts and not theirs.kept
    kept_mine = settle(sync, pre, "a.md", "mine")
    assert kept_mine.operations == [] and not kept_mine.kept and not kept_mine.conflicts
    with pytest.raises(InputRejected) as caught:
        settle(sync, pre, "b.md", "mine")
    assert caught.value.code == "sync.nothing-to-settle"


def test_a_command_builds_on_the_synced_store_and_each_name_gets_one_operation(tmp_path: Path) -> None:
    pre = _pre(tmp_path, {"a.md": A1}, {"a.md": A1, "b.md": B1})
    adopt = [Operation("b.md", "create", "safe", B1)]
    view = synced_view(pre, adopt)
    assert sorted(view.memories) == ["a.md", "b.md"] and view.harness.files["b.md"] == B1
    assert synced_view(pre, []) is pre
    later = _memory("b", "beta edited")
    merged = merge_operations(pre, adopt, [Operation("b.md", "rewrite", "safe", later)])
    assert [(op.name, op.kind, op.content) for op in merged] == [("b.md", "create", later)]
    gone = merge_operations(pre, adopt, [Operation("b.md", "delete", "safe")])
    assert gone == []  # adopted and deleted in one transaction: nothing on disk changes


def test_a_reference_tools_file_is_safe_by_where_it_lives_and_keeps_its_line_ends() -> None:
    lf = b"---\nname: a\ndescription: d\ntype: project\n---\nbody\n"
    assert safe_by_place(lf) == b"---\nname: a\ndescription: d\ntype: project\nvisibility: safe\n---\nbody\n"
    crlf = lf.replace(b"\n", b"\r\n")
    assert safe_by_place(crlf) == crlf.replace(b"type: project\r\n", b"type: project\r\nvisibility: safe\r\n")
    assert parse_memory(safe_by_place(crlf), "a.md").is_safe
    stated = _memory("a", "alpha", "private")
    assert safe_by_place(stated) is stated and declared_visibility(stated) == b"private"
    assert declared_visibility(lf) is None


def test_conflict_markers_are_found_only_at_the_start_of_a_line() -> None:
    assert has_conflict_markers(b"---\n<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> other\n")
    assert not has_conflict_markers(b"a heading\n=======\ntext about <<<<<<< markers\n")
