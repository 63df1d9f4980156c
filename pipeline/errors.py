"""One error hierarchy: every failure memfold reports has a stable code and exit code."""

from __future__ import annotations

from .frozen import FrozenValue

# The per-prompt path imports this module: no dataclasses (which pulls in inspect) and no typing here.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any, NoReturn


class Issue(FrozenValue):
    """One problem found by a validator: a stable code, a JSON path and a message (immutable)."""

    __slots__ = ("code", "path", "message")
    code: str
    path: str
    message: str

    def __init__(self, code: str, path: str, message: str) -> None:
        self._set(code=code, path=path, message=message)

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "path": self.path, "message": self.message}


class MemfoldError(Exception):
    """Any failure memfold reports: a stable ``code`` for machines and the ``exit_code`` of its kind."""

    exit_code = 1
    default_code = "error"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        hint: str | None = None,
        issues: list[Issue] | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        self.hint = hint
        self.issues = list(issues or [])
        self.data = dict(data or {})

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ok": False,
            "code": self.code,
            "exitCode": self.exit_code,
            "message": self.message,
        }
        if self.hint:
            out["hint"] = self.hint
        if self.issues:
            out["errors"] = [i.as_dict() for i in self.issues]
        if self.data:
            out["data"] = self.data
        return out

    def text(self) -> str:
        """The one human form of every error: code and message, further issues, the hint."""
        lines = [f"memfold: error [{self.code}]: {self.message}"]
        for issue in self.issues[1:20]:
            lines.append(f"  - [{issue.code}] {issue.path}: {issue.message}")
        if self.hint:
            lines.append(f"  hint: {self.hint}")
        return "\n".join(lines) + "\n"


class InputRejected(MemfoldError):
    """A plan, memory or argument was rejected; nothing was written."""

    exit_code = 1
    default_code = "input.rejected"


class PrivacyRejected(InputRejected):
    """A privacy rule or the publishing gate refused what would become public; nothing was written."""

    default_code = "privacy.rejected"


class UnsafePath(InputRejected):
    """A symlink or an escaping path on a path memfold owns."""

    default_code = "path.unsafe"


class UsageError(MemfoldError):
    """The command line or its arguments cannot be used as given; nothing was done."""

    exit_code = 2
    default_code = "usage"


class UnsafeOwner(UsageError):
    """The memfold home or a file memfold reads its settings from belongs to another user, or others may
    write it (``home.unsafe``, ``settings.unsafe``): nothing in it is used."""

    default_code = "home.unsafe"


class ConfigError(UsageError):
    """The user config is invalid (`memfold config check` explains each problem); it is never rewritten."""

    default_code = "config.invalid"


class LockHeld(MemfoldError):
    """Another run holds the project lock; the message names it, and a retry later succeeds."""

    exit_code = 3
    default_code = "lock.held"


class WorkerFailed(MemfoldError):
    """The consolidation worker failed: spawn, sandbox, timeout, output bounds, or no single plan."""

    exit_code = 4
    default_code = "worker.failed"


class StaleState(MemfoldError):
    """The store changed after the snapshot (or since the run being undone); nothing was written."""

    exit_code = 5
    default_code = "state.stale"


class ApplyFailed(MemfoldError):
    """Applying the change failed and was rolled back: both roots are as they were."""

    exit_code = 6
    default_code = "apply.failed"


class VerifyFailed(MemfoldError):
    """A receipt, the mirror or the receipt chain does not verify."""

    exit_code = 7
    default_code = "verify.failed"


class RecoveryNeeded(MemfoldError):
    """An interrupted transaction needs `memfold recover`, or recovery itself failed."""

    exit_code = 8
    default_code = "recovery.needed"


class IssueList:
    """Collects issues from many rules, then raises once."""

    def __init__(self, issues: Iterable[Issue] = ()) -> None:
        self.issues: list[Issue] = list(issues)

    def __repr__(self) -> str:
        return f"IssueList(issues={self.issues!r})"

    def add(self, code: str, path: str, message: str) -> None:
        self.issues.append(Issue(code, path, message))

    def extend(self, issues: Any) -> None:
        self.issues.extend(issues)

    def raise_if_any(self, error: type[MemfoldError], summary: str, hint: str | None = None) -> None:
        if self.issues:
            first = self.issues[0]
            message = f"{summary}: {first.message}"
            if len(self.issues) > 1:
                message += f" (and {len(self.issues) - 1} more)"
            raise error(message, code=first.code, hint=hint, issues=self.issues)


def exit_flushed(code: int) -> NoReturn:
    """End the process with ``code`` once stdout and stderr are flushed, skipping interpreter teardown
    (module and library clean-up nobody waits for); output that cannot be flushed turns a 0 into 1."""
    import os
    import sys

    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        code = code or 1
    os._exit(code)


def exit_after_handlers(code: int) -> NoReturn:
    """Run the exit handlers (the state cache is written by one), flush, and end the process.

    What is skipped is only the interpreter's teardown: every transaction is durable at its commit
    point and safe against a kill at any instant, so nothing on disk waits for the teardown.
    """
    import atexit
    import threading

    # As the interpreter's own shutdown does first: a thread that is not a daemon (a retired run dir
    # being removed) finishes before the process ends.
    current = threading.current_thread()
    for thread in threading.enumerate():
        if thread is not current and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    exit_flushed(code)
