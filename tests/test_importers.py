"""The source parsers on their own: what becomes a candidate and what is skipped, with the reason."""

from __future__ import annotations

from pathlib import Path

from pipeline.importers import claude, harness, pi

DATA = Path(__file__).resolve().parent / "data" / "imports"


def test_pi_notes_continuation_lines_belong_to_the_note_above() -> None:
    parsed = pi.parse_notes(DATA / "pi-notes.md")
    deploy = next(c for c in parsed.candidates if "deploy" in c.file)
    assert deploy.memory.body == "Deploys go through ops/deploy.sh\n(blue/green; never by hand)"
    assert {s.reason for s in parsed.skipped} == {"empty note", "not a bullet note"}


def test_pi_topic_sections_become_one_memory_each_modified_at_updated() -> None:
    parsed = pi.parse_memory_dir(DATA / "pi-memory")
    topics = {c.file: c.memory for c in parsed.candidates if c.file.startswith("user-prefs_")}
    assert set(topics) == {"user-prefs_editor.md", "user-prefs_shell.md"}
    assert all(m.type == "user" and m.modified == "2026-03-02T10:00:00Z" for m in topics.values())


def test_claude_metadata_type_shape_is_read() -> None:
    parsed = claude.parse_dir(DATA / "claude")
    kinds = {c.file: c.memory.type for c in parsed.candidates}
    assert kinds == {"deploy_target.md": "project", "use-pnpm.md": "feedback", "no-frontmatter.md": "project"}
    plain = next(c for c in parsed.candidates if c.file == "no-frontmatter.md")
    assert plain.memory.description == "Just text, no frontmatter."
    assert plain.notes == ("no frontmatter", "description taken from the first line")


def test_harness_visibility_comes_from_the_mirror_not_the_frontmatter(tmp_path: Path) -> None:
    parsed = harness.parse_pair(DATA / "harness" / "private", DATA / "harness" / "public")
    assert {c.file: c.memory.visibility for c in parsed.candidates} == {
        "project_api.md": "safe", "user_staging.md": "private"}
    private, public = tmp_path / "p", tmp_path / "q"
    private.mkdir()
    public.mkdir()
    (private / "project_x.md").write_text("---\ndescription: x\n---\none\n")
    (public / "project_x.md").write_text("---\ndescription: x\n---\ntwo\n")
    assert [s.reason for s in harness.parse_pair(private, public).skipped] == ["the private and public copies differ"]
