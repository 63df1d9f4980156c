"""``memfold merge-file``: git's merge driver protocol (result in OURS, exit 0 clean, 1 conflict), light."""

from __future__ import annotations

import io
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from conftest import REPO, Result
from test_merge import BASE, change, head

from pipeline.cli import main


def driver(*args: str) -> Result:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["merge-file", *args])
    return Result(code, out.getvalue(), err.getvalue())


def versions(tmp_path: Path, base: bytes, ours: bytes, theirs: bytes) -> tuple[str, str, str]:
    paths = []
    for name, data in (("base", base), ("ours", ours), ("theirs", theirs)):
        path = tmp_path / f".merge_file_{name}"
        path.write_bytes(data)
        paths.append(str(path))
    return paths[0], paths[1], paths[2]


def test_a_clean_memory_merge_lands_in_ours_and_exits_0(tmp_path: Path) -> None:
    ours = change(BASE, ("deploys go", "all deploys go"))
    theirs = change(BASE, ("Staging first.", "QA first."))
    base, mine, other = versions(tmp_path, BASE, ours, theirs)
    result = driver("memory", base, mine, other, ".memory/project_deploy-target.md")
    assert result.code == 0, result.err
    assert Path(mine).read_bytes() == change(BASE, ("deploys go", "all deploys go"), ("Staging first.", "QA first."))
    assert Path(base).read_bytes() == BASE and Path(other).read_bytes() == theirs
    assert sorted(p.name for p in tmp_path.iterdir()) == [".merge_file_base", ".merge_file_ours", ".merge_file_theirs"]


def test_a_conflict_leaves_gits_markers_in_ours_and_exits_1(tmp_path: Path) -> None:
    ours = change(BASE, ("Staging first.", "Canary first."))
    theirs = change(BASE, ("Staging first.", "Blue/green first."))
    base, mine, other = versions(tmp_path, BASE, ours, theirs)
    result = driver("memory", base, mine, other, ".memory/x.md", "--marker-size", "9", "--label-base", "%S",
                    "--label-ours", "HEAD", "--label-theirs", "%Y")
    assert result.code == 1
    assert b"\n<<<<<<<<< HEAD\nCanary first.\n=========\nBlue/green first.\n>>>>>>>>> theirs\n" in Path(mine).read_bytes()


def test_the_higher_chain_head_lands_in_ours(tmp_path: Path) -> None:
    base, mine, other = versions(tmp_path, head(1), head(2), head(4))
    assert driver("head", base, mine, other).code == 0
    assert Path(mine).read_bytes() == head(4)


def test_versions_git_cannot_merge_keep_ours_and_say_so(tmp_path: Path) -> None:
    base, mine, other = versions(tmp_path, b"\0a", b"\0b", b"\0c")
    result = driver("head", base, mine, other, ".memfold/heads/x.json")
    assert result.code == 1
    assert Path(mine).read_bytes() == b"\0b"
    assert "our version is kept" in result.err and ".memfold/heads/x.json" in result.err


@pytest.mark.parametrize("args", [["memo", "a", "b", "c"], ["memory", "a", "b"], ["head", "a", "b", "c", "d", "e"],
                                  ["head", "a", "b", "c", "--marker-size", "x"], ["head", "a", "b", "c", "--label-ours"]])
def test_a_wrong_command_line_is_a_usage_error(args: list[str]) -> None:
    result = driver(*args)
    assert result.code == 2
    assert "usage.merge-file" in result.err


def test_help_prints_the_usage() -> None:
    result = driver("--help")
    assert result.code == 0 and result.out.startswith("usage: memfold merge-file")


def test_the_driver_process_never_imports_typer(tmp_path: Path) -> None:
    base, mine, other = versions(tmp_path, head(1), head(3), head(2))
    code = ("import sys\nfrom pipeline.cli import main\n"
            f"rc = main(['merge-file', 'head', {base!r}, {mine!r}, {other!r}])\n"
            "print('TYPER', 'typer' in sys.modules, 'pydantic' in sys.modules, file=sys.stderr)\n"
            "raise SystemExit(rc)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == "TYPER False False"
    assert Path(mine).read_bytes() == head(3)


def test_a_json_command_earlier_in_the_same_process_leaves_its_errors_as_text(tmp_path: Path) -> None:
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        main(["--home", str(tmp_path / "home"), "--project", str(tmp_path), "--json", "list"])
    result = driver("head", "a", "b", "c", "--label-ours")
    assert (result.code, result.out) == (2, "") and "[usage.merge-file]" in result.err
