"""Ranking: token sets are kept per parsed memory, so a memory changed on disk ranks by its new words."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from conftest import Env
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.store import state
from pipeline.store.memory import Memory
from pipeline.store.search import rank


def test_rank_scores_name_description_and_body_of_each_memory_object() -> None:
    old = Memory(name="deploy", description="how we deploy", body="blue green")
    new = Memory(name="deploy", description="how we roll back", body="canary")
    assert rank("deploy green", {"project_deploy.md": old}) == [("project_deploy.md", 3 + 2 + 1)]
    assert rank("deploy green", {"project_deploy.md": new}) == [("project_deploy.md", 3)]
    assert rank("canary", {"project_deploy.md": new, "project_other.md": old}) == [("project_deploy.md", 1)]


def test_the_mcp_backend_searches_a_memory_edited_behind_its_back(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.commands import _app
    from pipeline.hosts.cron import DuePolicy
    from pipeline.hosts.mcp_server import Backend

    monkeypatch.setattr(state, "_SETTLED_NS", -1)  # unchanged files are answered from the cache
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


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aZ9 _-.\t\nxyQ0é\u212a\u0130ßﬁ")), max_size=40))
def test_tokens_are_the_lowercased_alphanumeric_runs_without_stop_words(text: str) -> None:
    from pipeline.store import search

    expected = {t for t in re.findall(r"[a-z0-9]+", text.lower()) if t not in search._STOP}
    assert search.tokens(text) == expected
