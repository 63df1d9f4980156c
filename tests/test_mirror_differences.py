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


def test_a_deleted_safe_mirror_file_is_reported_by_mirror_check_and_status(shared: Env) -> None:
    (shared.mirror / "project_ci.md").unlink()
    assert _codes(shared)[".memory/project_ci.md"] == "mirror.missing"
    drift = shared.run("--json", "status").json()["drift"]
    assert any("project_ci.md is missing from the mirror" in line for line in drift)


def test_an_extra_unindexed_memory_file_is_reported(shared: Env) -> None:
    (shared.mirror / "project_extra.md").write_text("---\ndescription: not from the store\nvisibility: safe\n---\n")
    result = shared.run("--json", "mirror", "check")
    assert result.code == 7
    extra = [e for e in result.json()["errors"] if e["path"] == ".memory/project_extra.md"]
    assert [e["code"] for e in extra] == ["mirror.extra"] and "MEMORY.md does not list it" in extra[0]["message"]
    assert any("project_extra.md" in line for line in shared.run("--json", "status").json()["drift"])


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
    assert bound and "44 entries" in bound[0]["message"]  # 2 memories, 40 strays, the index, the chain head
    assert not any(e["path"] == ".memory/project_n039.md" for e in errors)  # past the bound: not read
