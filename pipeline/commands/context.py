"""What every command shares, without typer: global state, paths, services, output and error reports.

The typer app (``_app``) and the typer-free fast path for everyday commands (``quick``) both use it.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
from pathlib import Path

from ..errors import MemfoldError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..privacy import RuleSet


class Globals:
    """Options before the command, and what one invocation caches (a plain class: no dataclasses import)."""

    __slots__ = ("project", "home", "json", "global_scope", "warnings", "loaded")
    project: Path | None
    home: Path | None
    json: bool
    global_scope: bool
    warnings: list[str]
    loaded: tuple[Path, Any] | None  # the config read once per invocation

    def __init__(self, project: Path | None = None, home: Path | None = None, json: bool = False,
                 global_scope: bool = False, warnings: list[str] | None = None,
                 loaded: tuple[Path, Any] | None = None) -> None:
        self.project = project
        self.home = home
        self.json = json
        self.global_scope = global_scope
        self.warnings = [] if warnings is None else warnings
        self.loaded = loaded

    def __repr__(self) -> str:
        inner = ", ".join(f"{key}={getattr(self, key)!r}" for key in self.__slots__)
        return f"Globals({inner})"


STATE = Globals()


def use_global(flag: bool) -> None:
    """A command's own --global flag (the global option before the command works too)."""
    STATE.global_scope = STATE.global_scope or flag


def want_json(local: bool) -> bool:
    return local or STATE.json


def clock() -> dt.datetime:
    """The wall clock; MEMFOLD_NOW pins it (ISO 8601) for reproducible runs and tests."""
    pinned = os.environ.get("MEMFOLD_NOW")
    if pinned:
        value = dt.datetime.fromisoformat(pinned.replace("Z", "+00:00"))
        return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    return dt.datetime.now(dt.UTC)


def home_dir() -> Path:
    from ..paths import default_home

    home = STATE.home if STATE.home is not None else Path(default_home(os.environ))
    try:
        st = os.stat(home)
    except (FileNotFoundError, NotADirectoryError):
        return home  # created 0700 by the first command that writes
    import stat

    if not stat.S_ISDIR(st.st_mode):
        from ..errors import UsageError

        raise UsageError(f"the memfold home {home} is not a directory", code="usage.home",
                         hint="pass --home DIR (or set $MEMFOLD_HOME) to a directory; it is created if missing")
    from ..fsutil import refuse_unsafe_owner

    refuse_unsafe_owner(home, st, "memfold home")
    return home


def user_files() -> tuple[Path, Path, Path]:
    """The config file, cache dir and log dir of this invocation's home (XDG for the default home)."""
    from ..paths import user_files as located

    home = home_dir()
    config_file, cache, logs = located(str(home), os.environ)
    if cache != str(home):
        # The XDG cache dir holds the parsed privacy rules: the same rule as for the home.
        try:
            st = os.stat(cache)
        except OSError:
            st = None
        if st is not None:
            from ..fsutil import refuse_unsafe_owner

            refuse_unsafe_owner(cache, st, "cache directory")
    return Path(config_file), Path(cache), Path(logs)


def layout() -> Any:
    from ..paths import global_layout, make_layout
    from ..paths.ondisk import adopt_worktree_store, check_layout

    if STATE.global_scope:
        result = global_layout(home_dir())
    else:
        project = STATE.project or Path.cwd()
        result = make_layout(home_dir(), project)
        notice = adopt_worktree_store(result)
        if notice is not None:
            warn(notice)
            result = make_layout(home_dir(), project)
    check_layout(result)
    return result


def config() -> Any:
    from ..config import load_config

    path = user_files()[0]
    if STATE.loaded is None or STATE.loaded[0] != path:
        STATE.loaded = (path, load_config(path))
    return STATE.loaded[1]


def services(*, privacy: bool = True) -> Any:
    """Collaborators for a core call; read-only commands skip loading the privacy rules."""
    from ..apply.commit import Services

    where = layout()  # refuses a symlinked home before the caches below are written into it
    cfg = config()
    ruleset = None
    if privacy:
        from ..privacy import load_ruleset

        ruleset = load_ruleset(cfg.privacy.rules or None, cfg.privacy.allowlist or None,
                               cache_home=str(user_files()[1]))
    return Services(layout=where, limits=cfg.store_limits(), clock=clock, ruleset=ruleset,
                    keep_runs=cfg.runs.keep)


def later_rules() -> Callable[[], RuleSet] | None:
    """The privacy rules as a loader a consolidation runs while its worker plans (nothing before the
    worker scans; importing and loading them was ~5-15 ms before the policy), or None when the user
    config adds rules or allowlist entries: those are checked before the run, so that a bad entry is
    refused before any run dir exists."""
    privacy = config().privacy
    if privacy.rules or privacy.allowlist:
        return None
    cache_home = str(user_files()[1])

    def load() -> RuleSet:
        from ..privacy import load_ruleset

        return load_ruleset(cache_home=cache_home)

    return load


def lock_timeout() -> float:
    return float(config().lock.timeout)


def _json(data: dict[str, Any]) -> str:
    from ..safetext import json_text
    from ..store.jsontext import dump_json

    # dump_json: json.dumps' text exactly, without its pure-Python indenting (an import reports 3,000 files).
    return json_text(dump_json(data).decode("utf-8").removesuffix("\n")) + "\n"


def _terminal(text: str) -> str:
    """Memory names and text reach the terminal here: no escape sequence or bidi control passes."""
    from ..safetext import visible

    return visible(text)


def emit(data: dict[str, Any], human: str, *, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(_json(data))
    elif human:
        sys.stdout.write(_terminal(human if human.endswith("\n") else human + "\n"))


def warn(message: str) -> None:
    sys.stderr.write(_terminal(f"memfold: warning: {message}\n"))


def report_error(exc: MemfoldError, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(_json(exc.as_dict()))
        return
    sys.stderr.write(_terminal(exc.text()))
