"""evidence.cite: --cite as people write it, the tracked paths a memory's text names, re-anchoring."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.errors import InputRejected
from pipeline.evidence.cite import checked, from_specs, mentioned, parse_spec, reanchor
from pipeline.store.citecheck import anchor
from pipeline.store.evidence import Cite
from pipeline.store.memory import Memory

SOURCE = b"all:\n\techo build\n\nserve:\n\tpython -m http.server 8080\n"


@pytest.mark.parametrize("spec,parsed", [
    ("Makefile", ("Makefile", None, None)), ("Makefile:5", ("Makefile", 5, 5)),
    ("Makefile:4-5", ("Makefile", 4, 5)), ("a:b.txt", ("a:b.txt", None, None)), ("x:-3", ("x:-3", None, None)),
])
def test_a_cite_spec_is_a_path_with_an_optional_line_or_range(spec: str, parsed: tuple[object, ...]) -> None:
    assert parse_spec(spec) == parsed


def test_cites_are_anchored_relative_to_the_root_from_any_directory_inside_it(tmp_path: Path) -> None:
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "deploy.sh").write_bytes(b"#!/bin/sh\nexec blue-green\n")
    (tmp_path / "Makefile").write_bytes(SOURCE)
    cites = from_specs(tmp_path, ["deploy.sh:2", "Makefile"], base=tmp_path / "ops")
    assert [c.where for c in cites] == ["ops/deploy.sh:2", "Makefile"]
    assert from_specs(tmp_path, [str(tmp_path / "Makefile") + ":5"]) == (anchor("Makefile", SOURCE, 5, 5),)


@pytest.mark.parametrize("spec,code", [("../outside.txt", "evidence.path"), ("/etc/hostname", "evidence.path"),
                                       ("absent.md", "evidence.path"), ("Makefile:40", "evidence.range")])
def test_a_cite_outside_the_repository_or_past_the_file_is_refused(tmp_path: Path, spec: str, code: str) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "Makefile").write_bytes(SOURCE)
    (tmp_path / "outside.txt").write_text("x\n")
    with pytest.raises(InputRejected) as caught:
        from_specs(repo, [spec], base=repo)
    assert caught.value.code == code


def test_only_tracked_files_the_text_names_as_paths_are_cited_for_existence() -> None:
    memory = Memory("Deploy", "deploys run `ops/deploy.sh` and blue/green", body="see docs/guide.md and README")
    tracked = {"ops/deploy.sh", "docs/guide.md", "README.md"}
    assert mentioned(memory, tracked) == (Cite("ops/deploy.sh"), Cite("docs/guide.md"))
    assert mentioned(memory, None) == ()


def test_reanchoring_follows_moved_text_a_rename_and_drops_a_gone_file(tmp_path: Path) -> None:
    (tmp_path / "build.mk").write_bytes(b"# moved\n" + SOURCE.replace(b"8080", b"9090"))
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("a\n")
    old = (anchor("Makefile", SOURCE, 5, 5), Cite("docs/a.md"), Cite("gone.txt"))
    cites, notes = reanchor(tmp_path, old, {"Makefile": "build.mk"}.get)
    assert cites == (anchor("build.mk", b"# moved\n" + SOURCE.replace(b"8080", b"9090"), 5, 5), Cite("docs/a.md"))
    assert notes == ["re-anchored Makefile:5 to build.mk:5", "dropped gone.txt: the file is gone"]


def test_a_reader_gets_each_citation_status_and_the_marks_of_the_drifted(tmp_path: Path) -> None:
    (tmp_path / "Makefile").write_bytes(SOURCE.replace(b"8080", b"9090"))
    shown = checked(tmp_path, (anchor("Makefile", SOURCE, 5, 5),))
    assert [e["status"] for e in shown["evidence"]] == ["changed"]
    assert shown["marks"] == ["[code changed since this was written: Makefile:5]"]
    assert checked(None, (Cite("x"),)) == {} and checked(tmp_path, ()) == {}
