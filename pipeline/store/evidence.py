"""Evidence: the repository text a memory cites, kept as a hash, and whether that text still holds.

A memory's ``evidence:`` frontmatter lists citations, each a repository-relative ``path``, an optional
line range and the sha256 of the cited text after whitespace normalisation (each line's runs of
whitespace collapsed to one space, leading and trailing whitespace dropped), never the text itself:

    evidence:
    - path: "Makefile"
      lines: 12-14
      sha256: 3f1c...

A citation without ``lines`` hashes the whole file; one without ``sha256`` only says the file exists
(what memfold records for a path the memory's text names). This module holds a citation and its forms
(frontmatter, index row); ``citecheck`` checks citations against the work tree.

The per-prompt path imports this module: no ``re``, ``json`` or ``pathlib`` here.
"""

from __future__ import annotations

from ..errors import InputRejected
from ..frozen import FrozenValue

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any

MAX_CITES = 32
MAX_RANGE = 500  # lines in one citation
MAX_CITED_BYTES = 4 << 20  # a cited file larger than this is not read (its citation is "unchecked")
MAX_PATH = 1024
SETTLED_NS = 2_000_000_000

# What a check finds for one citation.
HOLDS, MOVED, CHANGED, GONE, RENAMED, UNCHECKED = "holds", "moved", "changed", "gone", "renamed", "unchecked"
DRIFT = frozenset({CHANGED, GONE, RENAMED})


def _hex64(value: str) -> bool:
    return len(value) == 64 and all(ch in "0123456789abcdef" for ch in value)


def _has_invisible(text: str) -> bool:
    """Whether ``text`` holds a control, format (bidi), private-use or line-separator character: such a
    path would disguise itself in the mark the model reads (``[cited file is gone: …]``)."""
    import unicodedata

    return any(unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs", "Zl", "Zp") for ch in text)


def path_problem(path: str) -> str | None:
    """Why ``path`` is not a plain repository-relative file path, or None."""
    if not path or len(path) > MAX_PATH:
        return "is empty or too long"
    if not (path.isascii() and path.isprintable()) and _has_invisible(path):
        return "contains a control or invisible character"
    if path.startswith(("/", "~")) or (len(path) > 1 and path[1] == ":" and path[0].isalpha()):
        return "is absolute; give it relative to the repository root"
    if "\\" in path:
        return "contains a backslash; use '/' between components"
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "has an empty, '.' or '..' component"
    if parts[0] == ".git":
        return "is inside .git"
    return None


class Cite(FrozenValue):
    """One citation: ``path`` (repository-relative), lines ``start``-``end`` (None: the whole file),
    and the sha256 of the normalised text (None: the file's existence only)."""

    __slots__ = ("path", "start", "end", "sha256")
    path: str
    start: int | None
    end: int | None
    sha256: str | None

    def __init__(self, path: str, start: int | None = None, end: int | None = None,
                 sha256: str | None = None) -> None:
        self._set(path=path, start=start, end=end, sha256=sha256)

    @property
    def lines(self) -> str | None:
        if self.start is None:
            return None
        return str(self.start) if self.end == self.start else f"{self.start}-{self.end}"

    @property
    def where(self) -> str:
        """``Makefile:12``, ``Makefile:12-14`` or ``Makefile``."""
        return self.path if self.start is None else f"{self.path}:{self.lines}"

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path}
        if self.start is not None:
            out["lines"] = self.lines
        if self.sha256 is not None:
            out["sha256"] = self.sha256
        return out


def _evidence_error(file: str, message: str) -> InputRejected:
    return InputRejected(f"{file}: evidence {message}", code="memory.evidence",
                         hint="each entry is a repository-relative path, optional lines (12 or 12-14) and "
                              "the sha256 memfold computed; `memfold update NAME --cite PATH:LINES` writes one")


def parse_lines(value: object, file: str) -> tuple[int, int]:
    """``12`` or ``12-14`` (as YAML gives it: an int or a string) as (start, end)."""
    if isinstance(value, int) and not isinstance(value, bool):
        start = end = value
    elif isinstance(value, str) and value.replace("-", "", 1).isdigit() and value.isascii():
        head, _, tail = value.partition("-")
        start, end = int(head), int(tail or head)
    else:
        raise _evidence_error(file, f"lines {value!r} are not a line or a range (12 or 12-14)")
    if start < 1 or end < start or end - start + 1 > MAX_RANGE:
        raise _evidence_error(file, f"lines {value!r} are not a range of 1 to {MAX_RANGE} lines from line 1")
    return start, end


def as_yaml(cites: Sequence[Cite]) -> list[dict[str, object]]:
    """The citations as YAML reads the block ``render_lines`` writes (a single line is an integer)."""
    out: list[dict[str, object]] = []
    for cite in cites:
        entry: dict[str, object] = {"path": cite.path}
        if cite.start is not None:
            entry["lines"] = cite.start if cite.end == cite.start else f"{cite.start}-{cite.end}"
        if cite.sha256 is not None:
            entry["sha256"] = cite.sha256
        out.append(entry)
    return out


def cite_of(entry: object, file: str) -> Cite:
    """One entry of the frontmatter list, checked."""
    if not isinstance(entry, dict) or not set(entry) <= {"path", "lines", "sha256"} or "path" not in entry:
        raise _evidence_error(file, "entries are mappings of path, lines and sha256")
    path = entry["path"]
    if not isinstance(path, str):
        raise _evidence_error(file, "path must be a string")
    problem = path_problem(path)
    if problem is not None:
        raise _evidence_error(file, f"path {path!r} {problem}")
    start = end = None
    if entry.get("lines") is not None:
        start, end = parse_lines(entry["lines"], file)
    sha = entry.get("sha256")
    if sha is not None and not (isinstance(sha, str) and _hex64(sha)):
        raise _evidence_error(file, f"sha256 of {path!r} is not 64 lower-case hex digits")
    if sha is None and start is not None:
        raise _evidence_error(file, f"{path!r} cites lines without their sha256")
    return Cite(path, start, end, sha)


def cites_of(value: object, file: str) -> tuple[Cite, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _evidence_error(file, "must be a list")
    if len(value) > MAX_CITES:
        raise _evidence_error(file, f"has {len(value)} entries; at most {MAX_CITES}")
    return unique(cite_of(entry, file) for entry in value)


def unique(cites: Iterable[Cite]) -> tuple[Cite, ...]:
    """In order, each citation once (a later one of the same path and lines replaces an earlier)."""
    kept: dict[tuple[str, int | None, int | None], Cite] = {}
    for cite in cites:
        kept[(cite.path, cite.start, cite.end)] = cite
    return tuple(kept.values())


def render_lines(cites: Sequence[Cite], quote: Callable[[str], str]) -> list[str]:
    """The frontmatter lines of ``cites`` (``quote`` writes a JSON-style double-quoted string)."""
    if not cites:
        return []
    out = ["evidence:"]
    for cite in cites:
        out.append(f"- path: {quote(cite.path)}")
        if cite.start is not None:
            out.append(f"  lines: {cite.lines}")
        if cite.sha256 is not None:
            # 64 decimal digits would read back as a YAML integer: quoted then (odds of 1 in 10^13).
            out.append(f"  sha256: {quote(cite.sha256) if cite.sha256.isdigit() else cite.sha256}")
    return out


def parse_block(lines: Sequence[str]) -> tuple[Cite, ...] | None:
    """The citations of a block ``render_lines`` wrote, read without YAML; None for any other shape."""
    entries: list[dict[str, object]] = []
    for line in lines:
        if line.startswith("- path: "):
            entries.append({})
            key, value = "path", line[8:]
        elif line.startswith("  ") and entries:
            key, sep, value = line[2:].partition(": ")
            if not sep or key not in ("lines", "sha256") or key in entries[-1]:
                return None
        else:
            return None
        if key == "path":
            if len(value) < 2 or value[0] != '"' or value[-1] != '"' or '"' in value[1:-1] or "\\" in value:
                return None
            entries[-1]["path"] = value[1:-1]
        elif key == "lines":
            entries[-1]["lines"] = value
        else:
            entries[-1]["sha256"] = value[1:-1] if len(value) == 66 and value[0] == value[-1] == '"' else value
    try:
        return cites_of(entries, "<evidence>") if entries else None
    except InputRejected:
        return None


# The search index keeps a memory's citations as text: one line per citation, tab-separated.
def to_row(cites: Sequence[Cite]) -> str | None:
    if not cites:
        return None
    return "\n".join(f"{c.path}\t{c.start or ''}\t{c.end or ''}\t{c.sha256 or ''}" for c in cites)


def from_row(text: str | None) -> tuple[Cite, ...]:
    if not text:
        return ()
    out = []
    for line in text.split("\n"):
        path, start, end, sha = line.split("\t")
        out.append(Cite(path, int(start) if start else None, int(end) if end else None, sha or None))
    return tuple(out)
