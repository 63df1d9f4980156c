"""Thin shell: parse the command line, run one command, map every error to its exit code."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from .commands import audit as _audit  # noqa: F401 - registers commands
from .commands import demo as _demo  # noqa: F401
from .commands import store as _store  # noqa: F401
from .commands._app import STATE, app, report_error
from .errors import MemfoldError


def _wants_json(argv: Sequence[str]) -> bool:
    return STATE.json or "--json" in argv


def main(argv: Sequence[str] | None = None) -> int:
    import typer

    args = list(sys.argv[1:] if argv is None else argv)
    try:
        result = app(args=args, prog_name="memfold", standalone_mode=False)
    except MemfoldError as exc:
        report_error(exc, _wants_json(args))
        return exc.exit_code
    except typer.Abort:
        sys.stderr.write("memfold: aborted\n")
        return 130
    except typer.TyperException as exc:
        show = getattr(exc, "show", None)
        if callable(show):
            show()
        else:
            sys.stderr.write(f"memfold: {exc}\n")
        return int(getattr(exc, "exit_code", 2))
    except KeyboardInterrupt:
        sys.stderr.write("memfold: interrupted\n")
        return 130
    except BrokenPipeError:
        return 1
    except Exception as exc:  # noqa: BLE001 - the one place unexpected errors are reported
        import os
        import traceback

        sys.stderr.write(f"memfold: internal error: {exc.__class__.__name__}: {exc}\n"
                         "  hint: this is a bug; rerun with MEMFOLD_DEBUG=1 for the traceback\n")
        if os.environ.get("MEMFOLD_DEBUG"):
            traceback.print_exc()
        return 1
    return result if isinstance(result, int) else 0
