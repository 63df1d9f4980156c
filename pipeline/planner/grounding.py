"""Grounding: the repository paths and symbols a memory names, checked against the project tree."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from ..frozen import FrozenValue
from ..store.memory import Memory
from .lazyre import Lazy

# The planner starts once per consolidation: typing stays out of its imports.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_OBSERVATIONS = 20
MAX_SYMBOL_FILE_BYTES = 512 * 1024
_EXT = (
    "py|pyi|sh|bash|zsh|js|mjs|cjs|ts|tsx|jsx|go|rs|rb|java|kt|c|h|cc|cpp|hpp|cs|swift|php|"
    "toml|yaml|yml|json|cfg|ini|lock|txt|md|rst|sql|env|conf|mk|tf|proto|graphql|css|scss|html|xml|gradle"
)
_BARE = frozenset({"Makefile", "Dockerfile", "Justfile", "Procfile", "Gemfile", "Rakefile", "Vagrantfile",
                   "Containerfile", "Jenkinsfile", "CODEOWNERS", "LICENSE", "Podfile", "Brewfile",
                   "Cartfile", "Fastfile"})
# Slash words such as "blue/green" or "CI/CD" are prose; a path needs a known top
# directory, a file extension or backticks to count as a repository claim.
_TOP_DIRS = frozenset({"src", "lib", "app", "apps", "ops", "deploy", "scripts", "script", "bin", "tests", "test",
                       "docs", "doc", "config", "configs", "conf", "cmd", "pkg", "internal", "tools", "infra",
                       "packages", "services", "web", "api", "migrations", "db", "charts", "k8s", ".github",
                       "frontend", "backend", "server", "client", "examples", "benchmarks", "etc", "ios", "android",
                       "dags", "jobs", "dbt", "terraform", "ansible", "helm", "crates"})
_LINK = Lazy(r"\[\[[^\]\n]*\]\]|\[[^\]\n]*\]\([a-z][a-z0-9+.-]*://[^)\s]*\)")
_URL = Lazy(r"[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)
_TICKS = Lazy(r"`([^`\n]+)`")
_PATHISH = Lazy(
    r"(?<![\w/.~$-])(\.{0,2}/?(?:[\w.-]+/)+[\w.-]+/?|[\w.-]+\.(?:" + _EXT + r")\b|"
    + "|".join(sorted(_BARE)) + r")(?![\w/])"
)
_SYMBOL = Lazy(r"^([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(?:\(\))?$")
_FILE_TAIL = Lazy(r"\.(?:" + _EXT + r")$")
# What every _PATHISH match contains (a slash, a known extension or a bare file name): _PATHISH
# is tried at every offset, this hint is a cheap scan that rules out most prose.
_PATH_HINT = re.compile(r"/|\.(?:" + _EXT + r")\b|" + "|".join(sorted(_BARE)))


class Claims(FrozenValue):
    """The repository paths and code symbols one memory names."""

    __slots__ = ("paths", "symbols")
    paths: tuple[str, ...]
    symbols: tuple[str, ...]

    def __init__(self, paths: tuple[str, ...], symbols: tuple[str, ...]) -> None:
        self._set(paths=paths, symbols=symbols)


def _clean(token: str) -> str | None:
    """A repository-relative path, or None when the token must not be looked up at all."""
    token = token.strip().rstrip(".,;:)!?'\"").lstrip("(\"'")
    if token.startswith("./"):
        token = token[2:]
    if not token or token.startswith(("/", "~", "\\", "$", "-")) or re.match(r"^[A-Za-z]:", token):
        return None
    if any(ch in token for ch in "\\*?{}<>|$%\x00 ") or "://" in token:
        return None
    parts = token.rstrip("/").split("/")
    if any(p in ("", ".", "..") for p in parts):
        return None
    return token


def _is_claim(path: str, ticked: bool) -> bool:
    if path.endswith("/"):
        return False  # directories are context, not a file the memory depends on
    last = path.rsplit("/", 1)[-1]
    if _FILE_TAIL().search(last) or last in _BARE:
        return True
    return "/" in path and (ticked or path.split("/", 1)[0] in _TOP_DIRS)


def extract(memory: Memory) -> Claims:
    text = f"{memory.description}\n{memory.body}"
    # Each pattern starts with a literal its text must contain; without it the pattern cannot match.
    if "[" in text:
        text = _LINK().sub(" ", text)
    if "://" in text:
        text = _URL().sub(" ", text)
    ticked = "`" in text
    paths: list[str] = []
    symbols: list[str] = []
    for span in _TICKS().findall(text) if ticked else ():
        word = span.strip().split(" ")[0] if span.strip() else ""
        path = _clean(word)
        if path is not None and ("/" in path or _FILE_TAIL().search(path) or path in _BARE):
            if _is_claim(path, True):
                paths.append(path)
            continue
        sym = _SYMBOL().match(span.strip())
        # Only identifiers that look like code (snake_case, CamelCase, dotted, a call) are symbols.
        if sym and ("_" in sym.group(1) or "." in sym.group(1) or span.strip().endswith("()")
                    or re.search(r"[a-z][A-Z]", sym.group(1))):
            symbols.append(sym.group(1))
    prose = _TICKS().sub(" ", text) if ticked else text
    for match in _PATHISH().finditer(prose) if _PATH_HINT.search(prose) else ():
        path = _clean(match.group(1))
        if path is not None and _is_claim(path, False):
            paths.append(path)
    return Claims(tuple(dict.fromkeys(paths)), tuple(dict.fromkeys(symbols)))


class Tree:
    """Stat-only lookups below one project root, cached across memories."""

    __slots__ = ("root", "real", "_inside", "_status", "_text", "_dirs")

    def __init__(self, root: Path) -> None:
        self.root = root
        self.real = os.path.realpath(root)
        self._inside = self.real.rstrip(os.sep) + os.sep
        self._status: dict[str, str] = {}
        self._text: dict[str, str] = {}
        self._dirs: dict[str, str] = {}

    def status(self, rel: str) -> str:
        """``found`` for a regular file inside the root after resolving links, ``dir``, or ``missing``."""
        if rel not in self._status:
            self._status[rel] = self._looked_up(rel)
        return self._status[rel]

    def _looked_up(self, rel: str) -> str:
        # A parent directory resolves once for all its files; a leaf that is no link resolves to
        # itself, so one lstat tells what realpath and a stat of its result would (a link, or a
        # path ending in a slash, goes the long way).
        head, _, leaf = rel.rpartition("/")
        if leaf:
            parent = self._dirs.get(head)
            if parent is None:
                parent = self._dirs[head] = os.path.realpath(os.path.join(self.real, head))
            path = os.path.join(parent, leaf)
            try:
                mode: int | None = os.lstat(path).st_mode
            except OSError:
                mode = None
            if mode is None or not stat.S_ISLNK(mode):
                if mode is None or not path.startswith(self._inside):
                    return "missing"
                return "found" if stat.S_ISREG(mode) else "dir" if stat.S_ISDIR(mode) else "missing"
        resolved = os.path.realpath(os.path.join(self.real, rel))
        inside = resolved.startswith(self._inside)
        if inside and os.path.isfile(resolved):
            return "found"
        if inside and os.path.isdir(resolved):
            return "dir"
        return "missing"

    def text(self, rel: str) -> str:
        if rel not in self._text:
            path = os.path.realpath(os.path.join(self.real, rel))
            try:
                with open(path, "rb") as handle:
                    self._text[rel] = handle.read(MAX_SYMBOL_FILE_BYTES).decode("utf-8", "replace")
            except OSError:
                self._text[rel] = ""
        return self._text[rel]


# A citation's status (``store.evidence``) as a grounding observation's.
_CITED = {"holds": "found", "moved": "found", "unchecked": "found", "changed": "updated", "gone": "missing",
          "renamed": "found"}


def cited_observations(findings: list[dict[str, Any]]) -> list[dict[str, str]]:
    """One observation per citation: where its text is now, found, updated (the cited text changed) or missing."""
    out = []
    for f in findings:
        status = str(f.get("status"))
        path = str(f.get("nowPath") or f.get("path"))
        note = f"cited {f.get('cited')}: {status}" + (f", now {f['now']}" if f.get("now") else "")
        out.append({"path": path, "status": _CITED.get(status, "found"), "note": note[:2000]})
    return out


def in_repository(root: Path) -> bool:
    """A git work tree (``.git`` as a directory, or a file for worktrees and submodules)."""
    return os.path.lexists(os.path.join(root, ".git"))


def _anchor(name: str, tree: Tree) -> dict[str, str] | None:
    """What a project memory that names no file is checked against: a regular file that stands for the
    repository (its mirror copy, else git's HEAD, else the ``.git`` file of a worktree), or None."""
    mirrored = f".memory/{name}"
    if tree.status(mirrored) == "found":
        return {"path": mirrored, "status": "found", "note": "names no repository file; its mirror copy is here"}
    for path in (".git/HEAD", ".git"):
        if tree.status(path) == "found":
            return {"path": path, "status": "found",
                    "note": "names no repository file; anchored to the repository's git metadata"}
    return None


def ground(name: str, memory: Memory, tree: Tree | None, repository: bool = False,
           cited: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """The plan's grounding entry for one memory; ``cited`` are the observations of its citations
    (``cited_observations``), which come first.

    Inside a repository a ``project_*`` memory always carries an observation (the rule of the
    seed format this plan follows): a memory that names no file is anchored to the repository.
    """
    claims = extract(memory)
    observations: list[dict[str, str]] = list(cited or [])[:MAX_OBSERVATIONS]
    found_files: list[str] = [o["path"] for o in observations if o["status"] != "missing"]
    for path in claims.paths:
        if any(o["path"] == path for o in observations):
            continue
        if len(observations) >= MAX_OBSERVATIONS:
            break
        status = tree.status(path) if tree is not None else "missing"
        if status == "dir":
            continue
        observations.append({"path": path, "status": status})
        if status == "found":
            found_files.append(path)
    if tree is not None and found_files:
        for symbol in claims.symbols:
            if len(observations) >= MAX_OBSERVATIONS:
                break
            leaf = symbol.rsplit(".", 1)[-1]
            where = next((f for f in found_files if re.search(rf"\b{re.escape(leaf)}\b", tree.text(f))), None)
            if where is not None:
                observations.append({"path": where, "status": "found", "note": f"symbol {symbol} appears here"})
            else:
                observations.append({"path": found_files[0], "status": "missing",
                                     "note": f"symbol {symbol} appears in none of the files this memory names"})
    anchor = _anchor(name, tree) if not observations and repository and tree is not None \
        and name.lower().startswith("project_") else None
    if anchor is not None:
        return {"name": name, "status": "grounded", "observations": [anchor],
                "reason": "makes no claim about a repository file; anchored to the repository it belongs to"}
    entry: dict[str, Any] = {"name": name, "observations": observations}
    found = sum(1 for o in observations if o["status"] != "missing")  # an updated file exists too
    if not observations:
        entry["status"] = "not-applicable"
        entry["reason"] = "makes no claim about a repository file"
    elif found == len(observations):
        entry["status"] = "grounded"
        entry["reason"] = f"all {found} named repository paths/symbols exist"
    elif found:
        entry["status"] = "partially-grounded"
        entry["reason"] = f"{found} of {len(observations)} named repository paths/symbols exist"
    else:
        entry["status"] = "ungrounded"
        entry["reason"] = "none of the named repository paths exist (renamed or removed?)"
    return entry
