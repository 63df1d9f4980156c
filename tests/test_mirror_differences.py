"""mirror check and status report every difference between the safe memories and .memory/ as on disk."""

from __future__ import annotations

import pytest
from conftest import Env


@pytest.fixture
def shared(env: Env) -> Env:
    assert env.run("add", "project_ci", "-d", "CI runs on every push", "--visibility", "safe").code == 0
    assert env.run("add", "project_api", "-d", "REST handlers return problem+json", "--visibility", "safe").code == 0
    result = env.run("mirror", "check")
    assert result.code == 0 and "mirror clean" in result.out
    return env


def _codes(env: Env) -> dict[str, str]:
    result = env.run("--json", "mirror", "check")
    assert result.code == 7, result.out
    return {e["path"]: e["code"] for e in result.json()["errors"]}


def test_a_deleted_safe_mirror_file_is_no_problem_of_the_mirror_but_status_names_it_as_coming_from_outside(
        shared: Env) -> None:
    (shared.mirror / "project_ci.md").unlink()
    assert shared.run("mirror", "check").code == 0  # nothing is published by a deletion
    held = shared.run("--json", "status").json()["team"]["held"]
    assert [(h["name"], h["code"]) for h in held] == [("project_ci.md", "held.untrusted")]
    assert "deleted in the mirror" in held[0]["problem"]


def test_an_extra_memory_file_from_outside_is_held_in_an_untrusted_project_and_adopted_in_a_trusted_one(
        shared: Env) -> None:
    data = b"---\ndescription: not from the store\nvisibility: safe\n---\nextra\n"
    (shared.mirror / "project_extra.md").write_bytes(data)
    assert shared.run("--json", "mirror", "check").code == 0  # a clean memory file: nothing wrong to publish
    held = shared.run("--json", "status").json()["team"]["held"]
    assert [(h["name"], h["code"]) for h in held] == [("project_extra.md", "held.untrusted")]
    assert shared.run("trust").code == 0
    assert (shared.harness / "project_extra.md").read_bytes() == data
    assert "project_extra.md" in (shared.mirror / "MEMORY.md").read_text()


def test_a_stray_file_that_is_no_memory_is_reported(shared: Env) -> None:
    (shared.mirror / "notes.txt").write_text("scratch\n")
    assert _codes(shared)[".memory/notes.txt"] == "mirror.name"


def test_a_mirror_past_its_count_bound_is_reported_and_read_only_to_the_bound(shared: Env) -> None:
    (shared.home / "config.yaml").write_text("limits:\n  max_files: 10\n")
    for i in range(40):
        (shared.mirror / f"project_n{i:03d}.md").write_text(f"---\ndescription: n{i}\nvisibility: safe\n---\n")
    result = shared.run("--json", "mirror", "check")
    assert result.code == 7
    errors = result.json()["errors"]
    bound = [e for e in errors if e["code"] == "bounds.file-count"]
    assert bound and "43 entries" in bound[0]["message"]  # 2 memories, 40 strays and the index
    assert not any(e["path"] == ".memory/project_n039.md" for e in errors)  # past the bound: not read
