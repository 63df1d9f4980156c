"""``memfold hooks``: install and remove the Claude Code, Pi and Codex integrations; ``/consolidate`` entry."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer

from ..errors import InputRejected, UsageError
from ..fsutil import atomic_write, dump_json, ensure_dir, read_bounded, refuse_symlinks, sha256_bytes
from ._app import STATE, JsonOpt, app, emit, home_dir, layout, want_json

hooks_app = typer.Typer(help="Install host integrations (claude, pi, codex).", no_args_is_help=True)
app.add_typer(hooks_app, name="hooks")

HOSTS = ("claude", "pi", "codex")
UserOpt = typer.Option(False, "--user/--project", help="the user's host config instead of the project's")


def memfold_argv() -> list[str]:
    """How a host should start memfold: this installation's executable, else this interpreter."""
    argv0 = Path(sys.argv[0])
    if argv0.name == "memfold" and argv0.is_file():
        return [str(argv0.absolute())]
    beside = Path(sys.executable).parent / "memfold"
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("memfold")
    return [found] if found else [sys.executable, "-m", "pipeline"]


def _home_args() -> list[str]:
    explicit = STATE.home or (Path(os.environ["MEMFOLD_HOME"]) if os.environ.get("MEMFOLD_HOME") else None)
    return ["--home", str(Path(explicit).absolute())] if explicit else []


class Installer:
    """Writes host files and remembers, in ``<home>/hosts/installed.json``, what it created, so that
    uninstall removes exactly that: files it wrote (if unchanged since), directories it made (if empty)."""

    def __init__(self, home: Path, host: str, below: Path | None = None) -> None:
        self.path = home / "hosts" / "installed.json"
        self.host = host
        # A project's host dirs arrive with the repository: there a symlinked `.claude/` or
        # `.pi/extensions/` would carry writes outside it, so no link is followed below ``below``.
        self.below = below
        self.actions: list[dict[str, str]] = []
        try:
            self.record: dict[str, Any] = json.loads(read_bounded(self.path, 1 << 20))
        except FileNotFoundError:
            self.record = {}
        self.record.setdefault("files", {})
        self.record.setdefault("dirs", {})

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        atomic_write(self.path, dump_json(self.record))

    def note(self, path: Path, action: str) -> None:
        self.actions.append({"path": str(path), "action": action})

    def guard(self, *paths: Path | None) -> None:
        """Refuse before anything is read or written if a path below the project passes a symlink."""
        if self.below is not None:
            for path in paths:
                if path is not None:
                    refuse_symlinks(path, self.below)

    def mkdirs(self, directory: Path) -> None:
        missing = [d for d in (directory, *directory.parents) if not os.path.lexists(d)]
        if self.below is not None:
            ensure_dir(directory, self.below, mode=0o777)
        for d in reversed(missing):
            if self.below is None:
                d.mkdir()
            self.record["dirs"][str(d)] = self.host

    def write_owned(self, path: Path, data: bytes) -> None:
        entry = self.record["files"].get(str(path))
        if path.exists():
            current = read_bounded(path, 4 << 20)
            if current == data:
                self.note(path, "unchanged")
                self.record["files"].setdefault(str(path), {"host": self.host, "sha256": sha256_bytes(data),
                                                            "created": False})
                return
            if entry is None or entry.get("sha256") != sha256_bytes(current):
                raise InputRejected(f"{path} exists and was not written by memfold; not overwritten",
                                    code="hooks.file-exists", hint="move it away, then install again")
        self.mkdirs(path.parent)
        atomic_write(path, data, mode=0o644)
        created = entry["created"] if entry else True
        self.record["files"][str(path)] = {"host": self.host, "sha256": sha256_bytes(data), "created": created}
        self.note(path, "written")

    def merge_settings(self, path: Path, command: str, events: Sequence[str]) -> None:
        from ..hosts.claude import merge_hooks, read_settings, write_settings

        existing = read_settings(path)
        created = existing is None
        data = existing if existing is not None else {}
        changed = merge_hooks(data, command, events, path)
        if not changed:
            self.note(path, "unchanged")
            return
        self.mkdirs(path.parent)
        write_settings(path, data)
        entry = self.record["files"].get(str(path))
        self.record["files"][str(path)] = {"host": self.host, "settings": True,
                                           "created": bool(entry and entry.get("created")) or created}
        self.note(path, "merged " + ", ".join(changed))

    def remove_settings(self, path: Path) -> None:
        from ..hosts.claude import read_settings, remove_hooks, write_settings

        data = read_settings(path)
        entry = self.record["files"].pop(str(path), None)
        if data is None or not remove_hooks(data):
            self.note(path, "nothing to remove")
            return
        if not data and entry and entry.get("created"):
            path.unlink()
            self.note(path, "deleted (memfold created it and it is now empty)")
        else:
            write_settings(path, data)
            self.note(path, "memfold hooks removed")

    def remove_owned(self, path: Path) -> None:
        entry = self.record["files"].pop(str(path), None)
        if not path.exists():
            return
        if entry is None or entry.get("sha256") != sha256_bytes(read_bounded(path, 4 << 20)):
            self.note(path, "kept (changed since memfold wrote it, or not memfold's)")
            return
        path.unlink()
        self.note(path, "deleted")

    def remove_dirs(self) -> None:
        mine = [Path(d) for d, host in self.record["dirs"].items() if host == self.host]
        for d in sorted(mine, key=lambda p: len(p.parts), reverse=True):
            try:
                d.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                continue  # not empty: something else lives there now
            del self.record["dirs"][str(d)]
            self.note(d, "directory removed")


def _installer(host: str, user: bool) -> Installer:
    """The user's own host config may be a symlink (dotfiles); a project's is refused as one."""
    return Installer(home_dir(), host, None if user else layout().project_root)


def _targets(host: str, user: bool) -> tuple[Path | None, Path | None]:
    """(settings-like JSON file, file memfold owns) for a host and scope."""
    from ..hosts import claude, codex, pi

    user_home = Path.home()
    root = layout().project_root
    if host == "claude":
        base = claude.claude_dir(user_home, dict(os.environ)) if user else root / ".claude"
        return base / "settings.json", base / "commands" / "consolidate.md"
    if host == "pi":
        return None, pi.extension_path(root, user_home, os.environ, user=user)
    if host == "codex":
        return codex.hooks_path(root, user_home, os.environ, user=user), None
    raise UsageError(f"unknown host {host!r} (one of {', '.join(HOSTS)})", code="usage.host")


@hooks_app.command("install")
def install(host: str = typer.Argument(..., help="claude | pi | codex"), user: bool = UserOpt,
            prompt: bool = typer.Option(False, "--prompt", help="claude: also inject on every prompt"),
            json_out: bool = JsonOpt) -> int:
    """Install memfold's context injection (and /consolidate) into a host; idempotent."""
    from ..hosts import claude, codex, pi

    settings, owned = _targets(host, user)
    memfold = memfold_argv() + _home_args()
    installer = _installer(host, user)
    installer.guard(settings, owned)
    if settings is not None:
        events = ["SessionStart", "UserPromptSubmit"] if prompt and host == "claude" else list(codex.EVENTS)
        installer.merge_settings(settings, claude.command_line([*memfold, *claude.HOOK_TAIL]), events)
    if owned is not None:
        data = claude.consolidate_command_file(memfold) if host == "claude" else pi.render_extension(memfold)
        installer.write_owned(owned, data)
    installer.save()
    lines = [f"{a['action']}: {a['path']}" for a in installer.actions]
    emit({"ok": True, "host": host, "scope": "user" if user else "project", "files": installer.actions},
         "\n".join(lines), as_json=want_json(json_out))
    return 0


@hooks_app.command("uninstall")
def uninstall(host: str = typer.Argument(..., help="claude | pi | codex"), user: bool = UserOpt,
              json_out: bool = JsonOpt) -> int:
    """Remove exactly what `hooks install` added (other hooks and files stay)."""
    settings, owned = _targets(host, user)
    installer = _installer(host, user)
    installer.guard(settings, owned)
    if settings is not None:
        installer.remove_settings(settings)
    if owned is not None:
        installer.remove_owned(owned)
    installer.remove_dirs()
    installer.save()
    lines = [f"{a['action']}: {a['path']}" for a in installer.actions]
    emit({"ok": True, "host": host, "files": installer.actions}, "\n".join(lines) or "nothing installed",
         as_json=want_json(json_out))
    return 0


@hooks_app.command("consolidate", context_settings={"allow_extra_args": True})
def consolidate_from_host(host: str = typer.Argument(..., help="claude"),
                          args: list[str] = typer.Argument(None, help="no-context"),
                          json_out: bool = JsonOpt) -> int:
    """What /consolidate runs: find this session's transcript, then consolidate with it."""
    from ..apply.summary import summary_text
    from ..context.snapshot import ContextLimits
    from ..hosts.claude import claude_dir, find_transcript
    from ..transaction import consolidate, consolidate_request
    from ._app import config, services
    from .consolidation import read_context

    if host != "claude":
        raise UsageError("only claude uses this entry point (pi's extension passes its session file)",
                         code="usage.host")
    words = [a.strip().lower() for a in args or [] if a.strip()]
    transcript = None
    if "no-context" not in words:
        cwds = [Path(os.environ["CLAUDE_PROJECT_DIR"])] if os.environ.get("CLAUDE_PROJECT_DIR") else []
        cwds += [Path.cwd(), layout().project_root]
        transcript = find_transcript(claude_dir(Path.home(), dict(os.environ)), cwds)
        if transcript is None:
            raise UsageError("no Claude Code transcript found for this project", code="hooks.no-transcript",
                             hint="run `/consolidate no-context`, or `memfold consolidate --context FILE`")
    limits = ContextLimits()
    data, source = read_context(str(transcript) if transcript else None, transcript is None, limits.max_input_bytes)
    cfg = config()
    request = consolidate_request(cfg, os.environ, context=data, context_source=source, context_limits=limits)
    summary = consolidate(services(), request)
    emit({**summary, "transcript": str(transcript) if transcript else None}, summary_text(summary)
         + (f"\ntranscript: {transcript}" if transcript else "\ntranscript: none (no-context)"),
         as_json=want_json(json_out))
    return 0
