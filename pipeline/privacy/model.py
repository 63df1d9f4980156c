"""Value types of the privacy engine: compiled rules and redacted findings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .checks import Check

CATEGORIES = ("credential", "pii", "path")
MAX_PREVIEW_PREFIX = 4


@dataclass(frozen=True)
class Rule:
    """One compiled rule. ``pattern`` and ``allowlist`` hold RE2 objects, compiled once."""

    id: str
    category: str
    description: str
    source: str
    pattern: Any = field(repr=False, compare=False)
    keywords: tuple[str, ...] = ()
    check: Check | None = field(default=None, repr=False, compare=False)
    check_params: dict[str, float] = field(default_factory=dict, compare=False)
    secret_group: int = 0
    allowlist: Any = field(default=None, repr=False, compare=False)
    preview_prefix: int = 0
    fallback: bool = False


@dataclass(frozen=True)
class Finding:
    """Where a rule fired. Carries a redacted preview only, never the matched value."""

    rule_id: str
    category: str
    description: str
    file: str
    line: int
    column: int
    preview: str

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
