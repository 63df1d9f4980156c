"""The near-copy measure on the named data set: every near-copy caught, no independent paraphrase refused."""

from __future__ import annotations

import pytest
from nearcopy_support import GENERIC, corpus_pairs, near_copies, pairs

from pipeline.privacy import nearcopy
from pipeline.privacy.nearcopy import THRESHOLD, carried


def _share(private: tuple[str, str, str], safe: tuple[str, str, str],
           public: list[tuple[str, str, str]] | None = None) -> float:
    found = carried([("private.md", private)], {"safe.md": safe}, public or []).get("safe.md")
    return found.share if found else 0.0


def test_the_measurement_set_is_the_size_the_readme_reports() -> None:
    benign = pairs()
    assert len(benign) == 39
    assert len(list(corpus_pairs())) == 4292
    assert sum(1 for _, p, _ in benign for _ in near_copies(p)) == 326


def test_no_independently_written_memory_on_the_same_topic_is_refused() -> None:
    refused = [(key, share) for key, private, safe in [*pairs(), *corpus_pairs()]
               if (share := _share(private, safe)) >= THRESHOLD]
    assert refused == []


def test_every_near_copy_of_a_private_memory_is_refused() -> None:
    missed = [(key, kind) for key, private, _ in pairs() for kind, copy in near_copies(private)
              if _share(private, copy) < THRESHOLD]
    assert missed == []


def test_the_threshold_sits_in_the_measured_gap(monkeypatch: pytest.MonkeyPatch) -> None:
    """The table of docs/privacy.md: the highest benign share and the lowest near-copy share around THRESHOLD."""
    monkeypatch.setattr(nearcopy, "THRESHOLD", 0.0)
    benign = max(_share(p, s) for _, p, s in [*pairs(), *corpus_pairs()])
    copies = min(_share(p, c) for _, p, _ in pairs() for _, c in near_copies(p))
    assert (round(benign, 3), round(copies, 3)) == (0.485, 0.571)
    assert benign < THRESHOLD <= copies


def test_the_carried_field_and_the_private_memory_are_named() -> None:
    private = ("Staging token", "where the staging token for the deploy bot is kept in the vault",
               "The token sits under ops/staging in the team vault and is rotated every month by the on-call.")
    found = carried([("user_staging-token.md", private)],
                    {"project_notes.md": ("Notes", "deploy notes", "Reminder: " + private[1] + ".")})
    assert [(name, c.private, c.field) for name, c in found.items()] == [
        ("project_notes.md", "user_staging-token.md", "description")]


def test_a_generic_short_private_phrase_does_not_make_safe_memories_suspect() -> None:
    for phrase in GENERIC:
        private = ("Hint", phrase, "Nothing else to say.")
        safe = ("Workflow", "how we work", f"When in doubt, {phrase} and tell the channel about it afterwards.")
        assert _share(private, safe) == 0.0, phrase
        # The same phrase as a whole field is still a copy of that field.
        assert _share(private, ("Workflow", phrase.upper() + ".", "Other text.")) == 1.0, phrase


def test_wording_already_in_the_mirror_is_not_distinctive() -> None:
    body = ("Deploys run ops/deploy.sh with the prod profile and wait for the health checks of every node "
            "before traffic is switched over to the new colour.")
    published = ("Deploys", "how deploys work", body)
    private = ("Deploy secret", "the deploy password lives in the vault", published[2])
    rewrite = ("Deploys", "how deploys work", published[2] + " Takes ten minutes.")
    assert _share(private, rewrite) >= THRESHOLD
    assert _share(private, rewrite, public=[published]) == 0.0


def test_a_private_memory_is_not_compared_with_a_written_memory_of_its_own_name() -> None:
    texts = ("Editor", "prefers vim keybindings everywhere", "Uses vim in the terminal and in the IDE, always.")
    assert carried([("user_editor.md", texts)], {"user_editor.md": texts}) == {}
