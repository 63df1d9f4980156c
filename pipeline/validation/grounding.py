"""Grounding observations: repository-relative paths that stay inside the project, regular files when found."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator

from ..errors import Issue
from ..planner.grounding import in_repository
from .context import Context, Subject, json_path

# Distinct paths resolved per plan. Each costs a few lstat calls; the schema caps observations
# per memory but not per plan, so this keeps a hostile plan's filesystem work bounded.
MAX_RESOLVED_PATHS = 10_000
_DRIVE = re.compile(r"^[A-Za-z]:")


def path_problem(path: str) -> str | None:
    """Why ``path`` is not a plain repository-relative path, or None."""
    if "\x00" in path:
        return "contains a NUL character"
    if path.startswith(("/", "~")) or _DRIVE.match(path):
        return "is absolute; give it relative to the repository root"
    if "\\" in path:
        return "contains a backslash; use '/' between components"
    if ".." in path.split("/"):
        return "has a '..' component"
    return None


def grounding(ctx: Context) -> Iterator[Issue]:
    root = os.path.realpath(ctx.repo_root)
    prefix = root if root.endswith(os.sep) else root + os.sep
    # path -> (inside the root, exists); observations repeat the same files, so resolve each once.
    resolved: dict[str, tuple[bool, str]] = {}
    for index, item in ctx.items("grounding"):
        subject = Subject(ctx, "grounding", index, item["name"])
        for position, observation in enumerate(item["observations"]):
            path = observation["path"]
            problem = path_problem(path)
            if problem is not None:
                yield Issue(
                    "plan.grounding.path",
                    _at(index, position),
                    f"{subject}: observation path {ctx.show(path)} {problem}",
                )
                continue
            state = resolved.get(path)
            if state is None:
                if len(resolved) >= MAX_RESOLVED_PATHS:
                    yield Issue("plan.grounding.bounds", json_path("grounding"),
                                f"the plan observes more than {MAX_RESOLVED_PATHS} distinct paths; "
                                "the rest were not checked")
                    return
                state = resolved[path] = _resolve(root, prefix, path)
            inside, kind = state
            if not inside:
                yield Issue("plan.grounding.escape", _at(index, position),
                            f"{subject}: observation path {ctx.show(path)} leads outside the repository "
                            "once symlinks are resolved")
            elif observation["status"] == "found" and kind == "absent":
                yield Issue("plan.grounding.absent", _at(index, position),
                            f"{subject}: observation path {ctx.show(path)} is marked found but does not exist")
            elif observation["status"] == "found" and kind != "file":
                yield Issue("plan.grounding.not-file", _at(index, position),
                            f"{subject}: observation path {ctx.show(path)} is marked found but is a {kind}, "
                            "not a regular file; found observes a file the memory depends on")


def _at(index: int, position: int) -> str:
    return json_path("grounding", index, "observations", position, "path")


def _resolve(root: str, prefix: str, path: str) -> tuple[bool, str]:
    """(inside the root, what is there: file, directory, special file or absent); metadata only,
    realpath and lstat, never the file's contents."""
    try:
        real = os.path.realpath(os.path.join(root, path))
    except (OSError, ValueError):
        return False, "absent"  # unresolvable counts as outside: fail closed
    if real != root and not real.startswith(prefix):
        return False, "absent"
    try:
        mode = os.lstat(real).st_mode
    except (OSError, ValueError):
        return True, "absent"
    if stat.S_ISREG(mode):
        return True, "file"
    return True, "directory" if stat.S_ISDIR(mode) else "special file"


def project_observed(ctx: Context) -> Iterator[Issue]:
    """A row that claims grounding shows what it observed, with or without a repository; inside one,
    every selected ``project_*`` memory is grounded by at least one observation.

    ``not-applicable`` without an observation is accepted only where there is no repository to look in.
    """
    repository = in_repository(ctx.repo_root)
    for index, item in ctx.items("grounding"):
        name = item["name"]
        if item["observations"] or name not in ctx.selected:
            continue
        subject = Subject(ctx, "grounding", index, name)
        if item["status"] != "not-applicable":
            yield Issue("plan.grounding.unobserved", json_path("grounding", index, "observations"),
                        f"{subject}: marked {item['status']} with no observation; a grounding claim names the "
                        "repository paths it observed (or says not-applicable, with a reason)")
        elif repository and name.lower().startswith("project_"):
            yield Issue("plan.grounding.unobserved", json_path("grounding", index, "observations"),
                        f"{subject}: a project memory needs at least one observation of a repository path; "
                        "not-applicable alone is accepted only outside a repository")


def reasons(ctx: Context) -> Iterator[Issue]:
    """A not-applicable row says why nothing applies: the schema wants a reason, this wants words in it."""
    for index, item in ctx.items("grounding"):
        if item["status"] == "not-applicable" and not str(item.get("reason") or "").strip():
            yield Issue("plan.grounding.reason", json_path("grounding", index, "reason"),
                        f"{Subject(ctx, 'grounding', index, item['name'])}: not-applicable needs a reason "
                        "that says why no repository path applies")


def evidence(ctx: Context) -> Iterator[Issue]:
    """The citations in the memories a plan writes stay inside the repository once links are resolved;
    one the pre-state did not hold (in any memory) cites a file that exists, with the hash of its text.

    A plan may add, keep or drop citations; it cannot point one outside the project or invent a hash.
    """
    from ..store.citecheck import locate, read_cited
    from ..store.evidence import HOLDS, MOVED

    root = os.path.realpath(ctx.repo_root)
    prefix = root if root.endswith(os.sep) else root + os.sep
    known = {cite for memory in ctx.pre.memories.values() for cite in memory.evidence}
    resolved: dict[str, tuple[bool, str]] = {}
    for index, op in ctx.items("operations"):
        if op["kind"] == "delete" or not isinstance(op.get("content"), str):
            continue
        try:
            memory = ctx.content(index, op).memory()
        except Exception:
            continue  # the operations rule reports content that does not parse
        subject = Subject(ctx, "operations", index, op["name"], op["kind"])
        at = json_path("operations", index, "content")
        for cite in memory.evidence:
            state = resolved.get(cite.path)
            if state is None:
                if len(resolved) >= MAX_RESOLVED_PATHS:
                    return
                state = resolved[cite.path] = _resolve(root, prefix, cite.path)
            inside, kind = state
            exists = kind == "file"
            if not inside:
                yield Issue("plan.evidence.escape", at, f"{subject}: cites {ctx.show(cite.path)}, which leads "
                            "outside the repository once symlinks are resolved")
            elif cite not in known and not exists:
                yield Issue("plan.evidence.absent", at, f"{subject}: cites {ctx.show(cite.path)}, which does "
                            "not exist")
            elif cite not in known and cite.sha256 is not None:
                data = read_cited(str(ctx.repo_root), cite.path)
                if data is None or locate(cite, data).status not in (HOLDS, MOVED):
                    yield Issue("plan.evidence.hash", at, f"{subject}: cites {ctx.show(cite.where)} with a "
                                "sha256 its text does not have (citations are anchored to the code as it is)")
