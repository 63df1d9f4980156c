"""memfold's block in .gitattributes: present, current, idempotent, and nothing else touched; git reads it."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.errors import InputRejected, UnsafePath
from pipeline.mirror.attributes import BEGIN, END, RULES, block, remove_block, with_block, without_block, write_block

BLOCK = block()


def test_no_file_or_an_empty_one_gets_the_block_alone() -> None:
    assert with_block(None) == with_block("") == BLOCK
    assert BLOCK.splitlines() == [BEGIN, *RULES, END]


def test_the_memory_files_come_before_the_index_so_the_union_line_wins_for_it() -> None:
    assert RULES == (".memory/*.md merge=memfold-memory", ".memory/MEMORY.md merge=union",
                     ".memfold/heads/*.json merge=memfold-head")


def test_the_block_is_appended_and_every_byte_before_it_is_kept() -> None:
    text = "*.png binary\n# a comment \t\n\n*.sh text eol=lf\n"
    assert with_block(text) == text + BLOCK


def test_a_last_line_without_a_newline_gets_one_before_the_block() -> None:
    assert with_block("*.png binary") == "*.png binary\n" + BLOCK


def test_a_crlf_file_gets_the_block_with_crlf() -> None:
    text = "*.png binary\r\n*.sh text\r\n"
    assert with_block(text) == text + BLOCK.replace("\n", "\r\n")
    assert with_block("*.png binary") == "*.png binary\n" + BLOCK


def test_the_block_is_idempotent() -> None:
    once = with_block("*.png binary\n")
    assert with_block(once) == once
    crlf = with_block("a text\r\n")
    assert with_block(crlf) == crlf


def test_an_outdated_block_is_replaced_where_it_stands() -> None:
    old = f"*.png binary\n{BEGIN}\n.memory/*.md merge=old\n{END}\n*.sh text\n"
    assert with_block(old) == f"*.png binary\n{BLOCK}*.sh text\n"


def test_a_second_copy_of_the_block_is_dropped() -> None:
    text = f"a text\n{BLOCK}b text\n{BLOCK}c text\n"
    assert with_block(text) == f"a text\n{BLOCK}b text\nc text\n"
    assert without_block(text) == "a text\nb text\nc text\n"


@pytest.mark.parametrize("text", [
    f"a text\n{BEGIN}\n.memory/*.md merge=memfold-memory\n",
    f"a text\n{END}\n{BEGIN}\n",
    f"{BEGIN}\n{BEGIN}\n{END}\n",
])
def test_markers_that_do_not_pair_up_are_refused_with_the_fix(text: str) -> None:
    with pytest.raises(InputRejected) as caught:
        with_block(text)
    assert caught.value.code == "gitattributes.markers"
    assert caught.value.hint and "marker lines" in caught.value.hint


_LINE = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30).filter(
    lambda line: line.strip() not in (BEGIN, END))


@settings(max_examples=200, deadline=None)
@given(st.lists(_LINE, max_size=8), st.sampled_from(["\n", "\r\n"]))
def test_adding_then_removing_the_block_gives_the_same_text(lines: list[str], newline: str) -> None:
    text = "".join(line.replace("\n", " ") + newline for line in lines)
    added = with_block(text)
    assert added.startswith(text)
    assert with_block(added) == added
    assert without_block(added) == text


def test_the_writer_creates_updates_and_then_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / ".gitattributes"
    assert write_block(tmp_path) is True
    assert path.read_text() == BLOCK
    assert stat.S_IMODE(path.stat().st_mode) == 0o644 & ~_umask()
    assert write_block(tmp_path) is False
    path.write_bytes(b"*.png binary\r\n\xff odd bytes\r\n")
    path.chmod(0o640)
    assert write_block(tmp_path) is True
    assert path.read_bytes() == b"*.png binary\r\n\xff odd bytes\r\n" + BLOCK.replace("\n", "\r\n").encode()
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == [".gitattributes"]  # no temp file left


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_the_writer_refuses_a_symlink_and_never_writes_through_it(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.write_text("*.png binary\n")
    root = tmp_path / "project"
    root.mkdir()
    (root / ".gitattributes").symlink_to(outside)
    for call in (write_block, remove_block):
        with pytest.raises(UnsafePath) as caught:
            call(root)
        assert caught.value.code == "path.symlink"
    assert outside.read_text() == "*.png binary\n"
    assert (root / ".gitattributes").is_symlink()


def test_removing_the_block_keeps_the_rest_and_drops_a_file_that_held_only_the_block(tmp_path: Path) -> None:
    path = tmp_path / ".gitattributes"
    assert remove_block(tmp_path) is False
    write_block(tmp_path)
    assert remove_block(tmp_path) is True
    assert not path.exists()
    path.write_text("*.png binary\n")
    write_block(tmp_path)
    assert remove_block(tmp_path) is True
    assert path.read_text() == "*.png binary\n"
    assert remove_block(tmp_path) is False


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_git_reads_the_block_as_meant(tmp_path: Path, newline: str) -> None:
    subprocess.run(("git", "init", "-q", str(tmp_path)), check=True)
    (tmp_path / ".gitattributes").write_bytes(f"*.md merge=binary{newline}".encode())
    write_block(tmp_path)
    out = subprocess.run(("git", "check-attr", "merge", "--", ".memory/project_a.md", ".memory/MEMORY.md",
                          ".memfold/heads/0123456789abcdef.json", "docs/readme.md", ".memory/sub/x.md"),
                         cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == [
        ".memory/project_a.md: merge: memfold-memory",
        ".memory/MEMORY.md: merge: union",
        ".memfold/heads/0123456789abcdef.json: merge: memfold-head",
        "docs/readme.md: merge: binary",
        ".memory/sub/x.md: merge: binary",
    ]
