"""``memfold review``: walk the memories whose cited code drifted, one at a time (keep, update, forget)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from typing import Any

import typer

from ..errors import InputRejected
from ._app import GlobalOpt, JsonOpt, app, emit, lock_timeout, services, use_global, want_json
from .memories import print_tx

ACTIONS = {"k": "keep", "u": "update", "f": "forget", "s": "skip", "q": "quit"}


@app.command()
def review(global_: bool = GlobalOpt, json_out: bool = JsonOpt) -> int:
    """Walk the memories whose cited code changed or is gone: keep (re-anchor), update, or forget each."""
    from ..evidence.drift import evidence_report
    from ..state.read import read_pre

    use_global(global_)
    svc = services()
    pre = read_pre(svc.layout, svc.limits)
    items = evidence_report(svc.layout, pre.memories)
    if want_json(json_out) or not sys.stdin.isatty():
        hint = ("keep one (re-anchor its citations to the code now): `memfold update NAME`; change it: "
                "`memfold update NAME -d ... -b ...`; drop it: `memfold forget NAME`")
        human = "\n".join(_describe(item) for item in items) + (f"\n{hint}" if items else "")
        emit({"ok": True, "memories": items, "actions": hint}, human or "nothing to review: no cited code drifted",
             as_json=want_json(json_out))
        return 0
    if not items:
        emit({"ok": True, "memories": []}, "nothing to review: no cited code drifted", as_json=False)
        return 0
    for number, item in enumerate(items, 1):
        sys.stdout.write(f"\n[{number}/{len(items)}] {_describe(item)}\n")
        choice = _ask()
        if choice == "quit":
            break
        if choice == "skip":
            continue
        try:
            print_tx(_act(svc, choice, item["file"]), False)
        except InputRejected as exc:
            sys.stderr.write(f"memfold: {item['file']}: {exc.message} [{exc.code}]\n")
    return 0


def _describe(item: dict[str, Any]) -> str:
    lines = [f"{item['file']} ({item['name']}): {item['description']}", *(f"  {m}" for m in item["marks"])]
    for cited in item["evidence"]:
        lines += [f"    {line}" for line in cited.get("diff", [])]
    return "\n".join(lines)


def _ask() -> str:
    while True:
        answer = typer.prompt("[k]eep and re-anchor, [u]pdate, [f]orget, [s]kip, [q]uit", default="s")
        choice = ACTIONS.get(answer.strip().lower()[:1])
        if choice is not None:
            return choice


def _act(svc: Any, choice: str, name: str) -> Any:
    """Keep re-anchors the memory's citations to the code as it is; update first changes its text (the
    editor, else a new description); forget deletes it. Each is one receipted transaction."""
    from ..edits import direct_transaction
    from ..evidence.cite import Citing
    from ..state.ops import MemoryInput, forget_ops, update_ops

    if choice == "forget":
        return direct_transaction(svc, "forget", forget_ops(name), lock_timeout=lock_timeout())
    citing = Citing(svc.layout.project_root, [])
    data = MemoryInput()
    if choice == "update":
        data = _new_text(svc, name)
    result = direct_transaction(svc, "update", update_ops(name, data, svc.clock(), anchor=citing),
                                lock_timeout=lock_timeout(), publish="named")
    result.warnings += citing.notes
    return result


def _new_text(svc: Any, name: str) -> Any:
    from ..fsutil import read_bounded, write_new
    from ..state.ops import MemoryInput
    from ..state.read import read_private
    from ..store.memory import parse_memory

    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not editor:
        description = typer.prompt("new description (one line)")
        return MemoryInput(description=description)
    harness, _, _ = read_private(svc.layout, svc.limits)
    scratch = svc.layout.project_home / f"review-{os.getpid()}-{name}"
    write_new(scratch, harness.files[name])
    try:
        subprocess.run((*shlex.split(editor), str(scratch)), check=False)
        edited = parse_memory(read_bounded(scratch, svc.limits.max_file_bytes), name)
    finally:
        scratch.unlink(missing_ok=True)
    return MemoryInput(description=edited.description, body=edited.body)
