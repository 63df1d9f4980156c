"""Memory files: names, parsing of every accepted shape, canonical rendering."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.errors import InputRejected
from pipeline.store.memory import (
    Memory,
    check_name,
    is_memory_name,
    memory_fields,
    normalize_name,
    parse_memory,
    render_memory,
    sanitize_line,
    windows_reserved,
)

CANONICAL = b"""---
name: Deploy target
description: "production deploys go through: the blue/green script"
type: project
visibility: safe
created: 2026-07-13
modified: 2026-10-02T08:14:03Z
expires: 2027-01-01
---
Run ops/deploy.sh.
"""


def test_parse_reads_every_field_of_the_design_shape() -> None:
    m = parse_memory(CANONICAL, "project_deploy-target.md")
    assert (m.name, m.type, m.visibility) == ("Deploy target", "project", "safe")
    assert m.description == "production deploys go through: the blue/green script"
    assert (m.created, m.modified, m.expires) == ("2026-07-13", "2026-10-02T08:14:03Z", "2027-01-01")
    assert m.body == "Run ops/deploy.sh.\n"


def test_render_of_a_parsed_canonical_file_gives_the_same_bytes() -> None:
    assert render_memory(parse_memory(CANONICAL, "x.md")) == CANONICAL


def test_parse_accepts_crlf_and_the_metadata_type_host_shape() -> None:
    raw = b"---\r\nname: pnpm\r\ndescription: use pnpm\r\nmetadata:\r\n  type: feedback\r\n---\r\nUse pnpm, see [[other-name]].\r\n"
    m = parse_memory(raw, "feedback_pnpm.md")
    assert m.type == "feedback"
    assert "metadata" not in m.extra
    assert m.body == "Use pnpm, see [[other-name]].\n"
    assert b"\r" not in render_memory(m)
    assert b"type: feedback\n" in render_memory(m)


def test_memory_fields_tell_a_missing_field_from_its_default() -> None:
    known, extra, body = memory_fields(b"---\ndescription: b\nmetadata:\n  type: user\n  tool: x\n---\n\nbody\n", "a.md")
    assert known == {"description": "b", "type": "user"}
    assert extra == {"metadata": {"tool": "x"}}
    assert body == "\nbody\n"
    assert memory_fields(CANONICAL)[0]["visibility"] == "safe"


def test_render_leaves_out_the_defaulted_fields_it_is_told_to_and_never_the_description() -> None:
    m = parse_memory(b"---\ndescription: b\n---\nx\n", "a.md")
    assert render_memory(m, omit=("name", "type", "visibility", "description")) == b"---\ndescription: b\n---\nx\n"
    assert render_memory(m, omit=("visibility",)) == b"---\nname: a\ndescription: b\ntype: project\n---\nx\n"


def test_a_memory_without_visibility_is_private() -> None:
    m = parse_memory(b"---\nname: a\ndescription: b\n---\nx\n", "a.md")
    assert m.visibility == "private"


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"no frontmatter\n", "memory.frontmatter"),
        (b"---\nname: a\ndescription: b\n", "memory.frontmatter"),
        (b"---\nname: [a\n---\n", "memory.yaml"),
        (b"---\n- a\n---\n", "memory.frontmatter"),
        (b"---\nname: a\n---\nbody\n", "memory.description"),
        (b"---\ndescription: d\ntype: secret\n---\n", "memory.type"),
        (b"---\ndescription: d\nvisibility: public\n---\n", "memory.visibility"),
        (b"---\ndescription: d\ncreated: yesterday\n---\n", "memory.date"),
        (b"---\ndescription: \xff\n---\n", "memory.encoding"),
        (b"---\ndescription: [1, 2]\n---\n", "memory.field"),
    ],
)
def test_malformed_files_are_rejected_with_a_stable_code(raw: bytes, code: str) -> None:
    with pytest.raises(InputRejected) as info:
        parse_memory(raw, "m.md")
    assert info.value.code == code


@pytest.mark.parametrize("name", ["MEMORY.md", "memory.md", "a.MD", "-a.md", "a b.md", "../a.md", "a/b.md", ".a.md", "a.md.txt", "x" * 130 + ".md"])
def test_invalid_names_are_refused(name: str) -> None:
    with pytest.raises(InputRejected):
        check_name(name)


@pytest.mark.parametrize("name", ["CON.md", "con.md", "Prn.md", "aux.md", "AUX.md", "nul.md", "com0.md", "COM9.md",
                                  "lpt1.md", "Lpt5.md"])
def test_windows_device_names_are_refused_in_any_case(name: str) -> None:
    with pytest.raises(InputRejected) as info:
        check_name(name)
    assert info.value.code == "memory.name-reserved"
    assert info.value.hint
    assert not is_memory_name(name)


@pytest.mark.parametrize("name", ["CON .md", "con..md", "aux. .md", "nul", "COM\u00b9.md", "lpt\u00b3.md",
                                  "AUX.tar.md", "prn. "])
def test_trailing_dot_space_extension_and_superscript_variants_count_as_devices(name: str) -> None:
    assert windows_reserved(name)
    assert not is_memory_name(name)


@pytest.mark.parametrize("name", ["console.md", "auxiliary.md", "com10.md", "lpt.md", "project_aux.md",
                                  "nul-results.md", "con_notes.md"])
def test_names_that_only_start_like_a_device_stay_valid(name: str) -> None:
    assert not windows_reserved(name)
    check_name(name)
    assert is_memory_name(name)


def test_normalize_name_adds_the_extension_once() -> None:
    assert normalize_name("project_x") == "project_x.md"
    assert normalize_name("project_x.md") == "project_x.md"


def test_sanitize_line_drops_controls_and_bidi_and_collapses_whitespace() -> None:
    assert sanitize_line("a\x1b[31m\tb\u202e c\n\n d\u200b") == "a[31m b c d"


def test_descriptions_are_sanitized_when_parsed() -> None:
    m = parse_memory(b'---\ndescription: "two\\nlines\\u202e here"\n---\n', "a.md")
    assert m.description == "two lines here"


texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60)


@settings(max_examples=200, deadline=None)
@given(name=texts, description=texts, body=texts)
def test_render_then_parse_round_trips_any_text(name: str, description: str, body: str) -> None:
    description = sanitize_line(description) or "d"
    name = sanitize_line(name) or "n"
    m = Memory(name=name, description=description, body=body, created="2026-01-01")
    again = parse_memory(render_memory(m), "x.md")
    assert (again.name, again.description) == (name, description)
    assert render_memory(again) == render_memory(m)


_KEYS = ["name", "description", "type", "visibility", "created", "modified", "expires", "other", "Name"]
_VALUES = ["project", "safe", "private", "yes", "No", "null", "~", "true", "2026-02-28", "2026-02-30", "2024-02-29",
           "2026-11-30T12:00:00Z", "2026-11-30T24:00:00Z", '"quoted text"', '"with \\" escape"', "'single'", "a: b",
           "x #y", "#x", "1.5", "42", "(paren)", "/path/x", "_under", "plain words here", "trailing ", "é accent",
           "a\tb", "-dash", "[list]", "{map}", "*star", "&amp", "!tag", "%pct", "@at", "`tick`", "ok:", "? q"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_KEYS), st.sampled_from(_VALUES)), max_size=7))
def test_the_yaml_free_reader_agrees_with_yaml_wherever_it_answers(pairs: list[tuple[str, str]]) -> None:
    import yaml

    from pipeline.errors import InputRejected
    from pipeline.store import memory

    head = "".join(f"{k}: {v}\n" for k, v in pairs)
    fast = memory._canonical_meta(head)
    if fast is None:
        return  # left to YAML
    try:
        slow = memory._normalise(yaml.safe_load(head) or {}, "x.md")
    except (InputRejected, yaml.YAMLError) as exc:  # pragma: no cover - would be a disagreement
        raise AssertionError(f"YAML refuses what the fast reader accepted: {head!r}") from exc
    assert slow == (fast[0], {}) and fast[1] == (), head
