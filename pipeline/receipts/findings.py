"""What a verify or an audit found: the checks that passed, errors, warnings, drift and the witness."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import Issue


@dataclass
class Report:
    ok: bool = True
    checks: list[str] = field(default_factory=list)
    errors: list[Issue] = field(default_factory=list)
    drift: list[dict[str, Any]] = field(default_factory=list)  # hand edits between receipts
    # Mirror changes that came from outside and are explained: by a later sync, git, or an older checkout.
    incoming: list[dict[str, Any]] = field(default_factory=list)
    receipts: int = 0
    # Findings that fail only `audit --strict`, like drift: the mirror behind the store, say.
    warnings: list[Issue] = field(default_factory=list)
    witness: dict[str, Any] | None = None

    def fail(self, code: str, path: str, message: str) -> None:
        self.ok = False
        self.errors.append(Issue(code, path, message))

    def warn(self, code: str, path: str, message: str) -> None:
        self.warnings.append(Issue(code, path, message))

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "checks": self.checks, "errors": [e.as_dict() for e in self.errors],
                "drift": self.drift, "incoming": self.incoming, "warnings": [w.as_dict() for w in self.warnings],
                "witness": self.witness, "receipts": self.receipts}
