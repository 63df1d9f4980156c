"""Pages of the documentation as topics: names from paths, titles and summaries from the text."""

from __future__ import annotations

from pipeline.commands import pages


def test_a_page_is_named_by_its_path_and_a_section_index_by_its_folder() -> None:
    assert pages.topic_of("hosts/claude-code.md") == "hosts/claude-code"
    assert pages.topic_of("hosts/index.md") == "hosts"
    assert pages.topic_of("index.md") == pages.HOME_TOPIC


def test_the_summary_is_the_first_sentence_after_the_title_without_comments_or_links() -> None:
    text = ("<!-- runnable -->\n# Title here\n\n```sh\nx\n```\nFirst [sentence](a.md) goes\non. Second one.\n\n"
            "Next paragraph.\n")
    assert pages.title_and_summary(text) == ("Title here", "First sentence goes on.")


def test_every_shipped_page_has_a_title_and_a_summary() -> None:
    for topic, path in pages.files().items():
        title, summary = pages.title_and_summary(path.read_text(encoding="utf-8"))
        assert title and summary, topic
