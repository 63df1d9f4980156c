"""The audit report: its model of a real chain, escaping of hostile memories, the public filter, file modes."""

from __future__ import annotations

import html
import re
import shutil
import stat
from pathlib import Path

import pytest
from conftest import Env
from report_chain import HOSTILE_BODY, HOSTILE_DESCRIPTION, PRIVATE, build_chain, report, store_sizes

from pipeline.receipts.report_model import lost_lines


def test_lost_lines_are_the_nonempty_lines_no_post_state_body_carries() -> None:
    before = "Keep this.\n\n  Lost   line  \nMoved line\nLost line\n"
    after = ["moved line\nunrelated", "Keep  this."]
    assert lost_lines(before, after) == ["Lost line", "Moved line"]
    assert lost_lines("only\n", ["only"]) == []
    assert lost_lines("", []) == []


@pytest.fixture
def chain(env: Env) -> Env:
    build_chain(env)
    return env


def _text(markup: str) -> str:
    """The page's text as a reader sees it (tags dropped, entities decoded)."""
    return html.unescape(re.sub(r"<[^>]+>", " ", markup))


def test_default_report_is_0600_under_the_home_and_says_it_holds_private_text(chain: Env) -> None:
    path, data = report(chain)
    assert path.parent == chain.home / "reports"
    assert path.name.startswith(chain.project_home.name[:12] + "-")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert data["mode"] == "0600" and data["public"] is False
    page = path.read_text()
    assert "holds private memory text" in page
    for _description, body in PRIVATE.values():
        assert html.escape(body.replace("\u202e", ""), quote=True) in page


def test_report_counts_match_the_chain_on_disk(chain: Env) -> None:
    path, data = report(chain)
    page = path.read_text()
    sizes = store_sizes(chain)
    assert data["receipts"] == len(sizes) == page.count('<li class="receipt')
    points = [(int(s), int(m)) for s, m in zip(re.findall(r'data-memories="(\d+)"', page),
                                                re.findall(r'data-mirror="(\d+)"', page), strict=True)]
    assert points == sizes
    assert data["handEdits"] == 1 and page.count('class="gap handedit"') == 1
    assert "harness/project_ci.md changed" in page


def test_a_consolidation_shows_merges_deletions_and_lost_lines(chain: Env) -> None:
    page = report(chain)[0].read_text()
    assert "project_ci-paraphrase.md: merged into project_ci.md, verdict SUBSUMED" in page
    assert "project_freeze.md: deleted, verdict DORMANT" in page
    # The merge kept every line of the paraphrase; the expired memory's line lives on nowhere.
    merged = page.split("project_ci-paraphrase.md: merged")[1].split("</details>")[0]
    assert 'class="lost"' not in merged and "The nightly job also runs fuzzing." in merged
    deleted = page.split("project_freeze.md: deleted")[1].split("</details>")[0]
    assert '<ul class="lost"><li>No releases during the freeze.</li></ul>' in deleted


def test_hostile_memory_text_is_escaped_and_never_markup(chain: Env) -> None:
    page = report(chain)[0].read_text()
    assert page.count("<script") == 0 and page.count("</style>") == 1
    assert "javascript:" not in re.sub(r">[^<]*<", "><", page)  # only ever as text, never in a tag
    assert "\u202e" not in page and "onerror=" not in re.sub(r">[^<]*<", "><", page)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "javascript:alert(1)" in _text(page)
    assert 'http-equiv="Content-Security-Policy" content="default-src &#x27;none&#x27;' in page
    assert not re.search(r"<(a|link|img|iframe|script|object|embed)\b", page)
    assert HOSTILE_DESCRIPTION and HOSTILE_BODY


def test_public_report_holds_no_private_name_or_text_and_is_0644(chain: Env, tmp_path: Path) -> None:
    out = tmp_path / "pr" / "report.html"
    out.parent.mkdir()
    path, data = report(chain, "--public", "--out", str(out))
    assert path == out and stat.S_IMODE(out.stat().st_mode) == 0o644 and data["public"] is True
    page = out.read_text()
    text = _text(page)
    for name, (description, body) in PRIVATE.items():
        for value in (name, description, body, " ".join(body.split()[:2])):
            assert value not in page and value not in text, value
    assert str(chain.project) not in page
    assert "Public report" in page and "project_ci.md" in page


def test_public_report_never_shows_the_scope_key_which_would_confirm_a_guessed_project_path(chain: Env) -> None:
    key = chain.project_home.name  # sha256 of the project's absolute path
    path, _ = report(chain, "--public")
    page = path.read_text()
    for length in (64, 16, 12, 8):
        assert key[:length] not in page and key[:length].upper() not in page
    assert key[:12] not in path.name and path.name.startswith("public-")
    private = report(chain)[0].read_text()
    assert f"scope {key}" in private  # the private report keeps it for its owner


def test_a_pruned_run_dir_is_reported_not_fatal(chain: Env) -> None:
    runs = sorted((chain.project_home / "runs").iterdir())
    shutil.rmtree(runs[0])
    page = report(chain)[0].read_text()
    assert "The run dir is gone (pruned)" in page


def test_since_starts_at_the_named_run_and_an_unknown_run_is_a_usage_error(chain: Env) -> None:
    receipts = sorted((chain.project_home / "receipts").iterdir())
    run_id = receipts[-2].name[9:-5]
    page = report(chain, "--since", run_id)[0].read_text()
    assert page.count('<li class="receipt') == 2
    result = chain.run("report", "--json", "--since", "20990101T000000Z-00000000")
    assert result.code == 2 and result.json()["code"] == "usage.no-run"


def test_an_undo_names_the_run_it_undid_and_a_broken_link_is_marked(chain: Env) -> None:
    import json

    newest = sorted((chain.project_home / "receipts").iterdir())
    undone = json.loads(newest[-2].read_bytes())["runId"]
    page = report(chain)[0].read_text()
    assert f"undo (undoes {undone})" in page and "CHAIN BREAK" not in page
    data = json.loads(newest[-1].read_bytes())
    data["previous"] = "2" * 64
    newest[-1].write_text(json.dumps(data))
    path, summary = report(chain)
    page = path.read_text()
    assert summary["auditOk"] is False
    marked = re.findall(r'<li class="receipt failed chain-break" id="r(\d+)"', page)
    assert marked == [str(len(newest))] and "FAIL receipt.chain" in page


def test_an_unwritable_out_is_a_usage_error_that_names_the_path(chain: Env, tmp_path: Path) -> None:
    out = tmp_path / "missing" / "report.html"
    result = chain.run("report", "--json", "--out", str(out))
    assert result.code == 2 and result.json()["code"] == "usage.report-out"
    assert str(out) in result.json()["message"] and result.json()["hint"]
    assert not out.parent.exists()


def test_a_compact_plan_is_read_in_its_full_shape(tmp_path: Path) -> None:
    """The report reads a run's plan.json: in the compact shape a merge equal to the default item is not
    listed, and must still show its verdict (merged, not deleted) as it does in the full shape."""
    import json

    from pipeline.planner.planjson import compacted
    from pipeline.receipts.report import _plan
    from pipeline.receipts.report_model import Texts

    names = ["a.md", "b.md", "c.md"]
    stale = {"verdict": "SUBSUMED", "reason": "a duplicate of c.md"}
    plan = {"selected": names, "staleness": [{"name": "a.md", **stale}, {"name": "b.md", **stale},
                                             {"name": "c.md", "verdict": "CURRENT", "reason": "kept"}],
            "clusters": [{"name": "c", "files": names}], "operations": []}
    (tmp_path / "plan.json").write_text(json.dumps(compacted(plan)))
    read = _plan(tmp_path, Texts())
    assert "defaults" not in read
    assert {s["name"]: s["verdict"] for s in read["staleness"]} == \
        {"a.md": "SUBSUMED", "b.md": "SUBSUMED", "c.md": "CURRENT"}
