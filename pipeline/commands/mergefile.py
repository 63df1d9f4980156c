"""``memfold merge-file KIND BASE OURS THEIRS [PATHNAME]``: the merge driver git runs for mirror files.

Hidden (git runs it, people do not), and started once per merged file, so it stays off typer. git's
protocol: the result goes into OURS; exit 0 when the merge is clean, 1 when it conflicts (above 128
would tell git the driver crashed). What memfold's merge cannot settle goes to git's own text merge,
which leaves the usual conflict markers.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

USAGE = ("usage: memfold merge-file {memory,head} BASE OURS THEIRS [PATHNAME] [--marker-size N] "
         "[--label-base S] [--label-ours X] [--label-theirs Y]")
# Placeholders that git before 2.44 leaves in the driver's command line as they are.
_UNEXPANDED = ("%S", "%X", "%Y")
_LABELS = {"--label-ours": 0, "--label-base": 1, "--label-theirs": 2}


def main(argv: Sequence[str]) -> int:
    """``argv``: what follows ``merge-file`` on the command line."""
    from ..errors import UsageError
    from ..mirror.merge import KINDS

    if any(a in ("-h", "--help") for a in argv):
        sys.stdout.write(USAGE + "\n")
        return 0
    positional, labels, marker_size = _parse(list(argv))
    if len(positional) not in (4, 5) or positional[0] not in KINDS:
        raise UsageError(f"merge-file takes KIND BASE OURS THEIRS [PATHNAME], KIND one of {', '.join(KINDS)}",
                         code="usage.merge-file", hint=USAGE)
    kind, base, ours, theirs = positional[:4]
    pathname = positional[4] if len(positional) == 5 else ours
    return merge_paths(kind, base, ours, theirs, pathname, labels, marker_size)


def _parse(items: list[str]) -> tuple[list[str], tuple[str, str, str], int]:
    from ..errors import UsageError

    positional: list[str] = []
    labels = ["ours", "base", "theirs"]
    marker_size = 7
    i = 0
    while i < len(items):
        item = items[i]
        if item not in _LABELS and item != "--marker-size":
            positional.append(item)
            i += 1
            continue
        if i + 1 >= len(items):
            raise UsageError(f"{item} needs a value", code="usage.merge-file", hint=USAGE)
        value = items[i + 1]
        if item == "--marker-size":
            if not value.isdigit() or not 0 < int(value) < 1000:
                raise UsageError(f"--marker-size {value!r} is not a marker length", code="usage.merge-file",
                                 hint=USAGE)
            marker_size = int(value)
        elif value and value not in _UNEXPANDED:
            labels[_LABELS[item]] = value
        i += 2
    return positional, (labels[0], labels[1], labels[2]), marker_size


def merge_paths(kind: str, base: str, ours: str, theirs: str, pathname: str, labels: tuple[str, str, str],
                marker_size: int) -> int:
    """Merge the three files git wrote; the result replaces OURS. 0 clean, 1 conflict."""
    from ..fsutil import atomic_write, read_bounded
    from ..mirror.merge import merge_versions

    mine = read_bounded(ours)
    done = merge_versions(kind, read_bounded(base), mine, read_bounded(theirs), pathname, labels, marker_size)
    if done is None:
        sys.stderr.write(f"memfold merge-file: git cannot merge {pathname} as text; our version is kept, "
                         "settle it by hand\n")
        return 1
    merged, clean = done
    if merged != mine:
        atomic_write(ours, merged, durable=False)  # git reads it back, then deletes it
    return 0 if clean else 1
