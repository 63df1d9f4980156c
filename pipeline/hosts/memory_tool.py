"""memfold as the store behind the Claude API's client-side memory tool (``memory_20250818``).

``MemfoldMemoryTool`` implements the Anthropic SDK's ``BetaAbstractMemoryTool``: pass it to the SDK's
tool runner (or call ``call`` with each ``tool_use`` input in your own message loop) and the model's
``/memories`` files are memfold memories, each change a receipted transaction. The SDK is an optional
dependency: ``pip install 'memfold[anthropic]'``. This module is the shell around ``memory_files``:
it resolves the home and config as the command line does, turns a refusal into the SDK's
``ToolError`` (the text the model reads) and logs each command, with memfold's stable code for a
refusal, to ``<logs>/memory-tool.jsonl``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import pydantic

try:
    from anthropic.lib.tools import (
        BetaAbstractMemoryTool,
        BetaAsyncAbstractMemoryTool,
        BetaFunctionToolResultType,
        ToolError,
    )
    from anthropic.types.beta import (
        BetaCacheControlEphemeralParam,
        BetaMemoryTool20250818Command,
        BetaMemoryTool20250818CreateCommand,
        BetaMemoryTool20250818DeleteCommand,
        BetaMemoryTool20250818InsertCommand,
        BetaMemoryTool20250818RenameCommand,
        BetaMemoryTool20250818StrReplaceCommand,
        BetaMemoryTool20250818ViewCommand,
    )
except ImportError as missing:  # the SDK is an optional dependency
    raise ImportError("memfold's memory tool needs the Anthropic SDK: pip install 'memfold[anthropic]'",
                      name=missing.name) from missing

from .. import paths
from ..apply.commit import Services
from ..edits import TxResult
from ..errors import ApplyFailed, MemfoldError
from ..paths.ondisk import check_layout
from .memory_files import Done, MemoryFiles
from .memory_paths import shown

__all__ = ["AsyncMemfoldMemoryTool", "MemfoldMemoryTool", "MemoryToolRefused"]

LOG_NAME = "memory-tool.jsonl"
_COMMANDS: dict[str, type[pydantic.BaseModel]] = {
    "view": BetaMemoryTool20250818ViewCommand, "create": BetaMemoryTool20250818CreateCommand,
    "str_replace": BetaMemoryTool20250818StrReplaceCommand, "insert": BetaMemoryTool20250818InsertCommand,
    "delete": BetaMemoryTool20250818DeleteCommand, "rename": BetaMemoryTool20250818RenameCommand,
}


class MemoryToolRefused(ToolError):
    """A command memfold refused: ``content`` is what the model reads, ``code`` memfold's stable code."""

    def __init__(self, text: str, code: str) -> None:
        super().__init__(text)
        self.code = code


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _services(project: str | os.PathLike[str] | None, home: str | os.PathLike[str] | None,
              clock: Callable[[], dt.datetime]) -> tuple[Services, float, Path]:
    """The store's services as the command line builds them: home, config, bounds, privacy rules."""
    from ..config import load_config
    from ..privacy import load_ruleset

    where = os.fspath(home) if home is not None else paths.default_home(os.environ)
    config_file, cache, logs = paths.user_files(where, os.environ)
    cfg = load_config(config_file)
    layout = paths.global_layout(where) if project is None else paths.make_layout(where, project)
    check_layout(layout)
    ruleset = load_ruleset(cfg.privacy.rules or None, cfg.privacy.allowlist or None, cache_home=cache)
    svc = Services(layout=layout, limits=cfg.store_limits(), clock=clock, ruleset=ruleset, keep_runs=cfg.runs.keep)
    return svc, float(cfg.lock.timeout), Path(logs)


class MemfoldMemoryTool(BetaAbstractMemoryTool):
    """The memory tool over a memfold store: ``project=PATH`` for that project's store, else the global one.

    ``home`` defaults to ``$MEMFOLD_HOME`` or the platform's data dir, as for the ``memfold`` command.
    ``last_result`` is the newest write's transaction (its ``run_id`` is what ``memfold undo`` takes).
    """

    def __init__(self, project: str | os.PathLike[str] | None = None, *, home: str | os.PathLike[str] | None = None,
                 clock: Callable[[], dt.datetime] | None = None,
                 cache_control: BetaCacheControlEphemeralParam | None = None) -> None:
        super().__init__(cache_control=cache_control)
        from ..state.warm import WarmState

        svc, lock_timeout, self.log_dir = _services(project, home, clock or _utc_now)
        self.files = MemoryFiles(svc, lock_timeout, WarmState(svc.layout, svc.limits))
        self.last_result: TxResult | None = None
        self._serial = threading.Lock()  # the kept state between writes is one process's, one call at a time
        self._scrub = [(str(svc.layout.home), "<memfold home>")]
        if not svc.layout.is_global:
            self._scrub.append((str(svc.layout.project_root), "<project>"))

    def close(self) -> None:
        """Release the watch kept between writes (a tool used once per process need not call it)."""
        warm = self.files.warm
        if warm is not None:
            warm.close()

    # -- the SDK's entry points --

    def call(self, input: object) -> BetaFunctionToolResultType:
        """One ``tool_use`` input: checked against the command's schema, then run."""
        return self.execute(self._command(input))

    def _command(self, raw: object) -> BetaMemoryTool20250818Command:
        kind = raw.get("command") if isinstance(raw, dict) else None
        model = _COMMANDS.get(kind) if isinstance(kind, str) else None
        where: list[object] = [raw[key] for key in ("path", "old_path", "new_path")
                               if isinstance(raw, dict) and isinstance(raw.get(key), str)]
        if model is None:
            names = ", ".join(_COMMANDS)
            self._refuse(str(kind)[:40] if kind is not None else "?", where,
                         MemfoldError(f"the memory tool has the commands {names}; the input named "
                                      f"{shown(str(kind)) if kind is not None else 'none'}",
                                      code="memtool.arguments"))
        try:
            command: BetaMemoryTool20250818Command = model.model_validate(raw, strict=True)  # type: ignore[assignment]
        except pydantic.ValidationError as exc:
            problems = []
            for error in exc.errors():
                field = ".".join(str(part) for part in error.get("loc", ())) or "input"
                problems.append(f"'{field}' is required" if error.get("type") == "missing"
                                else f"'{field}': {error.get('msg', 'invalid')}")
            self._refuse(str(kind), where, MemfoldError(f"{kind}: " + "; ".join(problems) + " (nothing was done)",
                                                      code="memtool.arguments"))
        return command

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return self._run("view", [command.path], lambda: self.files.view(command.path, command.view_range))

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return self._run("create", [command.path], lambda: self.files.create(command.path, command.file_text))

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return self._run("str_replace", [command.path],
                         lambda: self.files.str_replace(command.path, command.old_str, command.new_str))

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return self._run("insert", [command.path],
                         lambda: self.files.insert(command.path, command.insert_line, command.insert_text))

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return self._run("delete", [command.path], lambda: self.files.delete(command.path))

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return self._run("rename", [command.old_path, command.new_path],
                         lambda: self.files.rename(command.old_path, command.new_path))

    def clear_all_memory(self) -> str:
        """Delete every memory of the store (not a command of the model's): one receipted transaction,
        which ``memfold undo RUN_ID`` reverses."""
        return self._run("clear", [], self.files.clear)

    # -- one command --

    def _run(self, kind: str, where: list[object], run: Callable[[], Done]) -> str:
        with self._serial:
            try:
                done = run()
            except MemfoldError as exc:
                self._refuse(kind, where, exc)
            except OSError as exc:
                self._refuse(kind, where, ApplyFailed(f"memfold could not read or write its store: "
                                                      f"{exc.strerror or exc}", code="apply.io"))
            if done.result is not None and done.result.run_id is not None:
                self.last_result = done.result
            self._log({"command": kind, "paths": [shown(str(p)) for p in where], "ok": True,
                       "runId": done.result.run_id if done.result is not None else None})
            return done.text

    def _refuse(self, kind: str, where: list[object], exc: MemfoldError) -> NoReturn:
        text = exc.message + (f" ({exc.hint})" if exc.hint else "")
        for real, placeholder in self._scrub:
            text = text.replace(real, placeholder)
        self._log({"command": kind, "paths": [shown(str(p)) for p in where], "ok": False, "code": exc.code})
        raise MemoryToolRefused(text, exc.code) from None

    def _log(self, entry: dict[str, Any]) -> None:
        """One line per command; a log that cannot be written never fails the command."""
        line = json.dumps({"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **entry}, ensure_ascii=True)
        try:
            os.makedirs(self.log_dir, mode=0o700, exist_ok=True)
            fd = os.open(self.log_dir / LOG_NAME, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                os.write(fd, (line + "\n").encode("ascii"))
            finally:
                os.close(fd)
        except OSError:
            pass


class AsyncMemfoldMemoryTool(BetaAsyncAbstractMemoryTool):
    """The same tool for the SDK's async runner: each command runs in a worker thread."""

    def __init__(self, project: str | os.PathLike[str] | None = None, *, home: str | os.PathLike[str] | None = None,
                 clock: Callable[[], dt.datetime] | None = None,
                 cache_control: BetaCacheControlEphemeralParam | None = None) -> None:
        super().__init__(cache_control=cache_control)
        self.tool = MemfoldMemoryTool(project, home=home, clock=clock)

    async def call(self, input: object) -> BetaFunctionToolResultType:
        from anyio.to_thread import run_sync

        return await run_sync(self.tool.call, input)

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return await self._sync(self.tool.view, command)

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return await self._sync(self.tool.create, command)

    async def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return await self._sync(self.tool.str_replace, command)

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return await self._sync(self.tool.insert, command)

    async def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return await self._sync(self.tool.delete, command)

    async def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return await self._sync(self.tool.rename, command)

    async def clear_all_memory(self) -> str:
        from anyio.to_thread import run_sync

        return await run_sync(self.tool.clear_all_memory)

    @staticmethod
    async def _sync(method: Callable[[Any], str], command: Any) -> str:
        from anyio.to_thread import run_sync

        return await run_sync(method, command)
