"""Loading the privacy rules: what a write that scans nothing never pays for."""

from __future__ import annotations

import subprocess
import sys

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
