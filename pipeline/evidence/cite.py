"""Citations as people and agents give them (``--cite PATH[:A[-B]]``), the paths a memory's text names,
and re-anchoring a memory's citations to the text the repository holds now."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from ..errors import InputRejected
from ..store.citecheck import anchor, check, read_cited
from ..store.evidence import GONE, UNCHECKED, Cite, path_problem, unique
from ..store.memory import Memory

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def parse_spec(spec: str) -> tuple[str, int | None, int | None]:
    """``PATH``, ``PATH:12`` or ``PATH:12-14`` as (path, start, end)."""
    path, sep, tail = spec.rpartition(":")
    if sep and tail and tail.replace("-", "", 1).isdigit() and tail.isascii() and not tail.startswith("-"):
        head, _, last = tail.partition("-")
        return path, int(head), int(last or head)
    return spec, None, None


def relative(root: Path, raw: str, base: Path | None = None) -> str:
    """``raw`` as a path relative to ``root``: as given when it is relative to the root, or (the
    caller's working directory ``base``) relative to that directory, or absolute inside the root."""
    root_real = os.path.realpath(root)
    candidates = []
    if os.path.isabs(raw):
        candidates.append(raw)
    else:
        if base is not None:
            candidates.append(os.path.join(base, raw))
        candidates.append(os.path.join(root, raw))
    for candidate in candidates:
        full = os.path.normpath(candidate)
        real = os.path.realpath(full)
        if os.path.isfile(real) and (real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)):
            # Relative to the root as named (a link inside the repository keeps its own name).
            for start in (os.path.normpath(str(root)), root_real):
                rel = os.path.relpath(full, start)
                if not rel.startswith(".."):
                    return rel.replace(os.sep, "/")
            return os.path.relpath(real, root_real).replace(os.sep, "/")
    raise InputRejected(f"--cite {raw}: no such file in the repository {root}", code="evidence.path",
                        hint="cite a file inside the project, relative to its root (e.g. Makefile:12)")


def from_specs(root: Path, specs: Iterable[str], base: Path | None = None) -> tuple[Cite, ...]:
    """Each ``--cite`` anchored to the file's text now; refused when outside the repository or past its end."""
    out = []
    for spec in specs:
        raw, start, end = parse_spec(spec.strip())
        rel = relative(root, raw, base)
        problem = path_problem(rel)
        if problem is not None:
            raise InputRejected(f"--cite {spec}: the path {problem}", code="evidence.path",
                                hint="cite a file inside the project, relative to its root")
        data = read_cited(str(root), rel)
        if data is None:
            raise InputRejected(f"--cite {spec}: {rel} is not a readable file inside the repository",
                                code="evidence.path", hint="cite a regular file inside the project")
        if not data and os.path.getsize(os.path.join(root, rel)) > 0:
            raise InputRejected(f"--cite {spec}: {rel} is too large to cite", code="evidence.path",
                                hint="cite a smaller file, or a few lines of a file under 4 MiB")
        out.append(anchor(rel, data, start, end))
    return unique(out)


def mentioned(memory: Memory, tracked: set[str] | None) -> tuple[Cite, ...]:
    """The files the memory's text names that git tracks, as citations of their existence only.

    Conservative: a path counts only as written (backticked or path-shaped, never a bare word) and only
    when it is exactly a tracked file's path; its text is not hashed, so an edit of the file never
    marks the memory, only the file's removal or move does."""
    if not tracked:
        return ()
    from ..planner.grounding import extract

    return tuple(Cite(path) for path in extract(memory).paths if path in tracked)


def reanchor(root: Path, cites: Sequence[Cite], follow: Callable[[str], str | None] | None
             ) -> tuple[tuple[Cite, ...], list[str]]:
    """The citations re-anchored to the repository as it is: moved text to its new lines, a renamed file
    to its new path, changed text to what the cited lines hold now; a gone file's citation is dropped.
    Returns them with a note for each change."""
    out: list[Cite] = []
    notes: list[str] = []
    for found in check(str(root), cites, follow):
        cite = found.cite
        if found.status == GONE:
            notes.append(f"dropped {cite.where}: the file is gone")
            continue
        if found.status == UNCHECKED:
            out.append(cite)
            continue
        path = found.path
        start, end = (found.start, found.end) if found.start is not None else (cite.start, cite.end)
        if cite.sha256 is None:
            fresh = Cite(path)
        else:
            data = read_cited(str(root), path) or b""
            try:
                fresh = anchor(path, data, start, end)
            except InputRejected:
                # The cited lines are no longer there (the file got shorter): the whole file stands in.
                fresh = anchor(path, data, None, None)
        out.append(fresh)
        if fresh != cite:
            now = "the text it holds now" if fresh.where == cite.where else fresh.where
            notes.append(f"re-anchored {cite.where} to {now}")
    return unique(out), notes


def evidence_for(root: Path, memory: Memory, specs: Sequence[str], tracked: set[str] | None,
                 follow: Callable[[str], str | None] | None, base: Path | None = None,
                 ) -> tuple[tuple[Cite, ...], list[str]]:
    """A written memory's citations: its old ones re-anchored, those given (``--cite``) replacing any of
    the same path and lines, and the tracked files its text names."""
    kept, notes = reanchor(root, memory.evidence, follow)
    given = from_specs(root, specs, base)
    detected = [c for c in mentioned(memory, tracked) if not any(k.path == c.path for k in (*kept, *given))]
    return unique([*kept, *given, *detected]), notes


def describe(cites: Sequence[Cite]) -> list[dict[str, Any]]:
    return [c.as_dict() for c in cites]


class Follower:
    """Where git saw a gone file move to, asked once per path."""

    def __init__(self, root: Path, git: bool = True) -> None:
        self.root = root
        self.git = git
        self._known: dict[str, str | None] = {}

    def __call__(self, path: str) -> str | None:
        if not self.git:
            return None
        if path not in self._known:
            from ..mirror.gitinfo import renamed_to

            self._known[path] = renamed_to(self.root, path)
        return self._known[path]


class Citing:
    """The citations of the memory a command writes: ``--cite`` given (relative to ``base``, the caller's
    directory), the tracked files its text names, and (update) its old ones re-anchored. ``root`` is
    None for the global store, which belongs to no repository."""

    def __init__(self, root: Path | None, specs: Sequence[str] | None, base: Path | None = None) -> None:
        self.root = root
        self.specs = list(specs or [])
        self.base = base
        self.notes: list[str] = []
        if root is None and self.specs:
            raise InputRejected("--cite needs a project: the global store belongs to no repository",
                                code="evidence.global", hint="drop --cite, or write the memory in the project")

    def _tracked(self, memory: Memory) -> set[str] | None:
        from ..mirror import gitinfo
        from ..planner.grounding import extract

        if self.root is None or not extract(memory).paths:
            return None  # no path named: git is not asked
        return gitinfo.tracked_files(self.root)

    def __call__(self, memory: Memory) -> tuple[Cite, ...]:
        """The citations ``memory`` (as the command leaves it) is written with."""
        if self.root is None:
            return memory.evidence
        cites, notes = evidence_for(self.root, memory, self.specs, self._tracked(memory), Follower(self.root),
                                    self.base)
        self.notes = notes
        return cites


def checked(root: Path | None, cites: Sequence[Cite], follow: Follower | None = None) -> dict[str, Any]:
    """What a reader shows of a memory's citations: each with its status, and the marks of the drifted
    ones (``{}`` for a memory that cites nothing, or outside a project)."""
    if root is None or not cites:
        return {}
    found = check(str(root), cites, follow or Follower(root))
    return {"evidence": [f.as_dict() for f in found], "marks": [m for f in found if (m := f.mark()) is not None]}
