"""Value types of the privacy engine: compiled rules and redacted findings."""

from __future__ import annotations

from ..frozen import Frozen, FrozenValue

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:  # only a type here; checks imports the rule helpers, which import the package
    from .checks import Check

CATEGORIES = ("credential", "pii", "path")
MAX_PREVIEW_PREFIX = 4


class Rule(Frozen):
    """One compiled rule. ``pattern`` and ``allowlist`` hold RE2 patterns, compiled once (immutable)."""

    __slots__ = ("id", "category", "description", "source", "pattern", "keywords", "check", "check_params",
                 "secret_group", "allowlist", "preview_prefix", "fallback", "screen")
    _hidden = ("pattern", "check", "allowlist")  # compiled objects
    id: str
    category: str
    description: str
    source: str
    pattern: Any
    keywords: tuple[str, ...]
    check: Check | None
    check_params: dict[str, float]
    secret_group: int
    allowlist: Any
    preview_prefix: int
    fallback: bool
    screen: str

    def __init__(self, id: str, category: str, description: str, source: str, pattern: Any,
                 keywords: tuple[str, ...] = (), check: Check | None = None,
                 check_params: dict[str, float] | None = None, secret_group: int = 0, allowlist: Any = None,
                 preview_prefix: int = 0, fallback: bool = False, screen: str = "") -> None:
        self._set(id=id, category=category, description=description, source=source, pattern=pattern,
                  keywords=keywords, check=check, check_params={} if check_params is None else check_params,
                  secret_group=secret_group, allowlist=allowlist, preview_prefix=preview_prefix, fallback=fallback,
                  screen=screen)


class Finding(FrozenValue):
    """Where a rule fired. Carries a redacted preview only, never the matched value (immutable)."""

    __slots__ = ("rule_id", "category", "description", "file", "line", "column", "preview")
    rule_id: str
    category: str
    description: str
    file: str
    line: int
    column: int
    preview: str

    def __init__(self, rule_id: str, category: str, description: str, file: str, line: int, column: int,
                 preview: str) -> None:
        self._set(rule_id=rule_id, category=category, description=description, file=file, line=line,
                  column=column, preview=preview)

    def as_dict(self) -> dict[str, object]:
        return {
            "ruleId": self.rule_id,
            "category": self.category,
            "description": self.description,
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "preview": self.preview,
        }

    def describe(self) -> str:
        return (
            f"{self.file}:{self.line}:{self.column}: {self.rule_id} ({self.category}): "
            f"{self.description} [{self.preview}]"
        )


def redact(secret: str, prefix_len: int) -> str:
    """Keep at most a public prefix (capped at four characters) and the length."""
    keep = max(0, min(prefix_len, MAX_PREVIEW_PREFIX, len(secret) // 4))
    return f"{secret[:keep]}…[{len(secret)} chars]"
