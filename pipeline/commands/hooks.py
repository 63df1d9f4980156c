"""``memfold hooks``: install and remove the Claude Code, Pi and Codex integrations; ``/consolidate`` entry."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import typer

from ..errors import MemfoldError, UsageError
from ..hosts.installed import Installer
from ._app import STATE, JsonOpt, app, emit, home_dir, layout, want_json

hooks_app = typer.Typer(help="Install host integrations (claude, pi, codex) and git's merge drivers (git).",
                        no_args_is_help=True)
app.add_typer(hooks_app, name="hooks")

HOSTS = ("claude", "pi", "codex")
UserOpt = typer.Option(False, "--user/--project", help="the user's host config instead of the project's")


def memfold_argv() -> list[str]:
    """How this machine starts memfold: this installation's executable, else this interpreter."""
    argv0 = Path(sys.argv[0])
    if argv0.name == "memfold" and argv0.is_file():
        return [str(argv0.absolute())]
    beside = Path(sys.executable).parent / "memfold"
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("memfold")
    return [found] if found else [sys.executable, "-m", "pipeline"]


def _explicit_home() -> Path | None:
    """The home the user chose for this run (``--home`` or ``$MEMFOLD_HOME``); None for the default."""
    if STATE.home:
        return Path(STATE.home).absolute()
    configured = os.environ.get("MEMFOLD_HOME")
    return Path(configured).absolute() if configured else None


def host_argv(user: bool, absolute: bool) -> list[str]:
    """The memfold command written into host files.

    A project's host files are committed and run on every teammate's machine, so they name
    ``memfold`` on ``PATH`` and no home; this machine's paths go to local-only files. The user's
    own config (``--user``) and an explicit ``--absolute`` install get this installation's path.
    """
    if not (user or absolute):
        return ["memfold"]
    home = _explicit_home()
    return memfold_argv() + (["--home", str(home)] if home else [])


def _path_note() -> str | None:
    """Why a portable ``memfold`` command would not reach this installation, if it would not."""
    found = shutil.which("memfold")
    mine = memfold_argv()[0]
    if found is None:
        return f"memfold is not on PATH: the hosts run `memfold`; put {Path(mine).parent} on PATH"
    if Path(mine).name == "memfold" and Path(found).resolve() != Path(mine).resolve():
        return f"`memfold` on PATH is {found}, not this installation ({mine})"
    return None


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
    raise UsageError(f"unknown host {host!r} (one of {', '.join(HOSTS)}, git)", code="usage.host")


def _local_settings(host: str, user: bool) -> Path | None:
    """The host's project file that stays on this machine (Claude Code keeps it out of git)."""
    return layout().project_root / ".claude" / "settings.local.json" if host == "claude" and not user else None


def _home_notes(host: str, user: bool, absolute: bool, local: Path | None) -> list[str]:
    """What this machine still needs for the portable command to find its memfold home."""
    home = _explicit_home()
    if home is None or user or absolute or local is not None:
        return []
    return [f"this store's home is {home}: start {host} with MEMFOLD_HOME={shlex.quote(str(home))} in its "
            f"environment, or run `memfold hooks install {host} --user` for a machine-only setup"]


@hooks_app.command("install")
def install(host: str = typer.Argument(..., help="claude | pi | codex | git"), user: bool = UserOpt,
            prompt: bool = typer.Option(False, "--prompt", help="claude: also inject on every prompt"),
            absolute: bool = typer.Option(False, "--absolute", help="write this installation's path (and "
                                          "--home) into the project's files instead of `memfold` on PATH"),
            trust: bool = typer.Option(False, "--trust", help="codex: record Codex's trust for memfold's hook"),
            trust_project: bool = typer.Option(False, "--trust-project",
                                               help="codex: also mark this project trusted in Codex (with --trust)"),
            sync_hook: bool = typer.Option(False, "--sync-hook", help="git: also run `memfold sync` after "
                                           "merges and checkouts (post-merge, post-checkout hooks)"),
            json_out: bool = JsonOpt) -> int:
    """Install memfold's context injection (and /consolidate) into a host, or git's merge drivers; idempotent."""
    from ..hosts import claude, codex, pi

    if host == "git":
        return _git_install(user, sync_hook, json_out)
    if sync_hook:
        raise UsageError("--sync-hook is for `memfold hooks install git`", code="usage.option")
    settings, owned = _targets(host, user)
    local = _local_settings(host, user)
    memfold = host_argv(user, absolute)
    installer = _installer(host, user)
    installer.guard(settings, owned, local)
    if settings is not None:
        events = ["SessionStart", "UserPromptSubmit"] if prompt and host == "claude" else list(codex.EVENTS)
        installer.merge_settings(settings, claude.command_line([*memfold, *claude.HOOK_TAIL]), events)
    if owned is not None:
        data = claude.consolidate_command_file(memfold) if host == "claude" else pi.render_extension(memfold)
        installer.write_owned(owned, data)
    home = _explicit_home()
    if local is not None and home is not None and not absolute:
        installer.merge_env(local, {"MEMFOLD_HOME": str(home)})
    installer.save()
    written = [Path(a["path"]) for a in installer.actions]
    commit = [] if user else [str(p.relative_to(layout().project_root)) for p in written
                              if p != local and p.is_file()]
    local_only = [str(local.relative_to(layout().project_root))] if local is not None and local.is_file() else []
    notes = [n for n in (_path_note(),) if n] + _home_notes(host, user, absolute, local)
    trusted = _codex_trust(user, trust or trust_project, trust_project, notes) if host == "codex" else None
    steps = codex.trust_steps(layout().project_root, user, trusted) if host == "codex" else []
    lines = [f"{a['action']}: {a['path']}" for a in installer.actions]
    if trusted is not None:
        lines += ["codex: project marked trusted"] if trusted.project_trusted else []
        lines += [f"codex: trusted {key}" for key in trusted.trusted]
    if commit and absolute:
        lines.append("this machine only, do not commit: " + " ".join(commit) + "  (absolute paths, as asked)")
        commit, local_only = [], [*commit, *local_only]
    elif commit:
        lines.append("commit: " + " ".join(commit) + "  (they name `memfold` on PATH, no machine paths)")
    if local_only:
        lines.append("local only, do not commit: " + " ".join(local_only) + "  (this machine's MEMFOLD_HOME)")
    lines += [f"note: {n}" for n in notes]
    if steps:
        lines.append("Codex runs the hook only after you trust the project and the hook; run:")
        lines += [f"  {step}" for step in steps]
    emit({"ok": True, "host": host, "scope": "user" if user else "project", "files": installer.actions,
          "commit": commit, "localOnly": local_only, "notes": notes, "next": steps,
          "codexTrust": trusted.__dict__ if trusted is not None else None},
         "\n".join(lines), as_json=want_json(json_out))
    return 0


def _git_only_project(user: bool) -> None:
    if user:
        raise UsageError("git's merge drivers and hooks belong to one repository; --user does not apply",
                         code="usage.option", hint="run it without --user in each repository (and each clone)")


def _git_install(user: bool, sync_hook: bool, json_out: bool) -> int:
    """Register memfold's merge drivers (and sync hooks) in this repository's git config."""
    from ..hosts import gitsetup

    _git_only_project(user)
    root = layout().project_root
    actions = gitsetup.install(root, memfold_argv(), host_argv(True, True) if sync_hook else None)
    lines = [f"{a['action']}: {a['path']}" for a in actions]
    lines.append("commit: .gitattributes  (it names the drivers; teammates without them get git's text merge)")
    emit({"ok": True, "host": "git", "files": actions, "commit": [".gitattributes"]}, "\n".join(lines),
         as_json=want_json(json_out))
    return 0


def _git_uninstall(user: bool, remove_attributes: bool, json_out: bool) -> int:
    from ..hosts import gitsetup

    _git_only_project(user)
    actions = gitsetup.uninstall(layout().project_root, remove_attributes)
    emit({"ok": True, "host": "git", "files": actions}, "\n".join(f"{a['action']}: {a['path']}" for a in actions),
         as_json=want_json(json_out))
    return 0


def _codex_trust(user: bool, trust: bool, trust_project: bool, notes: list[str]) -> Any:
    """Ask Codex's app server to trust memfold's hook (and the project); None when not asked or impossible."""
    from ..hosts import claude, codex

    if not trust:
        return None
    exe = shutil.which("codex")
    if exe is None:
        notes.append("codex is not on PATH: memfold could not record Codex's trust")
        return None
    root = layout().project_root
    env = {**os.environ}

    def start() -> codex.AppServer:
        return codex.AppServer((exe, "app-server"), env)

    result = codex.trust_hooks(start, root, lambda c: claude.is_ours({"type": "command", "command": c}),
                               trust_project=trust_project and not user)
    notes.extend(f"codex: {w}" for w in result.warnings)
    if not (result.trusted or result.already):
        notes.append("Codex lists no memfold hook for this project" + ("" if user or trust_project else
                     " (an untrusted project's .codex/ is ignored: add --trust-project)"))
    return result


@hooks_app.command("uninstall")
def uninstall(host: str = typer.Argument(..., help="claude | pi | codex | git"), user: bool = UserOpt,
              remove_attributes: bool = typer.Option(False, "--attributes", help="git: also take memfold's "
                                                     "block out of .gitattributes (committed, shared)"),
              json_out: bool = JsonOpt) -> int:
    """Remove exactly what `hooks install` added (other hooks and files stay)."""
    if host == "git":
        return _git_uninstall(user, remove_attributes, json_out)
    if remove_attributes:
        raise UsageError("--attributes is for `memfold hooks uninstall git`", code="usage.option")
    settings, owned = _targets(host, user)
    local = _local_settings(host, user)
    installer = _installer(host, user)
    installer.guard(settings, owned, local)
    if settings is not None:
        installer.remove_settings(settings)
    if owned is not None:
        installer.remove_owned(owned)
    if local is not None:
        installer.remove_env(local)
    installer.remove_dirs()
    installer.save()
    lines = [f"{a['action']}: {a['path']}" for a in installer.actions]
    emit({"ok": True, "host": host, "files": installer.actions}, "\n".join(lines) or "nothing installed",
         as_json=want_json(json_out))
    return 0


@hooks_app.command("consolidate", context_settings={"allow_extra_args": True})
def consolidate_from_host(host: str = typer.Argument(..., help="claude"),
                          args: list[str] = typer.Argument(None, help="no-context"),
                          session: str = typer.Option(None, "--session", help="the running session's id"),
                          background: bool = typer.Option(False, "--background", help="start the run in the "
                                                          "background and say where its progress and result go"),
                          json_out: bool = JsonOpt) -> int:
    """What /consolidate runs: consolidate with the running session's transcript.

    A failure is printed on stdout as a FAILED report and the exit code is 0: Claude Code drops the
    output of a failing ``!`` command (in ``claude -p`` the result is empty and the exit code 0), so
    only a report the model is shown reaches the user. With ``--background`` what can fail at once
    (the config, the worker, the session) fails here; the run itself reports to its log.
    """
    if host != "claude":
        raise UsageError("only claude uses this entry point (pi's extension passes its session file)",
                         code="usage.host")
    words = [a.strip().lower() for a in args or [] if a.strip()]
    try:
        if background:
            started = _start_session_run(session, words)
            emit(started, _started_text(started), as_json=want_json(json_out))
            return 0
        summary, note = _consolidate_session(session, words)
    except MemfoldError as exc:
        emit({"ok": False, **exc.as_dict()}, f"memfold /consolidate FAILED, nothing was written.\n"
             f"error [{exc.code}]: {exc.message}" + (f"\nhint: {exc.hint}" if exc.hint else ""),
             as_json=want_json(json_out))
        return 0
    from ..apply.summary import summary_text

    emit({**summary, "transcript": note}, f"{summary_text(summary)}\ntranscript: {note}",
         as_json=want_json(json_out))
    return 0


def _session_transcript(given: str | None, words: list[str]) -> tuple[Path | None, str]:
    """The running session's transcript for /consolidate (None without one), and what to say about it."""
    from ..hosts.claude import claude_dir, find_transcript, session_id

    transcript, note = None, "none (no-context)"
    if "no-context" not in words:
        session = session_id(given, os.environ)
        if session is None:
            raise UsageError("cannot tell which Claude Code session is running (no session id)",
                             code="hooks.no-session",
                             hint="reinstall with `memfold hooks install claude` (its /consolidate passes the "
                                  "session id), run `/consolidate no-context`, or `memfold consolidate --context FILE`")
        cwds = [Path(os.environ["CLAUDE_PROJECT_DIR"])] if os.environ.get("CLAUDE_PROJECT_DIR") else []
        cwds += [Path.cwd(), layout().project_root]
        transcript = find_transcript(claude_dir(Path.home(), dict(os.environ)), session, cwds)
        note = (str(transcript) if transcript else
                f"none: session {session} has no saved messages yet, consolidated without session context")
    return transcript, note


def _consolidate_session(given: str | None, words: list[str]) -> tuple[dict[str, Any], str]:
    """Run the consolidation for /consolidate; return its summary and what was used as context."""
    from ..context.snapshot import ContextLimits
    from ..transaction import consolidate, consolidate_request
    from ._app import config, services
    from .consolidation import read_context

    transcript, note = _session_transcript(given, words)
    limits = ContextLimits()
    data, source = read_context(str(transcript) if transcript else None, transcript is None, limits.max_input_bytes)
    cfg = config()
    request = consolidate_request(cfg, os.environ, context=data, context_source=source, context_limits=limits)
    return consolidate(services(), request), note


def _start_session_run(given: str | None, words: list[str]) -> dict[str, Any]:
    """Check what can fail at once (config, worker, session), then start ``memfold consolidate`` for the
    running session in the background; its progress lines and result go to a log file."""
    from ..hosts.detach import log_path, start_detached
    from ..worker.task import resolve_worker
    from ._app import clock, config
    from .context import user_files

    cfg = config()
    worker = resolve_worker(None, cfg.consolidate.worker, cfg.workers)
    transcript, note = _session_transcript(given, words)
    where = layout()
    argv = [*memfold_argv(), *(["--home", str(STATE.home)] if STATE.home else []),
            "--project", str(where.project_root), "--json", "consolidate", "--progress-json",
            *(["--context", str(transcript)] if transcript else ["--no-context"])]
    log = log_path(user_files()[2], where.scope_key, f"{clock().strftime('%Y%m%dT%H%M%SZ')}-{os.getpid()}")
    pid = start_detached(argv, log, os.environ, where.project_root)
    return {"ok": True, "background": True, "pid": pid, "log": str(log), "worker": worker, "transcript": note}


def _started_text(started: dict[str, Any]) -> str:
    return (f"memfold /consolidate: started in the background (pid {started['pid']}, worker {started['worker']}).\n"
            f"transcript: {started['transcript']}\n"
            f"progress and result: {started['log']}\n"
            "`memfold status` shows the run while it holds the project lock, and the last run once it is done.")
