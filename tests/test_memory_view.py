"""memory_view: numbered lines, bounded listings paged with view_range, sizes as the model knows them."""

from __future__ import annotations

import pytest

from pipeline.errors import InputRejected
from pipeline.hosts.memory_view import LIST_PAGE, file_view, listing, size_text, snippet, view_range

HEADER = "Here are the memory files in /memories (one flat folder, no directories), with the size of each:"


def test_a_file_is_shown_with_six_column_line_numbers_and_a_tab() -> None:
    assert file_view("/memories/a.md", "one\ntwo\n", None) == (
        "Here's the content of /memories/a.md with line numbers:\n     1\tone\n     2\ttwo\n     3\t")


@pytest.mark.parametrize(("wanted", "lines"), [
    ([2, 3], ["     2\tb", "     3\tc"]), ([3, -1], ["     3\tc", "     4\td"]), ([4, 9], ["     4\td"]),
    ([1, 1], ["     1\ta"]),
])
def test_view_range_shows_the_lines_asked_for(wanted: list[int], lines: list[str]) -> None:
    assert file_view("/memories/a.md", "a\nb\nc\nd", wanted).splitlines()[1:] == lines


@pytest.mark.parametrize(("wanted", "words"), [
    ([0, 2], "first starts at 1"), ([3, 2], "is not a range"), ([9, -1], "only 4 lines"),
    ([1], "two whole numbers"), ("1-2", "two whole numbers"), ([1, 2.5], "two whole numbers"),
    ([True, 2], "two whole numbers"),
])
def test_a_bad_view_range_is_refused(wanted: object, words: str) -> None:
    with pytest.raises(InputRejected) as caught:
        view_range(wanted, 4, "lines")
    assert caught.value.code == "memtool.view-range" and words in caught.value.message


def test_a_snippet_shows_two_lines_either_side_of_the_edit() -> None:
    text = "\n".join(f"l{i}" for i in range(1, 10))
    assert snippet("/memories/a.md", text, 4).splitlines()[1:] == [f"{n:>6}\tl{n}" for n in range(3, 8)]
    assert snippet("/memories/a.md", text, 0).splitlines()[1:] == [f"{n:>6}\tl{n}" for n in range(1, 4)]


@pytest.mark.parametrize(("size", "text"), [
    (0, "0B"), (1023, "1023B"), (1024, "1K"), (1536, "1.5K"), (65536, "64K"), (1 << 20, "1M"), (1_500_000, "1.4M"),
])
def test_sizes_read_as_the_model_knows_them(size: int, text: str) -> None:
    assert size_text(size) == text


def test_an_empty_folder_lists_only_itself() -> None:
    assert listing({}, None) == f"{HEADER}\n0B\t/memories"


def test_a_listing_is_sorted_and_bounded_and_says_how_to_see_the_rest() -> None:
    sizes = {f"n{i:04d}.md": 10 for i in range(2000)}
    first = listing(sizes, None).splitlines()
    assert first[1] == "19.5K\t/memories"
    assert first[2] == "10B\t/memories/n0000.md" and len(first) == 2 + LIST_PAGE + 1
    assert first[-1] == f"(files 1-{LIST_PAGE} of 2000; view /memories with view_range [{LIST_PAGE + 1}, " \
                        f"{2 * LIST_PAGE}] for the next ones)"
    last = listing(sizes, [1901, -1]).splitlines()
    assert last[2] == "10B\t/memories/n1900.md" and last[-1] == "(files 1901-2000 of 2000)"
    assert len(listing(sizes, [1, -1])) < 16_000
