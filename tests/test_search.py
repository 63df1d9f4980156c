"""Search in a long-lived process (the MCP server) and the token sets the planner compares."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from conftest import Env
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.errors import UsageError
from pipeline.store import files


def test_the_mcp_backend_searches_a_memory_edited_behind_its_back(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.apply.due import DuePolicy
    from pipeline.commands import _app
    from pipeline.hosts.mcp_server import Backend

    monkeypatch.setattr(files, "_SETTLED_NS", -1)  # unchanged files are answered from the cache
    assert env.run("add", "project_cache", "-d", "alpha topic", "-b", "body words").code == 0
    _app.STATE.home, _app.STATE.project = env.home, env.project
    backend = Backend(svc=_app.services(privacy=False), lock_timeout=5, workers={}, due_policy=DuePolicy(24, 10))
    assert [r["file"] for r in backend.search("alpha", 10)["results"]] == ["project_cache.md"]
    path: Path = env.harness / "project_cache.md"
    time.sleep(0.03)  # the next write lands in a later timestamp tick
    data = path.read_bytes()
    path.write_bytes(data.replace(b"alpha", b"gamma"))  # in place, same size
    assert backend.search("alpha", 10)["results"] == []
    assert [r["description"] for r in backend.search("gamma", 10)["results"]] == ["gamma topic"]
    assert [r["description"] for r in backend.list_memories()["memories"]] == ["gamma topic"]


def test_the_mcp_backend_never_returns_a_memory_forgotten_while_it_runs(env: Env) -> None:
    from pipeline.apply.due import DuePolicy
    from pipeline.commands import _app
    from pipeline.hosts.mcp_server import Backend

    for name in ("project_deploy-a", "project_deploy-b"):
        assert env.run("add", name, "-d", f"deploy notes {name}", "-b", f"deploy body of {name}").code == 0
    _app.STATE.home, _app.STATE.project = env.home, env.project
    backend = Backend(svc=_app.services(privacy=False), lock_timeout=5, workers={}, due_policy=DuePolicy(24, 10))
    assert len(backend.search("deploy", 10)["results"]) == 2
    backend.forget("project_deploy-a")
    assert [r["file"] for r in backend.search("deploy", 10)["results"]] == ["project_deploy-b.md"]
    assert env.run("forget", "project_deploy-b").code == 0  # by another process
    assert backend.search("deploy", 10)["results"] == []
    with pytest.raises(UsageError):
        backend.search("  ", 10)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aZ9 _-.\t\nxyQ0é\u212a\u0130ßﬁ")), max_size=40))
def test_tokens_are_the_lowercased_alphanumeric_runs_without_stop_words(text: str) -> None:
    from pipeline.store import search

    expected = {t for t in re.findall(r"[a-z0-9]+", text.lower()) if t not in search._STOP}
    assert search.tokens(text) == expected
