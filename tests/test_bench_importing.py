"""The import rows of the bench, run alone: each size a row with its floor, then the growth line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.bench.importing import write_claude_dir


def test_a_generated_claude_dir_holds_its_files_and_an_index(tmp_path: Path) -> None:
    write_claude_dir(tmp_path / "c", 60)
    names = sorted(p.name for p in (tmp_path / "c").iterdir())
    assert len(names) == 61 and "MEMORY.md" in names
    index = (tmp_path / "c" / "MEMORY.md").read_text("utf-8")
    assert index.count("\n- [") == 60
    # The shapes real dirs hold: a CJK file name, a nested ``metadata.type``.
    assert "metadata:\n  type: user\n" in (tmp_path / "c" / "部署-0.md").read_text("utf-8")


@pytest.mark.integration
def test_the_import_rows_run_alone_with_floors_and_growth(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "pipeline.bench.importing", "--reps", "2", "20", "60"],
                          capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line for line in proc.stdout.splitlines() if line.startswith("import claude")]
    assert [line.split()[2] for line in rows] == ["20", "60"]
    assert all("python+staged-writes" in line for line in rows)
    growth = [line for line in proc.stdout.splitlines() if line.startswith("import t(60)/t(20) = ")]
    assert len(growth) == 1 and "growth exponent" in growth[0]
