"""``memfold inject``: the per-prompt path.

It runs before every prompt, so it imports only ``os``, ``sys`` and memfold's light modules: no typer,
pydantic, jsonschema or portalocker, no argparse, pathlib, dataclasses or typing, and neither ``json`` nor
``re`` (``store.jsontext`` reads and writes JSON on the C accelerator).
"""

from __future__ import annotations

import os
import sys
import time

from .. import paths
from ..safetext import visible
from ..store import jsontext
from ..store.inject import BudgetTooSmall, Injection, build_injection
from ..store.sources import Source
from .inject_args import USAGE, Args, Usage, parse_args

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any



def _config(home: str) -> Any:
    """The validated config; its sections are cached by ``load_config``, so no YAML or pydantic per prompt."""
    from ..config import load_config

    return load_config(paths.user_files(home, os.environ)[0])


def _rules_loader(home: str, privacy: Any) -> Any:
    """How this home loads its privacy rules, called only when a row needs them (the engine costs more
    than the rest of a prompt)."""
    def load() -> Any:
        from ..privacy import load_ruleset

        return load_ruleset(privacy.rules or None, privacy.allowlist or None, cache_home=home)

    return load


def _refuse_unsafe_home(home: str) -> None:
    """The same owner and mode rule every other command applies to the home (one stat)."""
    from ..fsutil import refuse_unsafe_owner

    try:
        st = os.stat(home)
    except OSError:
        return  # no home yet: nothing in it to trust or distrust
    refuse_unsafe_owner(home, st, "memfold home")


def _readable_root(root: str, below: str, label: str, warnings: list[str]) -> bool:
    """The same symlink refusal every other command applies to its layout, as a skip instead of an error.

    A symlinked ``.memory`` in a trusted project would show whatever it points at (another project's
    private store) as this project's mirror; the host's prompt must still be built, so the store is
    left out and the block says why.
    """
    from ..errors import UnsafePath
    from ..fsutil import refuse_symlinks

    try:
        refuse_symlinks(root, below)
    except UnsafePath as exc:
        # No path in the text: it lands in the model's prompt; ``memfold status`` names it.
        warnings.append(f"the {label} store was skipped [{exc.code}]: it is, or lies below, a symlink; "
                        "`memfold status` names it")
        return False
    return True


def root_trusted(home: str, root: str) -> bool:
    from ..mirror.trust import is_trusted

    return is_trusted(home, root)


class TeamGate:
    """Whether a teammate's memory in the mirror may be served: the checks a sync makes before it adopts
    a file (``mirror.screen.screen_for``: parse, conflict markers, privacy, hidden and instruction-like
    text, bounds), so nothing the sync would hold back reaches the model before a write adopts it.

    The verdict is kept with the row in the mirror's search index (its ``masks`` column, which the
    mirror's rows have no other use for), dropped with it when the file or the rules change: only a
    row served for the first time is read and checked, so a prompt pays nothing for the rest.
    """

    def __init__(self, home: str, privacy: Any, max_file_bytes: int) -> None:
        from ..store.mask import RowMasker

        self.rules = RowMasker(home, privacy, _rules_loader(home, privacy), kinds=("mirror",))
        self.max_file_bytes = max_file_bytes
        self.screen: Any = None
        self.checked: set[int] = set()

    def __call__(self, source: Any, row: Any) -> bool:
        if source.kind != "mirror":
            return True
        index = source.index
        if id(index) not in self.checked:
            self.checked.add(id(index))
            if self.rules.reset(index):
                row.masks = None
        if row.masks is None:
            row.masks = self._verdict(source.path, row)
            index.settle("UPDATE docs SET masks = ? WHERE id = ? AND sha = ?", (row.masks, row.id, row.sha))
        return bool(row.masks == _ADMITTED)

    def _verdict(self, folder: str, row: Any) -> str:
        from ..fsutil import read_bounded, sha256_bytes

        try:
            data = read_bounded(os.path.join(folder, row.file), self.max_file_bytes)
        except Exception:
            return "held:unreadable"
        if sha256_bytes(data) != row.sha:
            return "held:changed"  # not what was indexed: the index is rebuilt when the row is served
        if self.screen is None:
            from ..mirror.screen import screen_for

            self.screen = screen_for(self.rules.load_rules(), self.max_file_bytes)
        found = self.screen(row.file, data)
        return _ADMITTED if found is None else f"held:{found[0]}"


_ADMITTED = "team:admitted"


def evidence_marker(root: str) -> Any:
    """The marks of served memories' citations, following a gone file through git's renames."""
    from ..store.citecheck import Marker

    def follow(path: str) -> str | None:
        from pathlib import Path

        from ..mirror.gitinfo import renamed_to

        return renamed_to(Path(root), path)

    return Marker(root, follow, lambda: _git_proofs(root))


def _git_proofs(root: str) -> list[tuple[str, str]]:
    """What a rename git knows of rests on: its index and the log of HEAD's moves (each stat), or an
    unknown key (never kept) where the git directory is not found."""
    from ..store.blockcache import stat_key

    git = os.path.join(root, ".git")
    if os.path.isfile(git):
        try:
            with open(git, encoding="utf-8") as fh:
                pointer = fh.read(4096).strip()
        except OSError:
            pointer = ""
        git = os.path.join(root, pointer[len("gitdir:"):].strip()) if pointer.startswith("gitdir:") else ""
    if not git or not os.path.isdir(git):
        return [(root, "unknown")]
    return [(p, stat_key(p)) for p in (os.path.join(git, "index"), os.path.join(git, "logs", "HEAD"))]


def _wanted(home: str, root: str, harness: str, project_home: str, include_global: bool, trusted: bool,
            warnings: list[str]) -> list[tuple[str, str, str, str]]:
    """The stores to show: (kind, root, the home of its index, the index's name)."""

    wanted = []
    if _readable_root(harness, home, "private", warnings):
        wanted.append(("private", harness, project_home, "memory"))
    if trusted:
        mirror = os.path.join(root, paths.MIRROR_DIR)
        if _readable_root(mirror, root, "mirror", warnings):
            wanted.append(("mirror", mirror, project_home, "mirror"))
    if include_global:
        shared_home = paths.global_home(home)
        shared = os.path.join(shared_home, paths.MEMORY_DIR)
        # No global store yet: nothing to index (and no index dir created for it).
        if os.path.lexists(shared) and _readable_root(shared, home, "global", warnings):
            wanted.append(("global", shared, shared_home, "memory"))
    return wanted


def _sources(wanted: Sequence[tuple[str, str, str, str]], limits: Any, warnings: list[str]) -> list[Source]:
    from ..store.searchcache import Index
    from ..store.searchdb import cache_file

    sources = [Source(kind, path, Index.open(path, cache_file(store_home, name), int(limits.max_file_bytes),
                                             int(limits.max_files)))
               for kind, path, store_home, name in wanted]
    unreadable = sources[0].index.unparsable() if sources and sources[0].kind == "private" else []
    if unreadable:
        warnings.append(f"skipped {len(unreadable)} private memory file(s) that do not parse: "
                        f"{', '.join(unreadable[:5])}{' ...' if len(unreadable) > 5 else ''} "
                        "(`memfold doctor` shows the problem and the fix)")
    return sources


def gather(home: str, project_dir: str, *, query: str | None, max_bytes: int | None, max_files: int | None,
           include_global: bool = True, prompt: bool = False, session: str | None = None) -> Injection:
    """The block for this project; with ``prompt``, only what ``query`` adds to this ``session``."""
    home = os.path.abspath(home)
    _refuse_unsafe_home(home)
    root = paths.project_root(os.fspath(project_dir))
    project_home = paths.project_home(home, paths.project_key(root))
    if not os.path.isdir(project_home):
        # A linked worktree's store from before worktrees shared one, which the next command run here
        # moves into place: until then a session start reads it where it is (this path writes no store).
        old = paths.project_home(home, paths.scope_key(root))
        if old != project_home and os.path.isdir(old) and not os.path.islink(old):
            project_home = old
    harness = os.path.join(project_home, paths.MEMORY_DIR)
    config = _config(home)
    settings = config.inject
    limit_bytes = int(max_bytes or settings.max_bytes)
    limit_files = int(max_files or settings.max_files)
    mask = None
    if settings.mask_credentials:
        from ..store.mask import RowMasker

        mask = RowMasker(home, config.privacy, _rules_loader(home, config.privacy))
    trusted = root_trusted(home, root)
    admit = TeamGate(home, config.privacy, int(config.limits.max_file_bytes)) if trusted else None
    if session:
        from ..store import sessions

        sent = sessions.load(project_home, session)
    else:
        sent = {}
    noted: list[str] = []
    wanted = _wanted(home, root, harness, project_home, include_global, trusted, noted)
    marker = evidence_marker(root)
    # A session start (no query) shows what the last one with the same inputs showed, while it holds.
    block = None
    if not query and not prompt:
        from ..store import blockcache

        block = jsontext.dumps([blockcache.FORMAT, wanted, noted, limit_bytes, limit_files, bool(settings.guidance),
                                mask.key if mask else None, admit.rules.key if admit else None,
                                int(config.limits.max_file_bytes),
                                int(config.limits.max_files), sorted(sent.items())])
        kept = blockcache.load(project_home, block)
        if kept is not None:
            result = Injection(kept["text"])
            for field in blockcache.RESULT_FIELDS[1:]:
                setattr(result, field, kept[field])
            _remember(project_home, session, sent, result)
            return result
    from ..store.searchcache import Stale

    for attempt in range(3):
        warnings = list(noted)
        sources = _sources(wanted, config.limits, warnings)
        try:
            result = build_injection(sources, query=query, max_bytes=limit_bytes, max_files=limit_files,
                                     guidance=bool(settings.guidance), warnings=warnings, prompt=prompt,
                                     sent=sent, mask=mask, admit=admit, marks=marker)
            if block is not None:
                from ..store import blockcache

                # A file left out as unparsable shows once fixed, even in place: the block rests on it too,
                # as it does on every file a memory shown cites.
                skipped = [entry for s in sources for entry in s.index.skipped()]
                blockcache.save(project_home, block, [(s.path, s.index.settled_generation()) for s in sources],
                                [*result.served, *skipped, *marker.proofs],
                                {f: getattr(result, f) for f in blockcache.RESULT_FIELDS})
        except Stale:
            # A file changed after its index was read: the index was rebuilt, build the block again.
            if attempt == 2:
                raise
            continue
        finally:
            for source in sources:
                source.index.close()
        _remember(project_home, session, sent, result)
        return result
    raise AssertionError("unreachable")


def _remember(project_home: str, session: str | None, sent: dict[str, str], result: Injection) -> None:
    """Add what ``result`` sent to what ``session`` was sent before; note each body shown as used."""
    if result.included:
        from ..store import usage

        usage.record(project_home, usage.INJECT, result.included)
    if session and result.sent:
        from ..store import sessions

        sessions.save(project_home, session, {**sent, **result.sent})


def _home(value: str | None) -> str:
    return value or paths.default_home(os.environ)


def _log(home: str, message: str) -> None:
    """The hook fails open; the reason goes to a log the user can read, never to the host."""
    try:
        logs = paths.user_files(home, os.environ)[2]
        os.makedirs(logs, exist_ok=True, mode=0o700)
        with open(os.path.join(logs, "hook.log"), "a", encoding="utf-8") as fh:
            fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} inject: {message}\n")
    except OSError:
        pass


def claude_hook(args: Args) -> int:
    """SessionStart/UserPromptSubmit hook: reads the hook JSON on stdin; any failure exits 0 silently."""
    home = _home(args.home)
    try:
        raw = sys.stdin.read(1 << 20) if not sys.stdin.isatty() else ""
        hook = jsontext.loads(raw) if raw.strip() else {}
        if not isinstance(hook, dict):
            raise ValueError("hook input is not a JSON object")
        cwd = args.project or hook.get("cwd") or os.getcwd()
        event = hook.get("hook_event_name") or "SessionStart"
        per_prompt = event == "UserPromptSubmit"
        query = args.query or args.prompt or (hook.get("prompt") if per_prompt else None)
        session = args.session or hook.get("session_id")
        result = gather(home, cwd, query=str(query) if query else None, max_bytes=args.max_bytes,
                        max_files=args.max_files, prompt=per_prompt,
                        session=session if isinstance(session, str) and session else None)
        for warning in result.warnings:
            _log(home, warning)
        if result.text:  # a prompt with nothing new to add gets no block
            out = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": result.text}}
            sys.stdout.write(jsontext.dumps(out, ensure_ascii=False) + "\n")
    except Exception as exc:
        _log(home, f"{exc.__class__.__name__}: {exc}")
    return 0


def main(argv: Sequence[str]) -> int:
    try:
        args = parse_args(argv)
    except Usage as exc:
        # The one usage-error style of every command (JSON under --json or --format json).
        from ..errors import UsageError

        error = UsageError(str(exc), code="usage.option", hint="`memfold inject --help` lists the options")
        from itertools import pairwise

        items = list(argv)
        if "--json" in items or "--format=json" in items or ("--format", "json") in pairwise(items):
            import json

            sys.stdout.write(json.dumps(error.as_dict(), indent=2, sort_keys=True, ensure_ascii=False) + "\n")
        else:
            sys.stderr.write(visible(error.text()))
        return error.exit_code
    if args.format == "claude-hook":
        return claude_hook(args)
    home = _home(args.home)
    try:
        result = gather(home, args.project or os.getcwd(), query=args.prompt or args.query,
                        max_bytes=args.max_bytes, max_files=args.max_files, prompt=args.prompt is not None,
                        session=args.session)
    except BudgetTooSmall as exc:
        sys.stderr.write(f"{USAGE}memfold inject: error [usage.max-bytes]: {exc}\n")
        return 2
    except Exception as exc:
        code = getattr(exc, "exit_code", 1)
        sys.stderr.write(visible(f"memfold: error [{getattr(exc, 'code', 'inject.failed')}]: {exc}\n"))
        return int(code)
    if args.format == "json" or args.json_out:
        sys.stdout.write(jsontext.dumps({"ok": True, "text": result.text, "indexed": result.indexed,
                                     "included": result.included, "omitted": result.omitted,
                                     "truncated": result.truncated, "warnings": result.warnings},
                                    ensure_ascii=False) + "\n")
    else:
        for warning in result.warnings:
            sys.stderr.write(f"memfold: warning: {visible(warning)}\n")
        sys.stdout.write(result.text)
    return 0
