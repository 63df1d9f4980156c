"""``memfold sync`` (and the sync ``memfold trust`` runs): teammates' changes from the mirror into the store.

Typer-free, like the everyday commands: ``quick`` runs a plain ``memfold sync`` (a git hook's) without it.
"""

from __future__ import annotations

from .context import emit, layout, lock_timeout, services, want_json, warn

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def sync(take: str | None, name: str | None, dry_run: bool, quiet: bool, json_out: bool) -> int:
    """Adopt what git brought into the mirror; list held files and conflicts; ``--take`` settles one."""
    from ..errors import UsageError

    if (take is None) != (name is None):
        raise UsageError("--take goes with the name of the memory to settle: `memfold sync --take mine NAME`",
                         code="usage.take")
    if layout().is_global:
        raise UsageError("the global store has no mirror to sync", code="sync.global",
                         hint="run `memfold sync` in a project")
    if dry_run:
        return _preview(json_out)
    from ..edits import direct_transaction
    from ..mirror.settle import keep_behind

    side, target = take, _file_name(name) if name is not None else None

    def settle(found: Any, pre: Any) -> Any:
        if side is not None and target is not None:
            from ..mirror.settle import settle as settle_one

            found = settle_one(found, pre, target, side)
        return keep_behind(found, pre, target)

    svc = services()
    result = direct_transaction(svc, "sync", lambda view: [], lock_timeout=lock_timeout(), settle=settle)
    record = result.sync or {}
    data = {**result.as_dict(), "sync": record}
    if not quiet or want_json(json_out):
        emit(data, _human(record, result.receipt), as_json=want_json(json_out))
    elif _unsettled(record):
        warn(f"{_unsettled(record)} mirror file(s) held back or in conflict: run `memfold sync` to see them")
    return 0


def trust_sync(json_out: bool) -> dict[str, Any]:
    """The sync ``memfold trust`` runs once trust is recorded: what it adopted, held and left in conflict."""
    from ..edits import direct_transaction

    result = direct_transaction(services(), "sync", lambda view: [], lock_timeout=lock_timeout())
    return {**(result.sync or {}), "receipt": result.receipt}


def _file_name(raw: str) -> str:
    from ..store.memory import normalize_name

    return normalize_name(raw)


def _preview(json_out: bool) -> int:
    from ..mirror.sync import team_report
    from ..state.read import read_pre

    svc = services()
    pre = read_pre(svc.layout, svc.limits)
    report = team_report(svc.layout, svc.limits, svc.ruleset, pre)
    record = {"trusted": report["trusted"], "adopted": report["incoming"], "held": report["held"],
              "conflicts": report["conflicts"]}
    emit({"ok": True, "dryRun": True, "sync": record}, _human(record, None, dry=True), as_json=want_json(json_out))
    return 0


def _unsettled(record: dict[str, Any]) -> int:
    return len(record.get("held") or []) + len(record.get("conflicts") or [])


def team_lines(record: dict[str, Any], *, verb: str, width: int = 0, indent: str = "  ") -> list[str]:
    """One line per change from outside (adopted, held, in conflict), each held file and conflict with its fix."""
    lines = [f"{verb:<{width}} {row['name']} ({row['change']}){_origin(row)}" for row in record.get("adopted") or []]
    lines += [f"{'held':<{width}} {row['name']}: {row['problem']} [{row['code']}]\n{indent}fix: {row['fix']}"
              for row in record.get("held") or []]
    lines += [f"{'conflict':<{width}} {row['name']}: changed in the mirror and in your store since they agreed"
              f"{_origin(row)}\n{indent}fix: {row['fix']}" for row in record.get("conflicts") or []]
    return lines


def _human(record: dict[str, Any], receipt: str | None, *, dry: bool = False) -> str:
    lines = team_lines(record, verb="would adopt" if dry else "adopted")
    if not lines:
        lines.append("in sync: nothing came into the mirror from outside")
    if record.get("trusted") is False:
        lines.append("note: this project is not trusted, so nothing is adopted (`memfold trust` adopts)")
    if receipt:
        lines.append(f"receipt: {receipt}")
    return "\n".join(lines)


def _origin(row: dict[str, Any]) -> str:
    if row.get("source") == "commit":
        return f" from commit {str(row.get('commit'))[:12]} by {row.get('author') or 'unknown'}"
    if row.get("source") == "working tree":
        return " from an edit in the working tree"
    return ""
