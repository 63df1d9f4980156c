"""Loading the privacy rules: what a write that scans nothing never pays for."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

_PROBE = """
import sys
from pipeline.privacy import load_ruleset
rules = load_ruleset()
print("re2" in sys.modules, rules._keyword_set._compiled is not None)
if sys.argv[1] == "prepare":
    rules.prepare()
    print(rules._keyword_set._compiled is not None)
else:
    found = rules.scan("token: ghp_" + "Zq3x9Lm2Kp7Wv4Rt8Ny1Bc6Hd5Jf0Gs2Ta9E")
    print(sorted({f.rule_id for f in found}))
"""


def _probe(mode: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", _PROBE, mode], capture_output=True, text=True, check=True,
                          cwd=str(REPO), timeout=120)
    return proc.stdout.splitlines()


def test_the_keyword_set_compiles_on_the_first_scan_and_finds_what_it_did() -> None:
    loaded, found = _probe("scan")
    assert loaded == "False False"  # loading the rules imports no RE2 and compiles no set
    assert "github" in found.lower(), found


def test_preparing_the_rules_compiles_the_keyword_set_before_any_scan() -> None:
    assert _probe("prepare") == ["False False", "True"]


def test_the_shipped_rules_digest_is_cached_under_every_source_and_recomputed_when_one_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The digest names the verdicts a scan may keep: a cached one must never outlive a change to a
    file it hashes, and a file changed within the racy window is never cached."""
    import time

    from pipeline.privacy import loader

    sources = [tmp_path / "engine.py", tmp_path / "needs.json"]
    for path in sources:
        path.write_text(f"# {path.name}\n")
    monkeypatch.setattr(loader, "_digest_sources", lambda: [str(p) for p in sources])
    computed: list[str | None] = []
    real = loader._digest

    def counting(*args: Any) -> str | None:
        computed.append(real(*args))
        return computed[-1]

    monkeypatch.setattr(loader, "_digest", counting)
    home = tmp_path / "home"
    home.mkdir()
    rules = [{"id": "r1", "pattern": "x"}]
    first = loader._shipped_digest(str(home), rules, [], [])
    assert loader._shipped_digest(str(home), rules, [], []) == first
    assert len(computed) == 2  # the sources were just written: not cached
    assert not list(home.glob("cache/privacy-digest-*.json"))
    time.sleep(2.1)
    assert loader._shipped_digest(str(home), rules, [], []) == first
    assert loader._shipped_digest(str(home), rules, [], []) == first
    assert len(computed) == 3  # settled: cached, then read back
    assert len(list((home / "cache").glob("privacy-digest-*.json"))) == 1
    with open(sources[0], "a", encoding="utf-8") as fh:
        fh.write("CHANGED = True\n")
    changed = loader._shipped_digest(str(home), rules, [], [])
    assert len(computed) == 4 and changed != first
    assert changed == real(rules, [], [])


def test_a_cached_ruleset_digest_equals_the_one_computed_without_a_cache(tmp_path: Path) -> None:
    code = ("import sys; from pipeline.privacy import load_ruleset; "
            "print(load_ruleset(cache_home=sys.argv[1]).digest if sys.argv[1] else load_ruleset().digest)")
    runs = [subprocess.run([sys.executable, "-c", code, arg], capture_output=True, text=True, cwd=REPO, check=True)
            .stdout.strip() for arg in ("", str(tmp_path), str(tmp_path), "")]
    assert len(set(runs)) == 1 and len(runs[0]) == 64, runs
    assert list((tmp_path / "cache").glob("privacy-digest-*.json"))  # the package's files are settled
