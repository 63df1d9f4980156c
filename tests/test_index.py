"""The MEMORY.md index: the last rendering is reused only for the very same memories under the same names."""

from __future__ import annotations

from pipeline.store.index import HEADER, index_line, render_index
from pipeline.store.memory import Memory


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
