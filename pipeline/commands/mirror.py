"""Commands about the safe mirror and injection: mirror check, trust, untrust, inject (help only)."""

from __future__ import annotations

from pathlib import Path

import typer

from ._app import JsonOpt, app, emit, home_dir, layout, services, want_json

mirror_app = typer.Typer(help="Check the safe mirror (.memory/).", no_args_is_help=True)
app.add_typer(mirror_app, name="mirror")


@mirror_app.command("check")
def check(files: list[str] = typer.Argument(None, help="mirror files to check (default: the whole mirror)"),
          json_out: bool = JsonOpt) -> int:
    """Privacy and shape check of the mirror as it is on disk; exit 7 with findings (pre-commit hook)."""
    from ..mirror.check import check_mirror

    svc = services()
    issues = check_mirror(svc.layout, svc.ruleset, svc.limits, [Path(f) for f in files or []])
    data = {"ok": not issues, "errors": [i.as_dict() for i in issues], "mirror": str(svc.layout.mirror)}
    human = "\n".join(f"{i.path}: [{i.code}] {i.message}" for i in issues) or f"mirror clean: {svc.layout.mirror}"
    emit(data, human, as_json=want_json(json_out))
    return 0 if not issues else 7


def _trust(trusted: bool, json_out: bool) -> int:
    from ..mirror.trust import set_trust

    lay = layout()
    if lay.is_global:
        from ..errors import UsageError

        raise UsageError(f"the global store has no mirror to {'trust' if trusted else 'untrust'}",
                         code="trust.global", hint="run it in the project whose .memory/ you mean, without --global")
    changed = set_trust(home_dir(), lay.project_root, trusted)
    word = "trusted" if trusted else "untrusted"
    data: dict[str, object] = {"ok": True, "projectRoot": str(lay.project_root), "trusted": trusted,
                               "changed": changed}
    human = f"{lay.project_root}: mirror {word}" + ("" if changed else " (already)")
    if trusted:
        from .team import trust_sync

        # Trusting is the decision to take the team's memories: the sync adopts them now.
        synced = trust_sync(json_out)
        data["sync"] = synced
        adopted, held = len(synced.get("adopted") or []), len(synced.get("held") or [])
        conflicts = len(synced.get("conflicts") or [])
        human += f"; adopted {adopted} teammate change(s)" + (f", {held} held back" if held else "") \
            + (f", {conflicts} in conflict (see `memfold sync`)" if conflicts else "")
    emit(data, human, as_json=want_json(json_out))
    return 0


@app.command()
def trust(json_out: bool = JsonOpt) -> int:
    """Trust this repository's mirror (.memory/): adopt teammates' memories, inject them; every worktree shares it."""
    return _trust(True, json_out)


@app.command()
def untrust(json_out: bool = JsonOpt) -> int:
    """Stop trusting this repository's mirror: nothing more is adopted or injected from it."""
    return _trust(False, json_out)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def inject(ctx: typer.Context) -> int:
    """Print the bounded context block for a host.

    Options: [--query Q] [--max-bytes N] [--max-files N] [--format text|json|claude-hook].
    """
    from ..hosts.inject import main

    return main(list(ctx.args))
