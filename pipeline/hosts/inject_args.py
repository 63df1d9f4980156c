"""The command line of ``memfold inject``, parsed by hand: argparse would cost more than the rest of the
per-prompt path. ``HELP`` is also where the generated command reference reads its options."""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

FORMATS = ("text", "json", "claude-hook")


USAGE = ("usage: memfold inject [--home DIR] [--project DIR] [--query TEXT | --prompt TEXT] [--session ID]\n"
         "                      [--max-bytes N] [--max-files N] [--format text|json|claude-hook] [--json]\n")
HELP = USAGE + """
Print the bounded memory context block a host puts before the model.

  --home DIR          the memfold home (default $MEMFOLD_HOME, else the user data dir)
  --project DIR       the project (default: the working directory)
  --query TEXT        also include the bodies of the memories that best match TEXT
  --prompt TEXT       the block for one prompt: only the bodies relevant to TEXT not yet sent in
                      --session (no index, no guidance; empty when nothing new is relevant)
  --session ID        the host's session: bodies it was sent are not sent again
  --max-bytes N       the block's byte budget (default: inject.max_bytes, else 16000)
  --max-files N       at most N memory bodies (default: inject.max_files, else 8)
  --format FORMAT     text (default), json, or claude-hook (reads the hook JSON on stdin)
  --json              the same as --format json
"""


class Args:
    """The parsed command line (argparse would cost more than the rest of this path)."""

    def __init__(self) -> None:
        self.home: str | None = None
        self.project: str | None = None
        self.query: str | None = None
        self.prompt: str | None = None
        self.session: str | None = None
        self.max_bytes: int | None = None
        self.max_files: int | None = None
        self.format = "text"
        self.json_out = False


class Usage(Exception):
    pass


_VALUED = {"--home": "home", "--project": "project", "--query": "query", "--prompt": "prompt",
           "--session": "session", "--max-bytes": "max_bytes",
           "--max-files": "max_files", "--format": "format"}


def parse_args(argv: Sequence[str]) -> Args:
    args = Args()
    items = list(argv)
    i = 0
    while i < len(items):
        item = items[i]
        i += 1
        if item in ("-h", "--help"):
            sys.stdout.write(HELP)
            raise SystemExit(0)
        if item == "--json":
            args.json_out = True
            continue
        option, eq, value = item.partition("=")
        if option not in _VALUED or (not eq and item != option):
            raise Usage(f"unrecognized argument: {item}")
        if not eq:
            if i >= len(items):
                raise Usage(f"{option} expects a value")
            value = items[i]
            i += 1
        setattr(args, _VALUED[option], _value(option, value))
    if args.query is not None and args.prompt is not None:
        raise Usage("give --query or --prompt, not both")
    return args


def _value(option: str, value: str) -> str | int:
    if option in ("--max-bytes", "--max-files"):
        if not value.isdigit() or int(value) < 1:
            raise Usage(f"{option} expects a positive integer, not {value!r}")
        return int(value)
    if option == "--format" and value not in FORMATS:
        raise Usage(f"--format is one of {', '.join(FORMATS)}, not {value!r}")
    return value
