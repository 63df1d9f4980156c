"""evidence.drift: drifted memories with the cited lines that changed, from git's committed versions."""

from __future__ import annotations

from pathlib import Path

from team_repo import git

from pipeline.evidence.drift import Drift, unified
from pipeline.store.citecheck import anchor
from pipeline.store.memory import Memory

SOURCE = "all:\n\techo build\n\nserve:\n\tpython -m http.server 8080\n"


def _commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=Dev", "-c", "user.email=dev@example.org", "commit", "-q", "-m", message)


def test_the_changed_lines_come_from_the_newest_commit_that_holds_the_cited_text(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "Makefile").write_text(SOURCE)
    _commit(tmp_path, "one")
    (tmp_path / "Makefile").write_text("# header\n" + SOURCE)
    _commit(tmp_path, "two")
    memory = Memory("Port", "port 8080", evidence=(anchor("Makefile", ("# header\n" + SOURCE).encode(), 6, 6),))
    (tmp_path / "Makefile").write_text("# header\n" + SOURCE.replace("8080", "9090") + "lint:\n\truff\n")
    report = Drift(tmp_path, {"project_port.md": memory}).report({"project_port.md": memory})
    (entry,) = report
    assert entry["marks"] == ["[code changed since this was written: Makefile:6]"]
    diff = entry["evidence"][0]["diff"]
    assert "-\tpython -m http.server 8080" in diff and "+\tpython -m http.server 9090" in diff


def test_text_never_committed_has_nothing_to_compare_and_says_so(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "Makefile").write_text(SOURCE)
    memory = Memory("Port", "port 8080", evidence=(anchor("Makefile", SOURCE.encode(), 5, 5),))
    (tmp_path / "Makefile").write_text(SOURCE.replace("8080", "9090"))
    (entry,) = Drift(tmp_path, {"m.md": memory}).report({"m.md": memory})
    assert entry["evidence"][0]["diff"] == ["(no commit holds the cited text of Makefile: nothing to compare)"]


def test_only_hunks_that_touch_the_cited_lines_are_shown() -> None:
    old = b"a\nb\nc\nd\ne\n"
    new = b"A\nb\nC\nd\ne\nf\n"
    assert unified(old, new, 3, 3, "x", "x") == ["@@ x:3-3 -> x:3-3 @@", "-c", "+C"]
    assert unified(old, new, None, None, "x", "x")[-2:] == ["@@ x:6-6 -> x:6-6 @@", "+f"]
