"""The validation context's per-operation content: made once per operation, never for another one."""

from __future__ import annotations

import pytest

from pipeline.errors import InputRejected
from pipeline.fsutil import sha256_bytes
from pipeline.store.memory import Memory, render_memory
from pipeline.validation.context import Content, Context

TEXT = render_memory(Memory(name="a", description="first fact", body="the build runs twice")).decode()


def _context(plan: dict[str, object]) -> Context:
    return Context(plan, None, None, ".", None, False, None)  # type: ignore[arg-type]


def test_an_operation_content_is_encoded_hashed_and_parsed_once() -> None:
    op = {"name": "project_a.md", "content": TEXT}
    ctx = _context({"operations": [op]})
    content = ctx.content(0, op)
    assert ctx.content(0, op) is content
    assert content.data == TEXT.encode() and content.digest == sha256_bytes(TEXT.encode())
    assert content.memory() is content.memory()
    assert content.memory().description == "first fact"


def test_another_operation_at_the_same_index_gets_its_own_content() -> None:
    first = {"name": "project_a.md", "content": TEXT}
    ctx = _context({"operations": [first]})
    assert ctx.content(0, first).memory().description == "first fact"
    second = {"name": "project_a.md", "content": TEXT.replace("first fact", "second fact")}
    assert ctx.content(0, second).memory().description == "second fact"
    assert ctx.content(0, second).digest == sha256_bytes(second["content"].encode())


def test_content_that_does_not_parse_raises_the_parsers_error_each_time() -> None:
    content = Content({"name": "project_b.md", "content": "no frontmatter at all"})
    for _ in range(2):
        with pytest.raises(InputRejected):
            content.memory()


def test_a_lone_surrogate_leaves_no_bytes() -> None:
    assert Content({"name": "project_c.md", "content": "bad \ud800 text"}).data is None
