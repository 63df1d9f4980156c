"""The per-prompt rows on their own (``python -m pipeline.bench.prompt``), for sizes the full bench skips."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REPO


@pytest.mark.integration
def test_the_prompt_rows_run_alone_and_name_their_floor_and_target() -> None:
    proc = subprocess.run([sys.executable, "-m", "pipeline.bench.prompt", "--reps", "1", "30"], capture_output=True,
                          text=True, timeout=300, cwd=str(REPO), check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for path in ("inject ", "inject --prompt ", "claude hook (start) ", "claude hook (prompt) "):
        found = [line for line in lines if line[:22].strip() == path.strip() and line[22:29].strip() == "30"]
        assert len(found) == 1 and "python" in found[0] and "<= 2.5x floor" in found[0], proc.stdout
    assert any(line.startswith("mcp memory_search") for line in lines), proc.stdout
    assert proc.stdout.splitlines()[-1].startswith("machine:")
