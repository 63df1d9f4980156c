"""The MCP server's kept read view (mirror/team.py ``LiveView``): read once, answered again while the
kernel reports no change to either root and the project's trust stays what it was."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import Env
from test_warm import _backend, count_calls

from pipeline.mirror import team

TEAMMATE = b"---\ndescription: staging deploys need the VPN\ntype: project\nvisibility: safe\n---\nstaging body\n"


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry for each time a view was read from disk."""
    return count_calls(monkeypatch, team, "read_view")


@pytest.fixture
def shared(env: Env) -> Env:
    for name, words in (("project_ci", "CI runs on every push"), ("project_api", "handlers return problem json"),
                        ("project_db", "the database listens on port 5433"),
                        ("project_docs", "docs are built with mkdocs")):
        assert env.run("add", name, "-d", words, "-b", f"{words} body", "--visibility", "safe").code == 0
    return env


def _files(out: dict[str, Any]) -> list[str]:
    return [row["file"] for row in out["results"]]


def test_reads_with_nothing_changed_read_the_store_once(shared: Env, reads: list[int]) -> None:
    backend = _backend(shared)
    assert _files(backend.search("push", 10)) == ["project_ci.md"]
    assert _files(backend.search("handlers", 10)) == ["project_api.md"]
    assert [row["file"] for row in backend.list_memories()["memories"]] == [
        "project_api.md", "project_ci.md", "project_db.md", "project_docs.md"]
    assert backend.show("project_ci")["body"] == "CI runs on every push body\n"
    assert len(reads) == 1


def test_an_edit_in_place_by_another_program_is_read_at_the_next_call(shared: Env, reads: list[int]) -> None:
    backend = _backend(shared)
    assert _files(backend.search("push", 10)) == ["project_ci.md"]
    path = shared.harness / "project_ci.md"
    data = path.read_bytes()
    with open(path, "r+b") as handle:  # same size, same file: no rename, no new directory entry
        handle.write(data.replace(b"push", b"tags"))
    assert backend.search("push", 10)["results"] == []
    assert _files(backend.search("tags", 10)) == ["project_ci.md"]
    assert backend.show("project_ci")["description"] == "CI runs on every tags"
    assert len(reads) == 2


def test_a_teammates_file_that_git_brings_is_shown_at_the_next_call(shared: Env, reads: list[int]) -> None:
    assert shared.run("trust").code == 0
    backend = _backend(shared)
    assert backend.search("staging", 10)["results"] == []
    (shared.mirror / "project_staging.md").write_bytes(TEAMMATE)
    hits = backend.search("staging", 10)["results"]
    assert [(h["file"], h["origin"], h["path"]) for h in hits] == [
        ("project_staging.md", "team", ".memory/project_staging.md")]
    # A view with a teammate's memory to adopt also depends on git: it is read on every call.
    backend.list_memories()
    assert len(reads) == 3


def test_a_changed_trust_list_is_read_at_the_next_call(shared: Env, reads: list[int]) -> None:
    from pipeline.mirror.trust import set_trust

    (shared.mirror / "project_staging.md").write_bytes(TEAMMATE)
    backend = _backend(shared)
    assert backend.search("staging", 10)["results"] == []  # untrusted: nothing of the mirror is shown
    assert backend.search("staging", 10)["results"] == []
    assert len(reads) == 1
    # The trust list lives in the home, outside both roots, and is written here without a sync.
    assert set_trust(shared.home, shared.project, True)
    assert [h["origin"] for h in backend.search("staging", 10)["results"]] == ["team"]
    assert set_trust(shared.home, shared.project, False)
    assert backend.search("staging", 10)["results"] == []
    assert len(reads) == 3


def test_files_a_read_never_looks_at_do_not_cost_a_read(shared: Env, reads: list[int]) -> None:
    backend = _backend(shared)
    backend.search("push", 10)
    (shared.harness / "notes.txt").write_bytes(b"scratch\n")
    (shared.mirror / "README").write_bytes(b"team notes\n")
    assert _files(backend.search("push", 10)) == ["project_ci.md"]
    assert len(reads) == 1
    (shared.harness / "Project_New.MD").write_bytes(b"---\ndescription: x\n---\n")  # a name read_root judges
    backend.search("push", 10)
    assert len(reads) == 2


def test_a_root_moved_away_and_back_is_watched_again(shared: Env, reads: list[int], tmp_path: Path) -> None:
    backend = _backend(shared)
    backend.search("push", 10)
    aside = tmp_path / "aside"
    shutil.move(str(shared.harness), aside)
    shutil.copytree(aside, shared.harness)  # a new directory: the old watch lost track of it
    (shared.harness / "project_ci.md").write_bytes(
        (aside / "project_ci.md").read_bytes().replace(b"push", b"merge"))
    assert _files(backend.search("merge", 10)) == ["project_ci.md"]
    with open(shared.harness / "project_ci.md", "r+b") as handle:
        data = handle.read()
        handle.seek(0)
        handle.write(data.replace(b"merge", b"patch"))
    assert _files(backend.search("patch", 10)) == ["project_ci.md"]  # the new directory is watched
    assert backend.search("merge", 10)["results"] == []
    assert len(reads) == 3
    backend.search("patch", 10)
    assert len(reads) == 3


def test_without_kernel_notices_every_call_reads(shared: Env, reads: list[int],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(team, "open_watch", lambda roots: None)  # another OS, or no free inotify instance
    backend = _backend(shared)
    for _ in range(3):
        assert _files(backend.search("push", 10)) == ["project_ci.md"]
    assert len(reads) == 3


def test_closing_the_view_releases_its_watch(shared: Env) -> None:
    from conftest import inotify_count

    before = inotify_count()
    backend = _backend(shared)
    backend.search("push", 10)
    assert inotify_count() == before + 1
    backend.live.close()
    assert inotify_count() == before
    assert _files(backend.search("push", 10)) == ["project_ci.md"]  # reads again, and watches again
    assert inotify_count() == before + 1
    backend.live.close()


def test_the_global_store_is_watched_alone(env: Env, reads: list[int]) -> None:
    import datetime as dt

    from pipeline.apply.commit import Services
    from pipeline.apply.due import DuePolicy
    from pipeline.hosts.mcp_server import Backend
    from pipeline.paths import global_layout
    from pipeline.store.state import Limits

    for name, words in (("user_editor", "prefers vim keys"), ("user_shell", "uses zsh with starship"),
                        ("user_tests", "runs tests before every commit")):
        assert env.run("--global", "add", name, "-d", words, "-b", words).code == 0
    svc = Services(layout=global_layout(env.home), limits=Limits(), clock=lambda: dt.datetime.now(dt.UTC),
                   ruleset=None)
    backend = Backend(svc=svc, lock_timeout=5, workers={}, due_policy=DuePolicy(24, 10))
    assert _files(backend.search("vim", 10)) == ["user_editor.md"]
    assert backend.live.watch is not None and list(backend.live.watch.roots.values()) == [str(svc.layout.harness)]
    (svc.layout.harness / "user_editor.md").write_bytes(
        (svc.layout.harness / "user_editor.md").read_bytes().replace(b"vim", b"emacs"))
    assert _files(backend.search("emacs", 10)) == ["user_editor.md"]
    assert _files(backend.search("emacs", 10)) == ["user_editor.md"]
    assert len(reads) == 2


def _rewrite_in_place(path: Path, old: bytes, new: bytes) -> None:
    """What an editor that saves in place does: the same inode truncated and written, no directory change."""
    data = path.read_bytes()
    with open(path, "r+b") as handle:
        handle.truncate(0)
        handle.write(data.replace(old, new))


def test_a_word_written_in_place_is_found_by_the_first_search_for_it(shared: Env) -> None:
    backend = _backend(shared)
    assert _files(backend.search("mkdocs", 10)) == ["project_docs.md"]
    dir_before = shared.harness.stat()
    _rewrite_in_place(shared.harness / "project_db.md", b"port 5433", b"port 5433 behind pgbouncer")
    assert (shared.harness.stat().st_mtime_ns, shared.harness.stat().st_ino) == (
        dir_before.st_mtime_ns, dir_before.st_ino)  # nothing in the directory's own stat shows the edit
    assert _files(backend.search("pgbouncer", 10)) == ["project_db.md"]
    assert _files(backend.search("pgbouncer", 10)) == ["project_db.md"]


def test_the_cli_search_finds_a_word_written_in_place(shared: Env) -> None:
    assert shared.run("search", "mkdocs").out.split()[0] == "project_docs.md"  # the index exists and is current
    _rewrite_in_place(shared.harness / "project_db.md", b"port 5433", b"port 5433 behind pgbouncer")
    result = shared.run("--json", "search", "pgbouncer")
    assert result.code == 0
    assert [r["file"] for r in result.json()["results"]] == ["project_db.md"]


def test_a_search_with_nothing_changed_leaves_the_index_file_alone(shared: Env) -> None:
    from pipeline.store.searchdb import SETTLED_NS, cache_file

    # Until its files are older than a timestamp tick can hide, a row is checked by its bytes, not its stat.
    time.sleep(SETTLED_NS / 1e9 + 0.1)
    backend = _backend(shared)
    backend.search("mkdocs", 10)
    index = Path(cache_file(str(backend.svc.layout.project_home), "memory"))
    before = index.stat()
    for _ in range(3):
        assert _files(backend.search("mkdocs", 10)) == ["project_docs.md"]
    assert shared.run("search", "mkdocs").code == 0
    after = index.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)


def test_a_dropped_server_gives_its_inotify_instances_back(shared: Env) -> None:
    import gc

    from conftest import inotify_count

    before = inotify_count()
    backend = _backend(shared)
    backend.search("push", 10)
    backend.add("project_more", "one more note for the release", "body", "project", "private", None)
    assert inotify_count() == before + 2  # the kept view's watch and the kept pre-state's
    del backend
    gc.collect()
    assert inotify_count() == before


def test_a_word_saved_in_place_into_a_teammates_pending_memory_is_found(shared: Env) -> None:
    assert shared.run("trust").code == 0
    backend = _backend(shared)
    (shared.mirror / "project_staging.md").write_bytes(TEAMMATE)  # as a pull leaves it, before any write
    assert [h["origin"] for h in backend.search("staging", 10)["results"]] == ["team"]
    _rewrite_in_place(shared.mirror / "project_staging.md", b"need the VPN", b"need the VPN and the bastion")
    hits = backend.search("bastion", 10)["results"]
    assert [(h["file"], h["origin"]) for h in hits][:1] == [("project_staging.md", "team")]
    result = shared.run("--json", "search", "bastion")
    assert [(r["file"], r["origin"]) for r in result.json()["results"]][:1] == [("project_staging.md", "team")]
