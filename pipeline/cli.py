"""Thin shell: parse the command line, run one command, map every error to its exit code."""

from __future__ import annotations

import sys

from .errors import MemfoldError, exit_after_handlers, exit_flushed

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

_VALUE_OPTIONS = {"--home", "--project"}
FAST_COMMANDS = {"inject"}
# Commands whose process ends without tearing the interpreter down once their exit handlers ran: a
# consolidation imports ~200 modules, and freeing them took ~30 ms after its summary was printed; a
# write at 2,000 memories spent 12-15 ms freeing its parsed store and state cache after its receipt.
QUICK_EXIT_COMMANDS = {"consolidate", "add", "update", "forget", "sync"}
# The commands of ``commands.spec``, which the typer-free fast path parses (kept literal: no import here).
QUICK_COMMANDS = {"add", "update", "forget", "list", "show", "status", "search", "consolidate", "validate", "verify",
                  "audit", "mcp", "import", "export", "sync"}
VERSION_FLAGS = {"--version", "-V"}


def _command_of(args: Sequence[str]) -> tuple[str | None, list[str]]:
    """The subcommand and the arguments around it (global options may come first)."""
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in _VALUE_OPTIONS and i + 1 < len(args):
            rest += [arg, args[i + 1]]
            i += 2
            continue
        if arg.startswith("-"):
            rest.append(arg)
            i += 1
            continue
        return arg, rest + list(args[i + 1 :])
    return None, rest


def run() -> int:
    """The console script and ``python -m pipeline``: one command, in a process of its own."""
    args = sys.argv[1:]
    if _command_of(args)[0] in FAST_COMMANDS | QUICK_COMMANDS:
        # Reference counting frees nearly everything such a short process allocates; the cyclic
        # collector's passes over import-time and parsed objects cost ~5 % of inject and add.
        import gc

        gc.disable()
    code = main(args)
    command = _command_of(args)[0]
    if command in FAST_COMMANDS:
        # The per-prompt path has closed its indexes and written its session file by now: tearing
        # down ~80 modules and the SQLite library would add ~3 ms to every prompt for nothing.
        exit_flushed(code)
    if command in QUICK_EXIT_COMMANDS:
        exit_after_handlers(code)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    context = sys.modules.get(f"{__package__}.commands.context")
    if context is not None:
        # One invocation's options (--json, --home, the config it read) never carry into the next one a
        # process makes: an error of a command that sets none of them is reported as that command asks.
        context.STATE.__init__()
    if any("\0" in arg for arg in args):
        # No path, name or value can hold a NUL byte; the OS would refuse it deep inside a command.
        from .errors import UsageError

        return _guarded(lambda: _raise(UsageError("an argument holds a NUL byte", code="usage.nul",
                                                  hint="remove the NUL character from the command line")), args)
    if args[:1] and args[0] in VERSION_FLAGS and len(args) == 1:
        from . import __version__

        sys.stdout.write(f"memfold {__version__}\n")
        return 0
    command, rest = _command_of(args)
    if command in FAST_COMMANDS:
        # The per-prompt path: no typer, pydantic, jsonschema or portalocker import.
        from .hosts.inject import main as inject_main

        try:
            return inject_main(rest)
        except SystemExit as exc:  # --help
            return int(exc.code or 0)
    if command == "merge-file":
        # git's merge driver for mirror files, started once per merged file: no typer.
        from .commands.mergefile import main as merge_main

        return _guarded(lambda: merge_main(rest), args)
    if command in QUICK_COMMANDS:
        # Everyday commands, consolidate and the checkers in their plain forms skip typer (and pydantic).
        from .commands.quick import parse

        run = parse(args)
        if run is not None:
            return _guarded(run, args)
    return _full(args)


def _raise(error: MemfoldError) -> int:
    raise error


def _full(args: list[str]) -> int:
    import typer

    from .commands.registry import full_app
    from .commands.typed import run as run_app

    app = full_app()

    def invoke() -> int:
        try:
            # The demo runs whole commands: it is handed this entry point as the context object.
            return run_app(app, args, main)
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

    return _guarded(invoke, args)


def _guarded(call: Callable[[], int], args: list[str]) -> int:
    """Run one command; map every error to its exit code and a message without a traceback."""
    try:
        return call()
    except MemfoldError as exc:
        from .commands.context import STATE, report_error

        report_error(exc, STATE.json or "--json" in args)
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("memfold: interrupted\n")
        return 130
    except BrokenPipeError:
        return 1
    except OSError as exc:
        # A path the user gave (--home, --project, a file argument) that cannot be used: not a bug.
        from .commands.context import STATE, report_error
        from .errors import InputRejected

        where = f"{exc.filename}: " if exc.filename else ""
        error = InputRejected(f"{where}{exc.strerror or exc}", code="io.path",
                              hint="check the paths given (--home, --project, $MEMFOLD_HOME, file arguments) "
                              "and their permissions")
        report_error(error, STATE.json or "--json" in args)
        return error.exit_code
    except Exception as exc:
        import os
        import traceback

        from .safetext import visible

        sys.stderr.write(visible(f"memfold: internal error: {exc.__class__.__name__}: {exc}\n")
                         + "  hint: this is a bug; rerun with MEMFOLD_DEBUG=1 for the traceback\n")
        if os.environ.get("MEMFOLD_DEBUG"):
            traceback.print_exc()
        return 1
