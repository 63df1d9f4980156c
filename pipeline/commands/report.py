"""``memfold report``: the receipt chain as one self-contained HTML page for auditors."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer

from ..safetext import counted
from ._app import GlobalOpt, JsonOpt, app, clock, emit, services, use_global, want_json, warn


@app.command()
def report(out: Path = typer.Option(None, "--out", help="write here (default: <home>/reports/<scope>-<time>.html)"),
           public: bool = typer.Option(False, "--public",
                                       help="only what the mirror may show, so the file can be attached to a PR"),
           since: str = typer.Option(None, "--since", help="start the report at this run's receipt"),
           open_: bool = typer.Option(False, "--open", help="open the report in a browser (on a desktop only)"),
           global_: bool = GlobalOpt, json_out: bool = JsonOpt) -> int:
    """Write an HTML audit report of the receipt chain: timeline, sizes, per-run changes and diffs."""
    use_global(global_)
    from ..mirror import gitinfo
    from ..receipts.report import write_report

    svc = services(privacy=False)
    written = write_report(svc.layout, svc.limits, public=public, since=since, out=out,
                           now=clock().strftime("%Y-%m-%dT%H:%M:%SZ"), git=gitinfo)
    if written.inside_project and not public:
        warn(f"{written.path} is inside the project and holds private text: keep it out of git")
    emit({"ok": True, "report": str(written.path), "public": public, "mode": f"{written.mode:04o}",
          "receipts": written.receipts, "memories": written.memories, "handEdits": written.hand_edits,
          "auditOk": written.audit_ok},
         f"report: {written.path} ({counted(written.receipts, 'receipt')}, {counted(written.memories, 'memory')}, "
         f"{written.hand_edits} hand edit(s), {'public' if public else 'PRIVATE: do not share'})",
         as_json=want_json(json_out))
    if open_ and _desktop():
        import webbrowser

        webbrowser.open(written.path.as_uri())
    return 0


def _desktop() -> bool:
    """A browser can only be shown to someone at a terminal with a display (never under cron or CI)."""
    if not sys.stdout.isatty():
        return False
    return sys.platform in ("darwin", "win32") or bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
