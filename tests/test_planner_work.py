"""The planner's working state: what a merge chain through a memory the plan itself created resolves to."""

from __future__ import annotations

from pipeline.planner.plan import _clusters, _operations, final
from pipeline.planner.work import Work
from pipeline.store.memory import Memory, parse_memory
from pipeline.store.state import Limits


def _memory(name: str, visibility: str, body: str) -> Memory:
    return parse_memory(f"---\nname: {name}\ndescription: {name} fact\ntype: project\nvisibility: {visibility}\n"
                        f"created: 2026-11-01\nmodified: 2026-11-01T09:00:00Z\n---\n{body}\n".encode(), f"{name}.md")


def test_a_memory_merged_into_a_created_one_that_is_merged_away_is_deleted_into_where_that_went() -> None:
    """A session candidate becomes a new memory, absorbs a duplicate, and is later itself merged into a
    safe memory: the new memory is never written, so the duplicate's delete must name the safe one."""
    x, d = _memory("x", "private", "- alpha"), _memory("d", "safe", "- alpha\n- beta")
    work = Work({"x.md": x, "d.md": d}, {"x.md": x, "d.md": d, "c.md": _memory("c", "private", "- beta")}, {},
                Limits(), "2026-12-01")
    work.created.add("c.md")
    assert work.absorb("c.md", ["x.md"], "SUBSUMED", "a duplicate of c.md") == ["x.md"]
    assert work.absorb("d.md", ["c.md"], "SUBSUMED", "a private copy of the safe d.md") == ["c.md"]
    assert sorted(work.live) == ["d.md"] and not work.created
    assert final(work, "x.md") == "d.md"
    deletes = {op["name"]: op.get("into") for op in _operations(work) if op["kind"] == "delete"}
    assert deletes == {"x.md": "d.md"}, "no delete names a file the plan never writes"
    assert {c["name"]: c["files"] for c in _clusters(work, ["d.md", "x.md"])} == {"d": ["d.md", "x.md"]}
    assert "c.md" not in {op["name"] for op in _operations(work)}
