"""memory_text: the text the model sees is the file after its frontmatter, and the frontmatter it did not write is derived."""

from __future__ import annotations

import pytest

from pipeline.errors import InputRejected
from pipeline.hosts.memory_text import (
    check_text,
    compose,
    derived,
    follow,
    insert_at,
    lines_of,
    replace_once,
    text_of,
)
from pipeline.store.memory import Memory, parse_memory

TEXTS = ["", "one line", "one line\n", "\n\nlead", "tail\n\n\n", "---\ntype: user\n---\nbody", "a\n---\nb\n",
         "tab\there", "caf\u00e9 \u202e \U0001f600", "\ufeffmark", "\n"]


@pytest.mark.parametrize("text", TEXTS)
def test_a_composed_file_parses_and_gives_back_exactly_its_text(text: str) -> None:
    memory = Memory(name="notes", description="d", type="reference", created="2026-11-30")
    data = compose(memory, text)
    assert data.endswith(text.encode())
    assert text_of(data) == text
    parsed = parse_memory(data, "notes.md")
    assert (parsed.name, parsed.description, parsed.type, parsed.visibility) == ("notes", "d", "reference", "private")
    assert parsed.body == text.lstrip("\n")


def test_a_host_file_with_crlf_reads_as_lf() -> None:
    data = b"---\r\nname: x\r\ndescription: d\r\n---\r\nline one\r\nline two\r\n"
    assert text_of(data) == "line one\nline two\n"


@pytest.mark.parametrize(("text", "description", "mtype"), [
    ("# Deploy target\nblue/green", "Deploy target", "reference"),
    ("\n\n- **Likes** tea\n", "**Likes** tea", "reference"),
    ("<user_preferences>\n  prefers tabs\n</user_preferences>", "prefers tabs", "reference"),
    ("```\ncode\n```", "code", "reference"),
    ("---\ntype: user\n---\nPrefers tabs", "Prefers tabs", "user"),
    ("---\ntype: feedback\ndescription: Use the real DB\n---\nbody", "Use the real DB", "feedback"),
    ("---\ntype: secret-kind\n---\nbody", "body", "reference"),
    ("---\n: not yaml [\n---\nbody", ": not yaml [", "reference"),
    ("", "notes (no text yet)", "reference"),
    ("---\n", "notes (no text yet)", "reference"),
    ("1. first step", "first step", "reference"),
    ("word " * 60, ("word " * 31).strip() + "…", "reference"),
])
def test_the_description_and_type_are_derived_from_the_text(text: str, description: str, mtype: str) -> None:
    assert derived("notes.md", text) == (description, mtype)


def test_a_derived_description_is_one_bounded_line() -> None:
    description, _ = derived("n.md", "a\u202eb\x85c " + "x" * 400)
    assert "\n" not in description and "\u202e" not in description and len(description) <= 160


def test_an_edit_moves_derived_fields_and_keeps_set_ones() -> None:
    derived_memory = Memory(name="n", description="old first line", type="reference")
    assert follow("n.md", derived_memory, "old first line\n", "---\ntype: user\n---\nnew first line\n") == \
        ("new first line", "user")
    set_memory = Memory(name="n", description="Set by a person", type="project")
    assert follow("n.md", set_memory, "old first line\n", "new first line\n") == ("Set by a person", "project")


@pytest.mark.parametrize(("text", "bad", "words"), [
    ("a\r\nb", "\r", "carriage return (line 1)"),
    ("a\nb\nc\x1b[2J", "\x1b", "U+001B (line 3)"),
    ("x\x00", "\x00", "U+0000 (line 1)"),
    ("x\x7f", "\x7f", "U+007F"),
    ("x\udc80", "\udc80", "lone surrogate"),
])
def test_text_no_memory_file_can_hold_is_refused_naming_the_line_not_the_text(text: str, bad: str, words: str) -> None:
    with pytest.raises(InputRejected) as caught:
        check_text(text, "file_text")
    assert caught.value.code == "memtool.text" and words in caught.value.message
    assert bad not in caught.value.message


def test_tabs_and_newlines_and_any_printable_character_pass() -> None:
    check_text("a\tb\nc \u00e9 \u202e \U0001f600 \ufeff", "file_text")


def test_replace_once_replaces_the_one_match_and_names_its_line() -> None:
    assert replace_once("a\nb\nc", "b", "B", "/memories/x.md") == ("a\nB\nc", 1)


@pytest.mark.parametrize(("text", "old", "code", "words"), [
    ("abc", "z", "memtool.no-match", "did not appear verbatim in /memories/x.md"),
    ("abc", "", "memtool.no-match", "old_str is empty"),
    ("x\ny\nx", "x", "memtool.several-matches", "appears 2 times in /memories/x.md (lines 1, 3)"),
    ("aaa", "aa", "memtool.several-matches", "appears 2 times"),
    ("k\n" * 30, "k", "memtool.several-matches", "more than 20 times"),
])
def test_replace_once_refuses_zero_or_several_matches(text: str, old: str, code: str, words: str) -> None:
    with pytest.raises(InputRejected) as caught:
        replace_once(text, old, "new", "/memories/x.md")
    assert caught.value.code == code and words in caught.value.message


@pytest.mark.parametrize(("text", "line", "insert", "result"), [
    ("a\nb\n", 0, "x", "x\na\nb\n"),
    ("a\nb\n", 2, "x\n\n", "a\nb\nx\n"),
    ("a\nb", 1, "x", "a\nx\nb\n"),
    ("", 0, "x", "x\n"),
    ("a\n", 1, "", "a\n\n"),
])
def test_insert_puts_a_line_after_line_n_and_ends_with_a_newline(text: str, line: int, insert: str,
                                                                 result: str) -> None:
    assert insert_at(text, line, insert, "/memories/x.md") == result


@pytest.mark.parametrize("line", [-1, 3, 100])
def test_insert_outside_the_lines_is_refused(line: int) -> None:
    with pytest.raises(InputRejected) as caught:
        insert_at("a\nb\n", line, "x", "/memories/x.md")
    assert caught.value.code == "memtool.insert-line"
    assert "which has 2 lines: use 0 to insert before the first line up to 2" in caught.value.message


def test_the_lines_insert_counts_leave_out_the_empty_tail() -> None:
    assert lines_of("a\nb\n") == ["a", "b"] and lines_of("a\nb") == ["a", "b"] and lines_of("") == []
    assert lines_of("\n") == [""]
