"""bench.evidence: the labelled evaluation through the real commands, on a repository made here, and the
shape of the shipped labelled set (psf/requests, two tags)."""

from __future__ import annotations

import json
from pathlib import Path

from team_repo import git

from pipeline.bench.evidence import SET, evaluate, mentions
from pipeline.evidence.cite import parse_spec


def _commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=Dev", "-c", "user.email=dev@example.org", "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").stdout.strip()


def _repo(tmp_path: Path) -> tuple[Path, str, str]:
    repo = tmp_path / "upstream"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "Makefile").write_text("test:\n\tpytest -q\nserve:\n\tpython -m http.server 8080\n")
    (repo / "setup.cfg").write_text("[metadata]\nlicense_file = LICENSE\n")
    (repo / "old.ini").write_text("[pytest]\naddopts = -q\n")
    old = _commit(repo, "one")
    (repo / "Makefile").write_text("# build\ntest:\n\tpytest -q\nserve:\n\tpython -m http.server 9090\n")
    (repo / "setup.cfg").write_text("[metadata]\nlicense_file = LICENSE\n\n[flake8]\nignore = E501\n")
    (repo / "old.ini").unlink()
    return repo, old, _commit(repo, "two")


def test_recall_and_false_alarms_are_counted_from_what_status_marks(tmp_path: Path) -> None:
    repo, old, new = _repo(tmp_path)
    memories = [
        {"name": "project_port", "description": "the dev server listens on 8080", "body": "See the Makefile.",
         "cite": "Makefile:4", "holds": False},
        {"name": "project_test", "description": "make test runs pytest quietly", "body": "In the Makefile too.",
         "cite": "Makefile:1-2", "holds": True},
        {"name": "project_license", "description": "the license file is LICENSE", "body": "setup.cfg says so.",
         "cite": "setup.cfg", "holds": True},
        {"name": "project_quiet", "description": "pytest options live in old.ini", "body": "Read old.ini.",
         "cite": "old.ini:2", "holds": False},
    ]
    labelled = {"repository": "local/test", "written_at": {"tag": "one", "commit": old},
                "checked_at": {"tag": "two", "commit": new}, "memories": memories}
    work = tmp_path / "eval"
    work.mkdir()
    result = evaluate(repo, labelled, work)
    cited = result["cited"]
    assert (result["memories"], result["stale"]) == (4, 2)
    # The whole-file citation of setup.cfg changes with any line: a false alarm; the moved test target is not.
    assert cited["missed"] == [] and cited["recall"] == 1.0
    assert cited["falseAlarms"] == ["project_license"] and cited["marked"] == 3
    assert cited["statuses"] == {"changed": 2, "gone": 1} and cited["blockAgrees"] is True
    named = result["named"]
    # Named paths are cited for their existence only: the gone file alone is marked.
    assert named["missed"] == ["project_port"] and named["falseAlarms"] == [] and named["statuses"] == {"gone": 1}
    assert named["detected"] == {"paths": 4, "right": 4, "memoriesWithNone": 0, "wrong": []}


def test_the_shipped_set_names_the_repository_both_commits_and_labels_every_memory() -> None:
    labelled = json.loads(SET.read_text())
    assert labelled["repository"] == "psf/requests"
    assert (labelled["written_at"]["tag"], labelled["checked_at"]["tag"]) == ("v2.25.0", "v2.31.0")
    for point in ("written_at", "checked_at"):
        commit = labelled[point]["commit"]
        assert len(commit) == 40 and all(c in "0123456789abcdef" for c in commit)
    memories = labelled["memories"]
    assert len(memories) == 50 and len({m["name"] for m in memories}) == 50
    assert len({m["body"] for m in memories}) == 50  # no two are near-duplicates to the store
    for memory in memories:
        path, start, _ = parse_spec(memory["cite"])
        assert path and start is not None and isinstance(memory["holds"], bool) and memory["why"]
    assert sum(not m["holds"] for m in memories) == 23


def test_mentions_are_counted_against_each_text_s_own_repository(tmp_path: Path) -> None:
    upstream = tmp_path / "mirrors" / "acme+app" / "repo"
    upstream.mkdir(parents=True)
    git(upstream, "init", "-q")
    (upstream / "ops").mkdir()
    (upstream / "ops" / "deploy.sh").write_text("#!/bin/sh\n")
    commit = _commit(upstream, "app")
    corpus = tmp_path / "corpus.jsonl"
    rows = [{"source": f"acme/app@{commit[:12]}:AGENTS.md", "text": "Deploy with `ops/deploy.sh`; see docs/x.md."},
            {"source": "absent/repo@0123456789ab:AGENTS.md", "text": "Run ops/deploy.sh."}]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    found = mentions(tmp_path / "mirrors", corpus)
    assert (found["texts"], found["repositories"], found["pathTokens"], found["cited"]) == (1, 1, 2, 1)
    assert found["examples"][0]["path"] == "ops/deploy.sh"
