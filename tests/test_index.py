"""The MEMORY.md index: the last rendering is reused only for the very same memories under the same names."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.store.index import HEADER, IndexText, capacity, index_line, render_index
from pipeline.store.memory import Memory
from pipeline.store.state import Limits


def _memory(name: str, description: str, visibility: str = "safe") -> Memory:
    return Memory(name=name, description=description, type="project", visibility=visibility,
                  created="2026-11-01", modified="2026-11-01T10:00:00Z", expires=None, body="body\n", extra={})


def _fresh(memories: dict[str, Memory], *, mirror: bool) -> bytes:
    lines = [index_line(n, memories[n], private_marker=not mirror) for n in sorted(memories)
             if not mirror or memories[n].is_safe]
    return (HEADER + ("\n" + "\n".join(lines) + "\n" if lines else "")).encode("utf-8")


def test_an_index_of_a_mapping_changed_in_place_is_rendered_again() -> None:
    memories = {"project_a.md": _memory("a", "first"), "project_b.md": _memory("b", "second", "private")}
    first = render_index(memories, mirror=False)
    assert first == _fresh(memories, mirror=False)
    assert render_index(memories, mirror=False) is first  # same mapping, same objects: the same bytes

    memories["project_a.md"] = _memory("a", "first, reworded")  # replaced in place, same names and length
    again = render_index(memories, mirror=False)
    assert b"first, reworded" in again and again == _fresh(memories, mirror=False)

    memories["project_c.md"] = _memory("c", "third")
    del memories["project_b.md"]
    assert render_index(memories, mirror=False) == _fresh(memories, mirror=False)
    assert b"second" not in render_index(memories, mirror=False)


def test_the_private_and_the_mirror_index_of_one_mapping_are_kept_apart() -> None:
    memories = {"project_a.md": _memory("a", "shared"), "project_b.md": _memory("b", "kept back", "private")}
    private, mirror = render_index(memories, mirror=False), render_index(memories, mirror=True)
    assert b"(harness only)" in private and b"kept back" in private
    assert b"kept back" not in mirror and b"(harness only)" not in mirror
    assert render_index(memories, mirror=False) == private and render_index(memories, mirror=True) == mirror
    assert render_index(dict(memories), mirror=True) == mirror == _fresh(memories, mirror=True)


CHANGES = st.lists(st.tuples(st.integers(0, 30), st.sampled_from(["safe", "private", "gone"]),
                             st.sampled_from(["plain", "[bracketed] \\ title", "é non-ascii", "x" * 200,
                                              "split\u2028- here", "ends\r", "new\n- line"])),
                   max_size=12)


@settings(max_examples=150, deadline=None)
@given(start=CHANGES, steps=st.lists(CHANGES, min_size=1, max_size=4))
def test_an_index_updated_where_memories_changed_renders_as_the_whole_index(
        start: list[tuple[int, str, str]], steps: list[list[tuple[int, str, str]]]) -> None:
    def apply(memories: dict[str, Memory], changes: list[tuple[int, str, str]]) -> list[str]:
        touched = []
        for at, visibility, words in changes:
            name = f"project_m{at:02d}.md"
            touched.append(name)
            if visibility == "gone":
                memories.pop(name, None)
            else:
                memories[name] = _memory(f"{words} {at}", f"{words} about {at}", visibility)
        return touched

    memories: dict[str, Memory] = {}
    apply(memories, start)
    indexes = [IndexText.of(memories, mirror=False), IndexText.of(memories, mirror=True)]
    for changes in steps:
        touched = apply(memories, changes)
        indexes = [index.after(memories, touched) for index in indexes]
        for index in indexes:
            assert index.data == _fresh(memories, mirror=index.mirror) == render_index(memories, mirror=index.mirror)
            assert index.names == sorted(index.lines)
            listed = sum(1 for line in index.data.decode("utf-8").splitlines() if line.startswith("- "))
            assert capacity(index.data, Limits()).lines == listed == capacity(index.data + b" ", Limits()).lines


def test_an_index_left_as_it_was_keeps_its_bytes_and_hash() -> None:
    memories = {"project_a.md": _memory("a", "shared"), "project_b.md": _memory("b", "kept back", "private")}
    mirror = IndexText.of(memories, mirror=True)
    digest = mirror.digest()
    memories["project_c.md"] = _memory("c", "also private", "private")
    assert mirror.after(memories, ["project_c.md"]) is mirror and mirror.digest() == digest


def test_capacity_counts_index_lines_as_a_line_split_does() -> None:
    limits = Limits()
    for text in ("# Memory Index\n\n- [a](a.md) — one\n- [b](b.md) — two\n", "- first\n- second",
                 "# x\r\n- a\r- b\n", "# x\u2028- a\n-b\n- c\x85- d\n", "", "- \n\n- \n"):
        data = text.encode("utf-8")
        expected = sum(1 for line in text.splitlines() if line.startswith("- "))
        assert capacity(data, limits).lines == expected, text
        assert capacity(data, limits).bytes == len(data)
