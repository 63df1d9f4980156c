"""The checks a teammate's file passes before the store takes it from the mirror; the first it fails holds
it back (``held.*``), with what was wrong and what the user can do."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import InputRejected
from ..store.memory import Memory, check_name, parse_memory
from .shape import declared_visibility, has_conflict_markers

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..privacy import RuleSet

# A file's problem that keeps it out of the store: (code, problem, fix), or None when it may be adopted.
Screen = Callable[[str, bytes], "tuple[str, str, str] | None"]

HOLD_FIXES = {
    "held.link": "replace it with a regular file in git, or remove it; memfold never follows links in the mirror",
    "held.name": "rename it in git to a memory file name unique without regard to case",
    "held.size": "shorten or split it in git (limits.max_file_bytes, limits.max_files)",
}


def screen_for(ruleset: RuleSet | None, max_file_bytes: int) -> Screen:
    """The checks a teammate's file must pass before the store takes it; the first it fails holds it."""
    from .guard import instruction_issues, scan_issues

    def screen(name: str, data: bytes) -> tuple[str, str, str] | None:
        try:
            check_name(name)
        except InputRejected as exc:
            return "held.name", exc.message, "rename it in git to a memory file name (letters, digits, '_', '-', .md)"
        if len(data) > max_file_bytes:
            return "held.size", f"{name} is {len(data)} bytes, over the bound of {max_file_bytes}", \
                HOLD_FIXES["held.size"]
        if has_conflict_markers(data):
            return ("held.merge-conflict", f"{name} holds git's conflict markers (an unfinished merge)",
                    f"finish the merge in git (edit the file), or `memfold sync --take mine|theirs {name}`")
        try:
            memory = parse_memory(data, name)
        except InputRejected as exc:
            return "held.parse", exc.message, exc.hint or "fix its frontmatter in git"
        if _declares_private(data, memory):
            return ("held.private", f"{name} is marked private but sits in the shared mirror",
                    "a private memory does not belong in git: remove it from the mirror (and from history)")
        for issue in scan_issues(name, data, ruleset):
            if issue.code == "mirror.invisible":
                return ("held.invisible", issue.message,
                        "remove the invisible or control characters in git; they can hide text from reviewers")
            return ("held.privacy", f"{issue.message}: it is already public in git",
                    "rotate that value now (it is in the repository's history), then remove it from the file "
                    "and, if you can, from git history")
        aimed = instruction_issues(name, data)
        if aimed:
            return ("held.instructions", aimed[0].message,
                    "read the file: text aimed at an AI agent as instructions does not belong in a memory; remove it "
                    "in git (and ask who committed it)")
        return None

    return screen


def _declares_private(data: bytes, memory: Memory) -> bool:
    return memory.visibility == "private" and declared_visibility(data) is not None
