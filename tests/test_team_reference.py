"""A repository whose `.memory/` the reference tool wrote, cloned by a newcomer who uses memfold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from team_repo import Team

pytestmark = pytest.mark.integration

# The reference tool's memory files: name, description and type (at the top level, or as Claude Code
# writes it, under ``metadata``), no ``visibility`` (its mirror is public by where it lives), LF or CRLF.
TOPICS = [
    ("project", "build", "the build runs with make, never with the IDE's button"),
    ("project", "ports", "the dev server listens on 8080 and the API on 8081"),
    ("feedback", "tests", "run the whole suite before pushing, not only the changed module"),
    ("reference", "ci", "CI logs live in the Actions tab; the nightly job posts to #builds"),
    ("user", "style", "prefers small pull requests with a one-line summary"),
    ("project", "deploy", "deploys go through ops/deploy.sh with blue/green slots"),
    ("feedback", "db", "use the real database in integration tests, never a mock"),
    ("project", "branches", "main is protected; release branches are cut on Mondays"),
    ("reference", "docs", "the architecture notes are in docs/adr, one decision a file"),
    ("project", "locale", "all user-facing strings go through the gettext catalog in po/"),
    ("feedback", "commits", "write commit subjects in the imperative, under 72 characters"),
    ("reference", "dashboards", "latency dashboards are in Grafana under the payments folder"),
    ("project", "python", "the service targets Python 3.11; 3.12 features are not allowed yet"),
    ("user", "editor", "uses Neovim with LSP; do not suggest VS Code settings"),
    ("project", "migrations", "schema migrations live in db/migrations and run with alembic"),
    ("feedback", "logging", "log with structlog key-value pairs, never f-strings"),
    ("reference", "oncall", "the on-call rotation is in PagerDuty, escalation after 15 minutes"),
    ("project", "frontend", "the web client is built with Vite and served from dist/"),
    ("feedback", "reviews", "every pull request needs one approval from the owning team"),
    ("project", "queues", "background jobs use Celery with Redis as the broker"),
    ("reference", "api-spec", "the OpenAPI spec is generated into openapi.yaml by make spec"),
    ("user", "timezone", "works in CET; schedule nothing before 9 in the morning"),
    ("project", "secrets", "runtime configuration comes from environment variables, never files"),
    ("feedback", "types", "new modules must pass mypy in strict mode"),
    ("project", "storage", "uploads go to the object store bucket named after the environment"),
    ("reference", "runbooks", "incident runbooks are in the wiki space called Operations"),
    ("project", "formatting", "code is formatted with ruff format; line length is 100"),
]


def _reference_file(kind: str, slug: str, text: str, shape: int) -> bytes:
    title = slug.replace("-", " ").title()
    if shape % 3 == 0:
        head = f"---\nname: {title}\ndescription: {text}\nmetadata:\n  type: {kind}\n---\n"
    else:
        head = f"---\nname: {title}\ndescription: {text}\ntype: {kind}\n---\n"
    body = f"\n{text}.\n\n**Why:** it came up in a review.\n**How to apply:** follow it.\n"
    data = (head + body).encode()
    return data.replace(b"\n", b"\r\n") if shape % 4 == 1 else data


def _reference_repo(team: Team, count: int = 27) -> dict[str, bytes]:
    """The first person's clone, with a mirror written file by file as the reference tool writes it."""
    first = team.clone("first")
    mirror = first.mirror
    mirror.mkdir()
    files: dict[str, bytes] = {}
    lines = []
    for i in range(count):
        kind, slug, text = TOPICS[i]
        name = f"{kind}_{slug}.md"
        files[name] = _reference_file(kind, slug, text, i)
        (mirror / name).write_bytes(files[name])
        lines.append(f"- [{slug.replace('-', ' ').title()}]({name}) — {text}")
    (mirror / "MEMORY.md").write_text("# Memory Index\n\n" + "\n".join(lines) + "\n")
    first.commit("memories of the reference tool")
    first.git("push", "-q", "origin", "HEAD:main")
    return files


def test_a_newcomer_trusts_injects_adds_consolidates_and_checks_a_reference_mirror_keeping_every_memory(
        team: Team) -> None:
    files = _reference_repo(team)
    newcomer = team.clone("newcomer")
    checked = newcomer.run("mirror check")
    assert checked.code == 0, checked.out
    for line in ("trust", "inject", "add 'Newcomer fact' -d 'the newcomer adds a safe fact' --visibility safe",
                 "consolidate --no-context", "mirror check", "audit", "verify"):
        result = newcomer.run(line)
        assert result.code == 0, (line, result.out, result.err)
    harness = newcomer.harness()
    for name, data in files.items():
        assert (newcomer.mirror / name).is_file(), name
        # Adopted as safe by where it lived: one line of frontmatter more, everything else as written.
        adopted = (harness / name).read_bytes()
        assert adopted.replace(b"visibility: safe\r\n", b"").replace(b"visibility: safe\n", b"") == data
        assert (newcomer.mirror / name).read_bytes() == adopted
    listed = json.loads(newcomer.run("list --json").out)["memories"]
    assert {row["file"] for row in listed} >= set(files)
    assert all(row["visibility"] == "safe" for row in listed if row["file"] in files)


def test_an_untrusted_newcomer_labels_no_reference_memory_private_and_injects_none(team: Team) -> None:
    files = _reference_repo(team, count=5)
    newcomer = team.clone("newcomer")
    block = newcomer.run("inject")
    assert block.code == 0
    assert not any(name in block.out for name in files), block.out
    added = newcomer.run("add 'Own note' -d 'a private note' -b private")
    assert added.code == 0, added.err
    for name, data in files.items():
        assert (newcomer.mirror / name).read_bytes() == data  # untouched, byte for byte


@pytest.fixture
def team(tmp_path: Path) -> Team:
    return Team.create(tmp_path)
