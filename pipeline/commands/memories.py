"""The bodies of the everyday memory commands (add, update, forget, list, show, search), without typer.

``store`` registers them as typer commands; ``quick`` runs a plain invocation of them without
importing typer at all (typer imports pydantic for its own argument coercion: ~0.3 s per command).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .context import emit, lock_timeout, services, use_global, want_json, warn

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_MAX_BODY = 16 << 20


def read_body(body: str | None, body_file: Path | None) -> str | None:
    if body is not None and body_file is not None:
        from ..errors import UsageError

        raise UsageError("give --body or --body-file, not both", code="usage.body")
    if body_file is None:
        return body
    from ..errors import InputRejected

    where = "stdin" if str(body_file) == "-" else str(body_file)
    try:
        if str(body_file) == "-":
            data = sys.stdin.buffer.read(_MAX_BODY + 1)
        else:
            # The user's own file: a symlink is followed, anything but a regular file is refused.
            with open(body_file, "rb") as fh:
                if not os.path.isfile(body_file):
                    raise IsADirectoryError(21, "not a regular file")
                data = fh.read(_MAX_BODY + 1)
    except OSError as exc:
        raise InputRejected(f"--body-file {where}: {exc.strerror or exc}", code="input.body-file",
                            hint="give a readable text file, or '-' to read the body from stdin") from None
    if len(data) > _MAX_BODY:
        raise InputRejected(f"--body-file {where} is over {_MAX_BODY} bytes", code="input.body-file",
                            hint="a memory is one short note; keep long documents in the repository")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputRejected(f"{where} is not UTF-8 text", code="memory.encoding") from None


def print_tx(result: Any, as_json: bool) -> int:
    for message in result.warnings:
        if result.run_id is not None:
            warn(message)
    if result.run_id is None:
        emit(result.as_dict(), "unchanged: nothing to do", as_json=as_json)
        return 0
    lines = [f"{op['kind']} {op['name']} ({op['classification'] or 'removed'})" for op in result.operations]
    lines.append(f"receipt: {result.receipt}")
    emit(result.as_dict(), "\n".join(lines), as_json=as_json)
    return 0


def add(name: str, description: str | None, type_: str | None, visibility: str | None, body: str | None,
        body_file: Path | None, expires: str | None, global_: bool, json_out: bool, allow_publish: bool = False,
        cite: list[str] | None = None) -> int:
    use_global(global_)
    from ..edits import direct_transaction
    from ..state.ops import MemoryInput, add_ops
    from ..store.memory import Memory, sanitize_line

    text = read_body(body, body_file)
    svc = services()
    citing = _citing(svc, cite)
    evidence = citing(Memory(name, sanitize_line(description or "") or "-", body=text or ""))
    data = MemoryInput(description, type_, visibility, text, expires, evidence)
    result = direct_transaction(svc, "add", add_ops(name, data, svc.clock()), lock_timeout=lock_timeout(),
                                publish=_publish(allow_publish))
    return print_tx(result, want_json(json_out))


def update(name: str, description: str | None, type_: str | None, visibility: str | None, body: str | None,
           body_file: Path | None, expires: str | None, global_: bool, json_out: bool,
           allow_publish: bool = False, cite: list[str] | None = None) -> int:
    use_global(global_)
    from ..edits import direct_transaction
    from ..state.ops import MemoryInput, update_ops

    data = MemoryInput(description, type_, visibility, read_body(body, body_file), expires)
    svc = services()
    citing = _citing(svc, cite)
    build = update_ops(name, data, svc.clock(), anchor=citing)
    result = direct_transaction(svc, "update", build, lock_timeout=lock_timeout(), publish=_publish(allow_publish))
    result.warnings += citing.notes
    return print_tx(result, want_json(json_out))


def _citing(svc: Any, cite: list[str] | None) -> Any:
    """What the memory written cites: ``--cite`` (relative to the working directory or the project root)
    and the tracked files its text names; the global store cites nothing."""
    from ..evidence.cite import Citing

    layout = svc.layout
    return Citing(None if layout.is_global else layout.project_root, cite, Path.cwd())


def _publish(allow_publish: bool) -> str:
    """A person may make the memory they name safe; carrying another private memory needs the flag."""
    return "any" if allow_publish else "named"


def forget(name: str, global_: bool, json_out: bool) -> int:
    use_global(global_)
    from ..edits import direct_transaction
    from ..state.ops import forget_ops

    svc = services()
    build = forget_ops(name)
    return print_tx(direct_transaction(svc, "forget", build, lock_timeout=lock_timeout()), want_json(json_out))


def read_view() -> tuple[Any, Any]:
    """The memories reads show: the store as the next sync leaves it, teammates' pending memories labelled."""
    from ..mirror.team import read_view as view_of

    svc = services(privacy=False)
    return svc, view_of(svc.layout, svc.limits, lambda: services().ruleset)


def row(name: str, m: Any) -> dict[str, Any]:
    return {"file": name, "name": m.name, "description": m.description, "type": m.type,
            "visibility": m.visibility, "created": m.created, "modified": m.modified, "expires": m.expires}


def _file_width(rows: list[dict[str, Any]]) -> int:
    """The file column as wide as its longest name (at least 24), so long names never run into the next."""
    return max([24, *(len(r["file"]) for r in rows)])


def _marked(r: dict[str, Any]) -> str:
    return f"  [team: {r['path']}, not yet adopted]" if r.get("origin") == "team" else ""


DOCTOR_FIX = "run `memfold doctor` for what is wrong and how to repair it"


def unusable(root: Path, broken: dict[str, Any]) -> list[dict[str, str]]:
    """Files of the private store that ``list`` cannot show: memory files that do not parse, and names
    memfold does not read as memories (``Memory.md`` in another case than the index's, ``notes.txt``)."""
    from ..fsutil import TEMP_PREFIX
    from ..store.memory import INDEX_NAME, is_memory_name

    out = [{"file": b.file, "path": b.path, "code": b.code, "problem": b.problem, "fix": DOCTOR_FIX}
           for b in broken.values()]
    try:
        names = os.listdir(root)
    except OSError:
        names = []
    for name in names:
        if name == INDEX_NAME or name.startswith(TEMP_PREFIX) or is_memory_name(name):
            continue  # the index, a write under way, or a memory file (read, or named in ``broken``)
        reserved = name.lower() == "memory.md"
        out.append({"file": name, "path": str(root / name),
                    "code": "store.reserved-name" if reserved else "store.stray",
                    "problem": "MEMORY.md in any case is the index's name, never a memory" if reserved
                    else "not a memory file name", "fix": DOCTOR_FIX})
    return sorted(out, key=lambda b: b["file"])


def list_memories(global_: bool, json_out: bool) -> int:
    use_global(global_)
    svc, view = read_view()
    memories = view.memories
    rows = [{**row(n, memories[n]), **view.origin(n)} for n in sorted(memories)]
    bad = unusable(svc.layout.harness, view.broken)
    if not want_json(json_out):
        for item in bad:  # the listing goes on: one line each on stderr, the exit code stays 0
            warn(f"cannot use {item['path']}: {item['problem']}; {DOCTOR_FIX}")
    width = _file_width(rows)
    human = "\n".join(f"{r['file']:<{width}} {r['type']:<9} {r['visibility']:<7} {r['description']}{_marked(r)}"
                      for r in rows)
    emit({"ok": True, "memories": rows, "broken": bad}, human or "no memories yet", as_json=want_json(json_out))
    return 0


def show(name: str, global_: bool, json_out: bool) -> int:
    """One memory's file as it is on disk (a teammate's not yet adopted: as the sync will adopt it)."""
    use_global(global_)
    from ..state.ops import require_in

    svc, view = read_view()
    actual = require_in(view.memories, view.broken, name, parsed=True)
    memory = view.memories[actual]
    from ..evidence.cite import checked

    evidence = checked(_root(svc), memory.evidence)
    as_json = want_json(json_out)
    if not as_json:
        for mark in evidence.get("marks", []):
            warn(f"{actual}: {mark}")
    emit({"ok": True, **row(actual, memory), **view.origin(actual), "body": memory.body, **evidence},
         view.files[actual].decode("utf-8"), as_json=as_json)
    _used(svc, "read", [actual])
    return 0


def _root(svc: Any) -> Path | None:
    """The repository a store's citations are relative to (None: the global store)."""
    return None if svc.layout.is_global else svc.layout.project_root


def _used(svc: Any, kind: str, files: list[str]) -> None:
    """Note the memories a person or agent just used, in the private home (never the mirror)."""
    from ..store import usage

    usage.record(str(svc.layout.project_home), kind, files)


def search(query: str, limit: int, global_: bool, json_out: bool) -> int:
    use_global(global_)
    from ..errors import UsageError

    if not query.strip():
        raise UsageError("search needs words to look for", code="usage.query",
                         hint="give a query, e.g. `memfold search deploy`; `memfold list` shows every memory")
    svc, view = read_view()
    from ..evidence.cite import Follower, checked
    from ..mirror.team import team_hits
    from ..store.evidence import from_row

    root = _root(svc)
    follow = Follower(root) if root is not None else None
    rows = [{**row(r.file, r), **view.origin(r.file), "score": s, **checked(root, from_row(r.evidence), follow)}
            for r, s in team_hits(svc.layout, svc.limits, view, query, limit)]
    width = _file_width(rows)
    human = "\n".join(f"{r['file']:<{width}} {r['score']:>8.4g}  {r['description']}{_marked(r)}"
                      + "".join(f"\n{'':<{width}}          {m}" for m in r.get("marks", [])) for r in rows)
    emit({"ok": True, "query": query, "results": rows}, human or "no match", as_json=want_json(json_out))
    _used(svc, "search", [r["file"] for r in rows])
    return 0
