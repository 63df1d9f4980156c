"""memory_files: the memory tool's commands are ordinary memfold transactions, and the model reads back what it wrote.

The property test runs any sequence of commands through the tool and through a plain in-memory model
of the same files (written here from the documented rules, not from memfold's code) and compares what
``view`` shows after each one.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from conftest import Env
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from pipeline.hosts.memory_tool import MemfoldMemoryTool, MemoryToolRefused


@pytest.fixture
def tool(env: Env) -> Any:
    made = MemfoldMemoryTool(env.project, home=env.home)
    yield made
    made.close()


def call(tool: MemfoldMemoryTool, command: str, **fields: Any) -> str:
    return str(tool.call({"command": command, **fields}))


def refusal(tool: MemfoldMemoryTool, command: str, **fields: Any) -> MemoryToolRefused:
    with pytest.raises(MemoryToolRefused) as caught:
        tool.call({"command": command, **fields})
    return caught.value


def _receipts(env: Env) -> list[dict[str, Any]]:
    return [json.loads(p.read_bytes()) for p in sorted((env.project_home / "receipts").glob("*.json"))]


# -- the plain model: a dict of texts and the documented rules --

NAME = re.compile(r"/memories/([A-Za-z0-9][A-Za-z0-9_-]*\.md)")
HEADER = "Here are the memory files in /memories (one flat folder, no directories), with the size of each:"


class Plain:
    """What a plain folder of text files with the documented rules would answer."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}

    def _name(self, path: str) -> str:
        found = NAME.fullmatch(path)
        if found is None or found.group(1).lower() == "memory.md":
            raise ValueError("path")
        return found.group(1)

    def _existing(self, path: str) -> str:
        name = self._name(path)
        if name not in self.files:
            raise ValueError("missing")
        return name

    def _free(self, name: str, but: str | None = None) -> None:
        if any(n.lower() == name.lower() and n != but for n in self.files):
            raise ValueError("exists")

    @staticmethod
    def _number(lines: list[str], first: int = 1) -> str:
        return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, first))

    def view(self, path: str) -> str:
        if path == "/memories":
            sizes = {n: len(t.encode()) for n, t in self.files.items()}
            lines = [HEADER, f"{_size(sum(sizes.values()))}\t/memories"]
            lines += [f"{_size(sizes[n])}\t/memories/{n}" for n in sorted(sizes)]
            return "\n".join(lines)
        name = self._existing(path)
        return f"Here's the content of {path} with line numbers:\n" + self._number(self.files[name].split("\n"))

    def create(self, path: str, file_text: str) -> str:
        name = self._name(path)
        if re.search("[\x00-\x08\x0b-\x1f\x7f]", file_text):
            raise ValueError("text")
        self._free(name)
        self.files[name] = file_text
        return f"File created successfully at: {path}"

    def str_replace(self, path: str, old_str: str, new_str: str) -> str:
        name = self._existing(path)
        text = self.files[name]
        starts = [i for i in range(len(text)) if text.startswith(old_str, i)] if old_str else []
        if len(starts) != 1 or re.search("[\x00-\x08\x0b-\x1f\x7f]", old_str + new_str):
            raise ValueError("match")
        new = text[:starts[0]] + new_str + text[starts[0] + len(old_str):]
        self.files[name] = new
        line = text.count("\n", 0, starts[0])
        lines = new.split("\n")
        first = max(0, line - 2)
        return (f"The memory file {path} has been edited. Here is a snippet of it with line numbers:\n"
                + self._number(lines[first:line + 3], first + 1))

    def insert(self, path: str, insert_line: int, insert_text: str) -> str:
        name = self._existing(path)
        lines = self.files[name].split("\n")
        if lines[-1] == "":
            lines.pop()
        if not 0 <= insert_line <= len(lines) or re.search("[\x00-\x08\x0b-\x1f\x7f]", insert_text):
            raise ValueError("line")
        lines.insert(insert_line, insert_text.rstrip("\n"))
        self.files[name] = "\n".join(lines) + "\n"
        return f"The file {path} has been edited."

    def delete(self, path: str) -> str:
        del self.files[self._existing(path)]
        return f"Successfully deleted {path}"

    def rename(self, old_path: str, new_path: str) -> str:
        old, new = self._existing(old_path), self._name(new_path)
        self._free(new, but=old)
        self.files[new] = self.files.pop(old)
        return f"Successfully renamed {old_path} to {new_path}"


def _size(n: int) -> str:
    for unit, scale in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.0f}{unit}" if n % scale == 0 else f"{n / scale:.1f}{unit}"
    return f"{n}B"


OTHER_PATHS = ["/memories/a.md", "/memories/b.md", "/memories/notes_1.md", "/memories/A.md", "/memories/c",
               "/memories/../a.md", "/memories/MEMORY.md"]
# Printable text with line breaks and tabs; the fragments bring Markdown, frontmatter and now and then
# a carriage return, which no memory may hold.
CHARS = st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")) | st.sampled_from("\n\t")
TEXT = st.text(CHARS, max_size=60) | st.lists(
    st.sampled_from(["---", "type: user", "description: d", "# Title", "- item", "", "x", "\t", "a\\n", "\r",
                     "</notes>", "é"]), max_size=8).map("\n".join)


@st.composite
def command_for(draw: Any, plain: Plain) -> tuple[str, dict[str, Any]]:
    """A command, mostly on the files the plain model holds now: str_replace mostly with a part of the text."""
    existing = [f"/memories/{n}" for n in sorted(plain.files)]
    path = draw(st.sampled_from(existing) if existing and draw(st.integers(0, 3)) else st.sampled_from(OTHER_PATHS))
    kind = draw(st.sampled_from(["create", "str_replace", "str_replace", "insert", "delete", "rename", "view"]))
    if kind == "create":
        return kind, {"path": path, "file_text": draw(TEXT)}
    if kind == "str_replace":
        text = plain.files.get(NAME.fullmatch(path).group(1), "") if NAME.fullmatch(path) else ""  # type: ignore[union-attr]
        start = draw(st.integers(0, len(text)))
        old = text[start:start + draw(st.integers(1, 6))] if draw(st.integers(0, 3)) else draw(TEXT)
        return kind, {"path": path, "old_str": old, "new_str": draw(TEXT)}
    if kind == "insert":
        return kind, {"path": path, "insert_line": draw(st.integers(-1, 6)), "insert_text": draw(TEXT)}
    if kind == "rename":
        return kind, {"old_path": path, "new_path": draw(st.sampled_from(OTHER_PATHS + existing))}
    if kind == "view":
        return kind, {"path": draw(st.sampled_from([path, "/memories"]))}
    return kind, {"path": path}


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(st.data())
def test_any_sequence_of_commands_views_like_a_plain_model_of_the_same_files(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "project").mkdir()
        tool = MemfoldMemoryTool(Path(tmp) / "project", home=Path(tmp) / "home")
        plain = Plain()
        try:
            opening = [("create", {"path": f"/memories/{name}", "file_text": data.draw(TEXT)})
                       for name in data.draw(st.sets(st.sampled_from(["a.md", "b.md", "notes_1.md"]), min_size=1))]
            for step in range(data.draw(st.integers(len(opening) + 1, 16), label="steps")):
                command, fields = opening[step] if step < len(opening) else data.draw(command_for(plain))
                try:
                    expected: str | None = getattr(plain, command)(**fields)
                except ValueError:
                    expected = None
                try:
                    got: str | None = str(tool.call({"command": command, **fields}))
                except MemoryToolRefused:
                    got = None
                assert got == expected, (command, fields)
                event(f"{command} {'answered' if got is not None else 'refused'}")
                assert tool.call({"command": "view", "path": "/memories"}) == plain.view("/memories")
                for name in plain.files:
                    assert tool.call({"command": "view", "path": f"/memories/{name}"}) == \
                        plain.view(f"/memories/{name}")
        finally:
            tool.close()


def test_the_text_round_trips_byte_for_byte_with_blank_lines_at_either_end(tool: MemfoldMemoryTool, env: Env) -> None:
    for name, text in (("lead.md", "\n\nafter two blank lines"), ("tail.md", "two trailing\n\n\n"),
                       ("empty.md", ""), ("nested.md", "---\ntype: feedback\n---\nuse the real db\n")):
        call(tool, "create", path=f"/memories/{name}", file_text=text)
        data = (env.harness / name).read_bytes()
        assert data.endswith(text.encode()) and data.count(b"\n---\n") >= 1
        lines = text.split("\n")
        assert call(tool, "view", path=f"/memories/{name}") == (
            f"Here's the content of /memories/{name} with line numbers:\n"
            + "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, 1)))
    shown = env.run("show", "nested.md", "--json").json()
    assert shown["type"] == "feedback" and shown["description"] == "use the real db"
    assert env.run("show", "empty.md", "--json").json()["description"] == "empty (no text yet)"


def test_an_edit_rederives_the_description_until_a_person_sets_one(tool: MemfoldMemoryTool, env: Env) -> None:
    call(tool, "create", path="/memories/ci.md", file_text="CI runs on push\n")
    call(tool, "str_replace", path="/memories/ci.md", old_str="on push", new_str="on push and tags")
    assert env.run("show", "ci.md", "--json").json()["description"] == "CI runs on push and tags"
    assert env.run("update", "ci.md", "-d", "What CI runs on, set by hand").code == 0
    call(tool, "insert", path="/memories/ci.md", insert_line=0, insert_text="# CI")
    shown = env.run("show", "ci.md", "--json").json()
    assert shown["description"] == "What CI runs on, set by hand" and shown["type"] == "reference"
    assert call(tool, "view", path="/memories/ci.md").endswith("     1\t# CI\n     2\tCI runs on push and tags\n     3\t")


def test_rename_moves_the_text_and_the_title_and_keeps_the_created_date(tool: MemfoldMemoryTool, env: Env) -> None:
    call(tool, "create", path="/memories/old_name.md", file_text="kept\n\n")
    before = env.run("show", "old_name.md", "--json").json()
    call(tool, "rename", old_path="/memories/old_name.md", new_path="/memories/new_name.md")
    after = env.run("show", "new_name.md", "--json").json()
    assert after["name"] == "new_name" and after["created"] == before["created"]
    assert (env.harness / "new_name.md").read_bytes().endswith(b"\n---\nkept\n\n")
    assert not (env.harness / "old_name.md").exists()
    assert [r["command"] for r in _receipts(env)][-1] == "memory-tool rename"


def test_a_text_exactly_at_the_size_bound_is_stored_and_one_byte_more_is_refused(env: Env) -> None:
    env.home.mkdir()
    (env.home / "config.yaml").write_text("limits:\n  max_file_bytes: 1024\n")
    tool = MemfoldMemoryTool(env.project, home=env.home)
    refused = refusal(tool, "create", path="/memories/big.md", file_text="y" * 2000)
    assert refused.code == "bounds.file-size"
    over = refusal(tool, "create", path="/memories/big.md", file_text="big\n" + "y" * 1000)
    room = int(re.search(r"may be at most (\d+) bytes", str(over.content)).group(1))  # type: ignore[union-attr]
    call(tool, "create", path="/memories/big.md", file_text="big\n" + "y" * (room - 4))
    assert (env.harness / "big.md").stat().st_size == 1024
    grown = refusal(tool, "insert", path="/memories/big.md", insert_line=1, insert_text="z")
    assert grown.code == "bounds.file-size" and (env.harness / "big.md").stat().st_size == 1024
    tool.close()


def test_text_with_a_carriage_return_or_control_character_is_refused_naming_the_line(tool: MemfoldMemoryTool) -> None:
    cr = refusal(tool, "create", path="/memories/w.md", file_text="one\r\ntwo")
    assert cr.code == "memtool.text" and "carriage return (line 1)" in str(cr.content)
    bell = refusal(tool, "create", path="/memories/w.md", file_text="one\ntwo\x07")
    assert "U+0007 (line 2)" in str(bell.content)
    lone = refusal(tool, "create", path="/memories/w.md", file_text="half \ud800")
    assert "lone surrogate" in str(lone.content)


def test_a_file_that_does_not_parse_is_listed_nowhere_and_refused_by_name(tool: MemfoldMemoryTool, env: Env) -> None:
    call(tool, "create", path="/memories/good.md", file_text="fine")
    (env.harness / "bad.md").write_text("no frontmatter here\n")
    assert "/memories/bad.md" not in call(tool, "view", path="/memories")
    refused = refusal(tool, "view", path="/memories/bad.md")
    assert refused.code == "memory.broken" and "memfold doctor" in str(refused.content)
    assert call(tool, "delete", path="/memories/bad.md") == "Successfully deleted /memories/bad.md"
    assert not (env.harness / "bad.md").exists()


def test_the_listing_pages_past_its_bound_with_view_range(tool: MemfoldMemoryTool) -> None:
    from pipeline.hosts import memory_view

    for i in range(5):
        call(tool, "create", path=f"/memories/n{i}.md", file_text=f"note {i}")
    page = memory_view.LIST_PAGE
    memory_view.LIST_PAGE = 2
    try:
        first = call(tool, "view", path="/memories")
        second = call(tool, "view", path="/memories", view_range=[3, -1])
    finally:
        memory_view.LIST_PAGE = page
    assert first.splitlines()[2:] == ["6B\t/memories/n0.md", "6B\t/memories/n1.md",
                                      "(files 1-2 of 5; view /memories with view_range [3, 4] for the next ones)"]
    assert second.splitlines()[2:] == ["6B\t/memories/n2.md", "6B\t/memories/n3.md",
                                       "(files 3-4 of 5; view /memories with view_range [5, 6] for the next ones)"]


def test_the_files_are_ordinary_memories_for_search_inject_consolidate_report_undo_and_audit(
        tool: MemfoldMemoryTool, env: Env, tmp_path: Path) -> None:
    call(tool, "create", path="/memories/deploy_window.md", file_text="Deploys wait for the Tuesday window\n")
    call(tool, "create", path="/memories/db_tests.md", file_text="Integration tests use the real postgres\n")
    edit = call(tool, "str_replace", path="/memories/db_tests.md", old_str="real postgres",
                new_str="real postgres, never mocks")
    assert "never mocks" in edit
    edited_run = tool.last_result.run_id  # type: ignore[union-attr]

    hits = env.run("search", "Tuesday", "--json").json()["results"]
    assert [h["file"] for h in hits] == ["deploy_window.md"]
    injected = env.run("inject", "--query", "postgres mocks").out
    assert "never mocks" in injected

    undone = env.run("undo", edited_run)
    assert undone.code == 0, undone.err
    assert call(tool, "view", path="/memories/db_tests.md").endswith("Integration tests use the real postgres\n     2\t")

    consolidated = env.run("consolidate", "--no-context")
    assert consolidated.code == 0, consolidated.err
    listing = call(tool, "view", path="/memories")
    for name in (p.name for p in env.harness.glob("*.md") if p.name != "MEMORY.md"):
        assert f"/memories/{name}" in listing

    out = tmp_path / "report.html"
    assert env.run("report", "--out", str(out)).code == 0
    html = out.read_text()
    assert "memory-tool create" in html and "memory-tool str_replace" in html
    assert env.run("verify").code == 0
    audit = env.run("audit", "--json")
    assert audit.code == 0 and audit.json()["drift"] == [], audit.out


def test_a_second_tool_process_sees_the_first_ones_writes_without_hand_edit_drift(env: Env) -> None:
    first = MemfoldMemoryTool(env.project, home=env.home)
    second = MemfoldMemoryTool(env.project, home=env.home)
    call(first, "create", path="/memories/a.md", file_text="from the first")
    call(second, "str_replace", path="/memories/a.md", old_str="first", new_str="second")
    call(first, "insert", path="/memories/a.md", insert_line=1, insert_text="and the first again")
    assert call(second, "view", path="/memories/a.md").endswith("from the second\n     2\tand the first again\n     3\t")
    first.close()
    second.close()
    audit = env.run("audit", "--json")
    assert audit.code == 0 and audit.json()["drift"] == []
    subprocess.run(["git", "-C", str(env.project), "status", "--short"], check=True, capture_output=True)


def test_clear_all_memory_deletes_every_memory_in_one_transaction_that_undo_reverses(
        tool: MemfoldMemoryTool, env: Env) -> None:
    call(tool, "create", path="/memories/a.md", file_text="alpha")
    assert env.run("add", "Deploy target", "-d", "blue/green via ops/deploy.sh").code == 0
    before = env.snapshot()
    assert tool.clear_all_memory() == "All memory cleared"
    assert sorted(p.name for p in env.harness.iterdir()) == ["MEMORY.md"]
    assert _receipts(env)[-1]["command"] == "memory-tool clear"
    assert env.run("undo", tool.last_result.run_id).code == 0  # type: ignore[union-attr]
    assert env.snapshot()["harness"] == before["harness"]


def test_a_teammates_memory_in_a_trusted_mirror_is_shown_and_an_edit_adopts_it(
        tool: MemfoldMemoryTool, env: Env) -> None:
    call(tool, "create", path="/memories/mine.md", file_text="my note")
    team = b"---\nname: team_x\ndescription: team fact\ntype: project\nvisibility: safe\n---\nfrom a teammate\n"
    (env.mirror / "team_x.md").write_bytes(team)  # as a pull would bring it
    assert "/memories/team_x.md" not in call(tool, "view", path="/memories")  # untrusted: nothing foreign shown
    (env.mirror / "team_x.md").unlink()
    assert env.run("trust").code == 0
    (env.mirror / "team_x.md").write_bytes(team)
    assert call(tool, "view", path="/memories").splitlines()[2:] == ["7B\t/memories/mine.md",
                                                                     "16B\t/memories/team_x.md"]
    assert not (env.harness / "team_x.md").exists()  # shown, not adopted: a read writes nothing
    call(tool, "str_replace", path="/memories/team_x.md", old_str="teammate", new_str="teammate, edited")
    assert (env.harness / "team_x.md").read_bytes().endswith(b"\n---\nfrom a teammate, edited\n")
    assert (env.mirror / "team_x.md").read_bytes() == (env.harness / "team_x.md").read_bytes()
    audit = env.run("audit", "--json")
    assert audit.code == 0 and audit.json()["drift"] == [], audit.out
