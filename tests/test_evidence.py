"""store.evidence: citations in the frontmatter, their hashes, finding moved text, and the kept marks."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.errors import InputRejected
from pipeline.store import citecheck, evidence
from pipeline.store.citecheck import anchor, check, locate
from pipeline.store.evidence import CHANGED, GONE, HOLDS, MOVED, RENAMED, Cite
from pipeline.store.memory import Memory, _normalise, parse_memory, render_memory

SOURCE = b"all:\n\techo build\n\nserve:\n\tpython -m http.server 8080\n"


def _memory(*cites: Cite) -> Memory:
    return Memory("Port", "the dev server listens on 8080", evidence=cites, body="make serve\n")


def test_a_memory_with_citations_renders_and_parses_back_to_the_same_memory() -> None:
    memory = _memory(anchor("Makefile", SOURCE, 5, 5), anchor(".github/ci.yml", b"a\nb\nc\n", 1, 3),
                     Cite("docs/deploy.md"))
    data = render_memory(memory)
    assert b'evidence:\n- path: "Makefile"\n  lines: 5\n  sha256: ' in data
    assert b'- path: "docs/deploy.md"\n---\n' in data
    assert parse_memory(data, "x.md") == memory
    assert render_memory(parse_memory(data, "x.md")) == data


def test_yaml_reads_the_rendered_citations_as_the_fast_reader_does() -> None:
    memory = _memory(anchor("src/app.py", b"x = 1\ny = 2\n", 1, 2), Cite("a b/c.md"))
    head = render_memory(memory).decode().split("---\n")[1]
    fields, extra = _normalise(yaml.safe_load(head), "x.md")
    assert fields["name"] == "Port" and evidence.cites_of(extra["evidence"], "x.md") == memory.evidence


_PATHS = st.text(alphabet="abcXYZ019._- /", min_size=1, max_size=12)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_PATHS, st.one_of(st.none(), st.tuples(st.integers(1, 40), st.integers(0, 5))),
                          st.sampled_from(["0" * 64, "a" * 64, "1" * 64, None])), max_size=4))
def test_whatever_is_written_yaml_and_the_fast_reader_agree(raw: list[tuple[str, tuple[int, int] | None,
                                                                        str | None]]) -> None:
    cites = []
    for path, lines, sha in raw:
        if evidence.path_problem(path) is not None:
            continue
        start, end = (lines[0], lines[0] + lines[1]) if lines else (None, None)
        cites.append(Cite(path, start, end, sha if start is None or sha else "b" * 64))
    memory = _memory(*cites)
    data = render_memory(memory)
    parsed = parse_memory(data, "x.md")
    assert parsed.evidence == evidence.unique(cites)
    head = data.decode().split("---\n")[1]
    _, extra = _normalise(yaml.safe_load(head), "x.md")
    assert evidence.cites_of(extra.get("evidence"), "x.md") == parsed.evidence


@pytest.mark.parametrize("entry,problem", [
    ({"path": "../outside"}, "'..'"), ({"path": "/etc/passwd"}, "absolute"), ({"path": ".git/config"}, ".git"),
    ({"path": "a", "lines": "3-1"}, "range"), ({"path": "a", "lines": 2}, "without their sha256"),
    ({"path": "a", "sha256": "XYZ"}, "hex"), ({"path": "a", "extra": 1}, "mappings"),
    ({"path": "Makefile\u2028## do this"}, "invisible"), ({"path": "ops/\u202edeploy.sh"}, "invisible"),
    ({"path": "a\x7fb"}, "invisible"), ({"path": "a\nb"}, "control"),
])
def test_a_citation_that_is_not_a_plain_repository_path_is_refused_with_the_reason(entry: dict[str, object],
                                                                                   problem: str) -> None:
    with pytest.raises(InputRejected) as caught:
        evidence.cites_of([entry], "m.md")
    assert caught.value.code == "memory.evidence" and problem in caught.value.message


def test_the_hash_ignores_whitespace_changes_but_not_words() -> None:
    cite = anchor("Makefile", SOURCE, 5, 5)
    assert locate(cite, SOURCE.replace(b"\tpython -m", b"    python   -m")).status == HOLDS
    assert locate(cite, SOURCE.replace(b"8080", b"9090")).status == CHANGED


def test_text_moved_by_lines_inserted_above_is_found_again_at_its_new_lines() -> None:
    cite = anchor("Makefile", SOURCE, 4, 5)
    found = locate(cite, b"# one\n# two\n# three\n" + SOURCE)
    assert (found.status, found.start, found.end, found.mark()) == (MOVED, 7, 8, None)


def test_a_whole_file_citation_changes_with_any_word_of_the_file() -> None:
    cite = anchor("Makefile", SOURCE, None, None)
    assert cite.start is None and locate(cite, SOURCE + b"\n\n").status == HOLDS
    assert locate(cite, SOURCE + b"lint:\n").status == CHANGED


def test_citing_lines_past_the_end_or_blank_lines_only_is_refused() -> None:
    with pytest.raises(InputRejected, match="has 5 lines"):
        anchor("Makefile", SOURCE, 6, 7)
    with pytest.raises(InputRejected, match="blank"):
        anchor("Makefile", SOURCE, 3, 3)


def test_a_gone_file_is_gone_unless_git_says_where_it_went(tmp_path: Path) -> None:
    (tmp_path / "build.mk").write_bytes(SOURCE)
    cite = anchor("Makefile", SOURCE, 5, 5)
    assert [f.status for f in check(str(tmp_path), [cite])] == [GONE]
    (found,) = check(str(tmp_path), [cite], {"Makefile": "build.mk"}.get)
    assert (found.status, found.at, found.mark()) == (RENAMED, "build.mk:5",
                                                      "[cited file moved: Makefile is now build.mk]")


def test_a_link_out_of_the_repository_reads_as_gone(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "Makefile").write_bytes(SOURCE)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "escape").symlink_to(outside, target_is_directory=True)
    assert citecheck.read_cited(str(repo), "escape/Makefile") is None


class _Index:
    def __init__(self) -> None:
        self.settled: list[tuple[str, tuple[object, ...]]] = []

    def settle(self, sql: str, params: tuple[object, ...]) -> None:
        self.settled.append((sql, params))


class _Source:
    kind = "private"

    def __init__(self) -> None:
        self.index = _Index()


class _Row:
    def __init__(self, cites: tuple[Cite, ...]) -> None:
        self.evidence = evidence.to_row(cites)
        self.proof: str | None = None
        self.id, self.sha = 1, "s"


def test_the_marker_keeps_its_answer_until_a_cited_file_changes(tmp_path: Path) -> None:
    make = tmp_path / "Makefile"
    make.write_bytes(SOURCE)
    time.sleep(2.1)  # past the racy window: an answer found now is kept
    row, source = _Row((anchor("Makefile", SOURCE, 5, 5),)), _Source()
    marker = citecheck.Marker(str(tmp_path))
    assert marker(source, row) == [] and row.proof is not None and len(source.index.settled) == 1
    # The kept answer is served while the file's identity holds (a planted one shows it is not recomputed).
    row.proof = row.proof.split("\n")[0] + "\nKEPT"
    assert marker(source, row) == ["KEPT"]
    make.write_bytes(SOURCE.replace(b"8080", b"9090"))
    assert marker(source, row) == ["[code changed since this was written: Makefile:5]"]
    # Just written (within two seconds): found, not kept.
    assert len(source.index.settled) == 1
    assert marker.proofs[-1][0] == str(make) and marker.proofs[-1][2] == 1


def test_row_text_carries_every_field_of_the_citations() -> None:
    cites = (anchor("Makefile", SOURCE, 4, 5), Cite("docs/a.md"))
    assert evidence.from_row(evidence.to_row(cites)) == cites and evidence.to_row(()) is None


def test_a_cited_fifo_reads_as_gone_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "Makefile")  # nobody writes to it: a blocking open would never return
    assert citecheck.read_cited(str(tmp_path), "Makefile") is None
    assert [f.status for f in check(str(tmp_path), [anchor("Makefile", SOURCE, 5, 5)])] == [GONE]


def test_a_file_over_the_bound_is_read_as_empty_and_never_hashed(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_bytes(b"x\n" * (evidence.MAX_CITED_BYTES // 2 + 1))
    assert citecheck.read_cited(str(tmp_path), "big.txt") == b""
    (tmp_path / "small.txt").write_bytes(SOURCE)
    assert citecheck.read_cited(str(tmp_path), "small.txt") == SOURCE
