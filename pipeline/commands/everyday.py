"""Everyday curation: path, rename, clear, edit, and config check."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import typer

from ..errors import InputRejected, UsageError
from ._app import (
    GlobalOpt,
    JsonOpt,
    app,
    emit,
    home_dir,
    layout,
    lock_timeout,
    report_error,
    services,
    use_global,
    want_json,
)
from .memories import print_tx

config_app = typer.Typer(help="Inspect the user config.", no_args_is_help=True)
app.add_typer(config_app, name="config")


@app.command()
def path(global_: bool = GlobalOpt, json_out: bool = JsonOpt) -> int:
    """Print where everything lives: home, project home, stores, mirror, runs, receipts, config."""
    from ..paths import global_layout
    from .context import user_files

    use_global(global_)
    lay = layout()
    glob = global_layout(home_dir())
    data = {"home": str(lay.home), "projectRoot": None if lay.is_global else str(lay.project_root),
            "projectHome": str(lay.project_home), "privateStore": str(lay.harness),
            "mirror": str(lay.mirror) if lay.mirror else None, "globalStore": str(glob.harness),
            "runs": str(lay.runs), "receipts": str(lay.receipts), "config": str(user_files()[0]),
            "cache": str(user_files()[1]), "logs": str(user_files()[2])}
    human = "\n".join(f"{key:<13} {value if value is not None else '-'}" for key, value in data.items())
    emit({"ok": True, **data}, human, as_json=want_json(json_out))
    return 0


@app.command()
def rename(old: str = typer.Argument(...), new: str = typer.Argument(...), global_: bool = GlobalOpt,
           json_out: bool = JsonOpt) -> int:
    """Rename a memory: file name and title follow, body and dates are kept, receipted."""
    from ..edits import direct_transaction
    from ..state.ops import rename_ops

    use_global(global_)
    svc = services()
    build = rename_ops(old, new, svc.clock())
    return print_tx(direct_transaction(svc, "rename", build, lock_timeout=lock_timeout()), want_json(json_out))


@app.command()
def clear(yes: bool = typer.Option(False, "--yes", help="do not ask"), global_: bool = GlobalOpt,
          json_out: bool = JsonOpt) -> int:
    """Delete every memory of one scope as one transaction (undo it with `memfold undo RUN_ID`)."""
    from ..edits import direct_transaction
    from ..state.ops import clear_ops

    use_global(global_)
    svc = services()
    if not yes:
        if not sys.stdin.isatty():
            raise UsageError("refusing to clear without --yes when not on a terminal", code="usage.confirm",
                             hint="pass --yes to clear every memory of this scope")
        if not typer.confirm(f"Delete every memory of {svc.layout.label}?", default=False):
            emit({"ok": True, "cleared": False}, "nothing cleared", as_json=want_json(json_out))
            return 0
    return print_tx(direct_transaction(svc, "clear", clear_ops(), lock_timeout=lock_timeout()), want_json(json_out))


@app.command()
def edit(name: str = typer.Argument(...), global_: bool = GlobalOpt, json_out: bool = JsonOpt) -> int:
    """Open a memory in $VISUAL/$EDITOR; the result is validated and committed like any write."""
    from ..edits import direct_transaction
    from ..fsutil import read_bounded, sha256_bytes, write_new
    from ..state.ops import replace_ops, require_in
    from ..state.read import read_private

    use_global(global_)
    if not sys.stdin.isatty():
        raise UsageError("memfold edit needs a terminal", code="usage.no-tty",
                         hint="use `memfold update NAME --body-file FILE` from scripts")
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not editor:
        raise UsageError("set $VISUAL or $EDITOR to your editor", code="usage.no-editor")
    svc = services()
    harness, found, broken = read_private(svc.layout, svc.limits)
    actual = require_in(found, broken, name)
    original = harness.files[actual]
    scratch = svc.layout.project_home / f"edit-{os.getpid()}-{actual}"
    write_new(scratch, original)
    try:
        while True:
            subprocess.run((*shlex.split(editor), str(scratch)), check=False)
            content = read_bounded(scratch, svc.limits.max_file_bytes)
            if content == original:
                emit({"ok": True, "changed": False}, "no change", as_json=want_json(json_out))
                return 0
            try:
                build = replace_ops(actual, content, expected=sha256_bytes(original), now=svc.clock())
                result = direct_transaction(svc, "edit", build, lock_timeout=lock_timeout(), publish="named")
            except InputRejected as exc:
                report_error(exc, False)
                if typer.prompt("[r]e-open the editor or [a]bort", default="r").strip().lower().startswith("a"):
                    sys.stderr.write("aborted: nothing was written\n")
                    return exc.exit_code
                continue
            return print_tx(result, want_json(json_out))
    finally:
        scratch.unlink(missing_ok=True)


@config_app.command("check")
def config_check(json_out: bool = JsonOpt) -> int:
    """Validate config.yaml against schemas/config.schema.json and explain each problem."""
    from ..config import load_config
    from ..resources import load_schema
    from .context import user_files

    path_ = user_files()[0]
    cfg = load_config(path_)
    problems = list(cfg.problems)
    if not problems and path_.exists():
        problems += _schema_problems(path_, load_schema("config.schema.json"))
    data: dict[str, Any] = {"ok": not problems, "config": str(path_), "exists": path_.exists(),
                            "errors": [p.as_dict() for p in problems]}
    human = "\n".join(f"{p.path}: {p.message}" for p in problems) or f"{path_}: valid"
    emit(data, human, as_json=want_json(json_out))
    return 0 if not problems else 2


def _schema_problems(path_: Path, schema: dict[str, Any]) -> list[Any]:
    from jsonschema import Draft202012Validator

    from ..errors import Issue
    from ..store.yamltext import load_yaml

    data = load_yaml(path_.read_text(encoding="utf-8")) or {}
    return [Issue("config.schema", "$" + "".join(f".{p}" for p in e.absolute_path), e.message)
            for e in Draft202012Validator(schema).iter_errors(data)]

