"""memory_paths: only /memories and the memory files directly in it; every other path refused by its own rule."""

from __future__ import annotations

import pytest

from pipeline.hosts.memory_paths import PathRefused, memory_target, suggest

MAPPED = [
    ("/memories", None),
    ("/memories/", None),
    ("/memories/notes.md", "notes.md"),
    ("/memories/project_deploy-target.md", "project_deploy-target.md"),
    ("/memories/" + "a" * 125 + ".md", "a" * 125 + ".md"),
]

# (path, code, words the message must hold so that the model can act on it)
REFUSED = [
    (None, "memtool.path", "must be a string"),
    (["/memories"], "memtool.path", "must be a string"),
    ("/memories/" + "a" * 600, "memtool.path", "characters long"),
    ("/memories/a\nb.md", "memtool.path", "control character"),
    ("/memories/a\x00.md", "memtool.path", "control character"),
    ("/memories/%2e%2e/etc.md", "memtool.encoded", "never decoded"),
    ("/memories/%2Fetc.md", "memtool.encoded", "never decoded"),
    ("/memories/a\\b.md", "memtool.encoded", "separator"),
    ("/memories/a\uff0fb.md", "memtool.encoded", "separator"),
    ("/memories/a\u2044b.md", "memtool.encoded", "separator"),
    ("/memories/..", "memtool.traversal", "'.' or '..'"),
    ("/memories/../secrets.md", "memtool.traversal", "never leave /memories"),
    ("/memories/./notes.md", "memtool.traversal", "'.' or '..'"),
    ("/memories/sub/../notes.md", "memtool.traversal", "'.' or '..'"),
    ("..", "memtool.traversal", "'.' or '..'"),
    ("/", "memtool.outside", "outside /memories"),
    ("", "memtool.outside", "outside /memories"),
    ("/etc/passwd", "memtool.outside", "outside /memories"),
    ("/Memories/notes.md", "memtool.outside", "outside /memories"),
    ("/memoriesnotes.md", "memtool.outside", "outside /memories"),
    ("memories/notes.md", "memtool.outside", "outside /memories"),
    ("//memories/notes.md", "memtool.outside", "outside /memories"),
    ("/memories/projects/deploy.md", "memtool.directory", "use /memories/projects_deploy.md"),
    ("/memories/projects/", "memtool.directory", "no directories below /memories"),
    ("/memories//notes.md", "memtool.directory", "use /memories/notes.md"),
    ("/memories/MEMORY.md", "memtool.reserved", "index"),
    ("/memories/memory.md", "memtool.reserved", "index"),
    ("/memories/notes", "memory.name", "for example /memories/notes.md"),
    ("/memories/notes.txt", "memory.name", "for example /memories/notes.md"),
    ("/memories/notes.MD", "memory.name", "for example /memories/notes.md"),
    ("/memories/my notes.md", "memory.name", "for example /memories/my_notes.md"),
    ("/memories/.hidden.md", "memory.name", "starting with a letter or digit"),
    ("/memories/-dash.md", "memory.name", "starting with a letter or digit"),
    ("/memories/caf\u00e9.md", "memory.name", "letters, digits"),
    ("/memories/" + "a" * 126 + ".md", "memory.name", "letters, digits"),
    ("/memories/CON.md", "memory.name-reserved", "device name on Windows"),
    ("/memories/lpt1.md", "memory.name-reserved", "for example /memories/lpt1_notes.md"),
]


@pytest.mark.parametrize(("path", "name"), MAPPED)
def test_the_folder_and_the_files_directly_in_it_map(path: str, name: str | None) -> None:
    assert memory_target(path) == name


@pytest.mark.parametrize(("path", "code", "words"), REFUSED)
def test_every_other_path_is_refused_by_its_rule_with_what_to_do(path: object, code: str, words: str) -> None:
    with pytest.raises(PathRefused) as caught:
        memory_target(path)
    assert caught.value.code == code
    assert words in caught.value.message
    assert caught.value.exit_code == 1


def test_a_refusal_shows_the_path_on_one_visible_line_cut_short() -> None:
    with pytest.raises(PathRefused) as caught:
        memory_target("/etc/" + "\u202e" + "x" * 200)
    message = caught.value.message
    assert "\u202e" not in message and "x" * 78 not in message and "..." in message


@pytest.mark.parametrize(("raw", "name"), [
    ("notes.txt", "notes.md"), ("a/b/c.xml", "a_b_c.md"), ("???", "notes.md"), ("MEMORY", "MEMORY_notes.md"),
    ("nul.md", "nul_notes.md"), ("x" * 100, "x" * 60 + ".md"),
])
def test_the_suggested_name_is_one_memfold_accepts(raw: str, name: str) -> None:
    assert suggest(raw) == name
    assert memory_target(f"/memories/{name}") == name
