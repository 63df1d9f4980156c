"""Value types of the privacy engine: compiled rules and redacted findings."""

from __future__ import annotations

from typing import Any

from .checks import Check

CATEGORIES = ("credential", "pii", "path")
MAX_PREVIEW_PREFIX = 4


_RULE = ("id", "category", "description", "source", "pattern", "keywords", "check", "check_params",
         "secret_group", "allowlist", "preview_prefix", "fallback")
_RULE_REPR = ("id", "category", "description", "source", "keywords", "check_params", "secret_group",
              "preview_prefix", "fallback")  # the compiled patterns and the check function are left out


class Rule:
    """One compiled rule. ``pattern`` and ``allowlist`` hold RE2 objects, compiled once (immutable)."""

    __slots__ = _RULE
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

    def __init__(self, id: str, category: str, description: str, source: str, pattern: Any,  # noqa: A002
                 keywords: tuple[str, ...] = (), check: Check | None = None,
                 check_params: dict[str, float] | None = None, secret_group: int = 0, allowlist: Any = None,
                 preview_prefix: int = 0, fallback: bool = False) -> None:
        values = (id, category, description, source, pattern, keywords, check,
                  {} if check_params is None else check_params, secret_group, allowlist, preview_prefix, fallback)
        for key, value in zip(_RULE, values):
            object.__setattr__(self, key, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Rule is immutable; cannot set {name}")

    def __reduce__(self) -> tuple[type[Rule], tuple[Any, ...]]:
        return (Rule, tuple(getattr(self, key) for key in _RULE))

    def __repr__(self) -> str:
        inner = ", ".join(f"{key}={getattr(self, key)!r}" for key in _RULE_REPR)
        return f"Rule({inner})"


_FINDING = ("rule_id", "category", "description", "file", "line", "column", "preview")


class Finding:
    """Where a rule fired. Carries a redacted preview only, never the matched value (immutable)."""

    __slots__ = _FINDING
    rule_id: str
    category: str
    description: str
    file: str
    line: int
    column: int
    preview: str

    def __init__(self, rule_id: str, category: str, description: str, file: str, line: int, column: int,
                 preview: str) -> None:
        for key, value in zip(_FINDING, (rule_id, category, description, file, line, column, preview)):
            object.__setattr__(self, key, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Finding is immutable; cannot set {name}")

    def __reduce__(self) -> tuple[type[Finding], tuple[Any, ...]]:
        return (Finding, tuple(getattr(self, key) for key in _FINDING))

    def __repr__(self) -> str:
        inner = ", ".join(f"{key}={getattr(self, key)!r}" for key in _FINDING)
        return f"Finding({inner})"

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
