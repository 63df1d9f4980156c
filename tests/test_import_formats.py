"""Imports read other tools' files as those tools read them: every field, the body's bytes, names kept."""

from __future__ import annotations

from pathlib import Path

import yaml
from conftest import Env

from pipeline.store.memory import parse_memory


def _stored(env: Env, name: str) -> tuple[dict[str, object], bytes]:
    data = (env.harness / name).read_bytes()
    head, _, body = data.partition(b"\n---\n")
    return yaml.safe_load(head.removeprefix(b"---\n")), body


def _import(env: Env, fmt: str, *paths: Path) -> dict[str, object]:
    result = env.run("--json", "import", fmt, *map(str, paths))
    assert result.code == 0, (result.out, result.err)
    return result.json()  # type: ignore[no-any-return]


def test_pi_memory_entries_with_cjk_names_and_yaml_hostile_values_are_imported_faithfully(
        env: Env, tmp_path: Path) -> None:
    source = tmp_path / "pi-memory"
    source.mkdir()
    # pi-memory 2.x writes each entry as text: its own fields, one per line, never quoted.
    (source / "部署目标.md").write_text("---\nname: 部署目标\ndescription: 生产部署走 ops/deploy.sh\ntype: project\n"
                                       "created: 2026-01-05\nmodified: 2026-02-01T09:00:00Z\n---\n"
                                       "蓝绿部署，不要手动。\n", encoding="utf-8")
    (source / "tests.md").write_text("---\nname: tests\ndescription: run the fast suite first #quick\n"
                                     "type: feedback\n---\nUse `pytest -m 'not slow'`.\n")
    (source / "yes.md").write_text("---\nname: Yes\ndescription: Note: use pnpm\ntype: user\n---\nAlways pnpm.\n")
    report = _import(env, "pi-memory", source)
    by_source = {i["source"]: i for i in report["imported"]}  # type: ignore[union-attr]
    assert set(by_source) == {"部署目标.md", "tests.md", "yes.md"} and report["skipped"] == []
    cjk = by_source["部署目标.md"]
    assert cjk["name"] == "bushumubiao.md" and "stored as bushumubiao.md" in cjk["notes"]
    meta, body = _stored(env, "bushumubiao.md")
    assert meta["name"] == "部署目标" and meta["description"] == "生产部署走 ops/deploy.sh"
    assert str(meta["created"]) == "2026-01-05" and meta["modified"] is not None
    assert body == "蓝绿部署，不要手动。\n".encode()
    assert parse_memory((env.harness / "tests.md").read_bytes()).description == "run the fast suite first #quick"
    yes = parse_memory((env.harness / "yes.md").read_bytes())
    assert (yes.name, yes.description, yes.type) == ("Yes", "Note: use pnpm", "user")


def test_a_claude_memory_keeps_every_field_and_the_body_bytes(env: Env, tmp_path: Path) -> None:
    source = tmp_path / "claude"
    source.mkdir()
    body = "Deploys go through ops/deploy.sh.\n\n- blue/green\n- never on Fridays\n"
    (source / "deploy_target.md").write_text(
        "---\nname: Deploy target\ndescription: production deploys go through the blue/green script\n"
        "metadata:\n  type: project\n  origin: session-5f0c\n---\n" + body)
    (source / "MEMORY.md").write_text("- [Deploy target](deploy_target.md) — production deploys\n")
    _import(env, "claude", source)
    meta, stored_body = _stored(env, "deploy_target.md")
    assert meta["type"] == "project" and meta["metadata"] == {"origin": "session-5f0c"}
    assert stored_body == body.encode()


def test_seed_style_harness_files_without_frontmatter_are_imported(env: Env, tmp_path: Path) -> None:
    private, public = tmp_path / "harness", tmp_path / "public"
    private.mkdir()
    public.mkdir()
    (private / "feedback_real-db.md").write_text("# Use the real database in tests\n\nMocks hid a migration bug.\n")
    (private / "MEMORY.md").write_text("- [feedback_real-db](feedback_real-db.md) (harness only)\n")
    report = _import(env, "harness", private, public)
    entry = report["imported"][0]  # type: ignore[index]
    assert entry["name"] == "feedback_real-db.md" and "no frontmatter" in entry["notes"]
    memory = parse_memory((env.harness / "feedback_real-db.md").read_bytes())
    assert (memory.type, memory.description) == ("feedback", "Use the real database in tests")
    assert memory.body == "# Use the real database in tests\n\nMocks hid a migration bug.\n"


def test_pi_notes_indented_bullets_are_notes_of_their_own(env: Env, tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\n- Deploys go through ops/deploy.sh\n  (blue/green)\n  - Never deploy on Fridays\n")
    report = _import(env, "pi-notes", notes)
    imported = {i["source"]: i["name"] for i in report["imported"]}  # type: ignore[union-attr]
    assert set(imported) == {"notes.md:3", "notes.md:5"}
    first = parse_memory((env.harness / imported["notes.md:3"]).read_bytes())
    assert first.body == "Deploys go through ops/deploy.sh\n(blue/green)\n"
    second = parse_memory((env.harness / imported["notes.md:5"]).read_bytes())
    assert second.description == "Never deploy on Fridays"


def test_a_1x_topic_file_without_frontmatter_gives_one_memory_per_section(env: Env, tmp_path: Path) -> None:
    source = tmp_path / "pi-memory"
    source.mkdir()
    (source / "prefs.md").write_text("# Preferences\n\n## Editor\nHelix, soft wrap off.\n\n## Shell\nfish; scripts in sh.\n")
    report = _import(env, "pi-memory", source)
    names = sorted(i["name"] for i in report["imported"])  # type: ignore[union-attr]
    assert names == ["prefs_editor.md", "prefs_shell.md"]
    assert parse_memory((env.harness / "prefs_shell.md").read_bytes()).body == "fish; scripts in sh.\n"


def test_a_missing_source_is_an_error_and_creates_nothing(env: Env, tmp_path: Path) -> None:
    for fmt, args in (("claude", [tmp_path / "missing"]), ("pi-memory", [tmp_path / "missing"]),
                      ("pi-notes", [tmp_path / "missing.md"]), ("harness", [tmp_path / "a", tmp_path / "b"])):
        result = env.run("--json", "import", fmt, *map(str, args))
        assert result.code == 1 and result.json()["code"] == "import.source", (fmt, result.out)
    assert not env.home.exists()


def test_the_human_report_says_per_file_what_was_done(env: Env, tmp_path: Path) -> None:
    source = tmp_path / "claude"
    source.mkdir()
    (source / "a b.md").write_text("---\nname: a b\ndescription: spaces in the file name\n---\nx\n")
    (source / "odd.md").write_text("---\nname: odd\ndescription: an unknown type\ntype: fact\n---\nx\n")
    result = env.run("import", "claude", str(source))
    assert result.code == 0, result.err
    assert "imported a b.md as a-b.md (private): stored as a-b.md" in result.out
    assert "skipped odd.md: not imported: type 'fact' is not one of" in result.out


def test_a_metadata_block_with_a_yaml_hostile_description_is_read_line_by_line(env: Env, tmp_path: Path) -> None:
    source = tmp_path / "claude"
    source.mkdir()
    # Current Claude Code: the type under a metadata block, the description as the model typed it.
    (source / "pnpm.md").write_text("---\nname: pnpm\ndescription: Note: use pnpm #always\nmetadata:\n"
                                    "  type: feedback\n  tags:\n---\nbody\n")
    report = _import(env, "claude", source)
    assert report["skipped"] == []
    memory = parse_memory((env.harness / "pnpm.md").read_bytes())
    assert (memory.description, memory.type) == ("Note: use pnpm #always", "feedback")
    assert memory.extra == {"metadata": {"tags": None}}


def test_the_json_report_is_the_text_json_dumps_gives_with_invisible_code_points_escaped(
        env: Env, tmp_path: Path) -> None:
    import json

    source = tmp_path / "claude"
    source.mkdir()
    (source / "部署.md").write_text("---\nname: 部署\ndescription: blue\u202egreen deploys\ntype: project\n---\nbody\n",
                                  encoding="utf-8")
    (source / "broken.md").write_bytes(b"---\nname: x\n---\n\xff\n")
    result = env.run("--json", "import", "claude", str(source))
    assert result.code == 0
    expected = json.dumps(json.loads(result.out), indent=2, sort_keys=True, ensure_ascii=False)
    assert result.out == expected.replace("\u202e", "\\u202e") + "\n"
    assert "\u202e" not in result.out and "部署" in result.out
