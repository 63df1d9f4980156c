"""The memory tool's six commands over one memfold store, free of the SDK's types.

``view`` reads the private store as it is, without the lock. Every other command is one direct edit
through ``edits.direct_transaction`` (lock, recovery, privacy gate, journal, receipt), built from the
pre-state read under the lock, so a refusal found there (a clash, a bound, a privacy rule) writes
nothing. The model is an agent, not the person who decides what the team's repository shows: a
memory it creates is private, no command of it changes a visibility, and a memory a person made safe
stays under the privacy gate and may not take on the wording of a private one (``publish="named"``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from ..apply.commit import Services
from ..edits import TxResult, direct_transaction
from ..errors import InputRejected, PrivacyRejected
from ..frozen import Frozen
from ..mirror.team import read_view
from ..privacy.nearcopy import NEAR_COPY
from ..state.model import Operation, PreState
from ..store.memory import Memory, stamp, today
from ..store.state import find_name
from . import memory_text as mt
from .memory_paths import ROOT, file_path, memory_target
from .memory_view import file_view, listing, snippet

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..state.warm import WarmState

COMMAND = "memory-tool"  # the receipt's command: ``memory-tool create``, ``memory-tool str_replace``, ...


class Done(Frozen):
    """A command's answer to the model and the transaction it made (None: nothing changed)."""

    __slots__ = ("text", "result")
    text: str
    result: TxResult | None

    def __init__(self, text: str, result: TxResult | None = None) -> None:
        self._set(text=text, result=result)


def _file(path: object, action: str) -> str:
    """The memory file ``path`` names; the folder itself is refused for ``action``."""
    name = memory_target(path)
    if name is None:
        raise InputRejected(f"{ROOT} is the folder of memories; {action} needs a file such as {ROOT}/notes.md",
                            code="memtool.folder")
    return name


def _missing(names: list[str], name: str) -> InputRejected:
    other = find_name(names, name)
    hint = f"; did you mean {file_path(other)}? (names match exactly)" if other is not None else \
        f"; view {ROOT} to see the files there"
    return InputRejected(f"The path {file_path(name)} does not exist{hint}", code="memtool.not-found")


_FINDING = re.compile(r"^\.memory/([^:/]+):(\d+):\d+$")
_RULE = re.compile(r" line \d+: ([\w.-]+)")


def _privacy_refusal(exc: PrivacyRejected, heads: dict[str, int]) -> PrivacyRejected:
    """The privacy gate's refusal in the model's terms: the file it wrote, the rules, and the lines of
    the text it sees (not of the file with its frontmatter); never the value."""
    shared = "is shared with the team through git (a person made it safe), so memfold checks what goes into it"
    if exc.code == NEAR_COPY and " would be safe" in exc.message and " but " in exc.message:
        name, detail = exc.message.split(" would be safe", 1)[0], exc.message.split(" but ", 1)[1]
        return PrivacyRejected(f"{file_path(name)} {shared}: the change {detail}. Nothing was written; reword "
                               "it, or keep it in a file of its own (a file you create stays private)",
                               code=exc.code, issues=exc.issues)
    found: dict[str, set[str]] = {}
    for issue in exc.issues:
        where, rule = _FINDING.match(issue.path), _RULE.search(issue.message)
        if where is None or rule is None or where.group(1) not in heads:
            continue
        line = int(where.group(2)) - heads[where.group(1)]
        spot = f"line {line} of its text" if line > 0 else "its description (its first line)"
        found.setdefault(where.group(1), set()).add(f"{rule.group(1)} at {spot}")
    if not found:
        return exc
    name = min(found)
    return PrivacyRejected(f"{file_path(name)} {shared}: the change would put what looks like a secret or personal "
                           f"data there ({'; '.join(sorted(found[name]))}). Nothing was written; leave the value out "
                           "of this file, or keep it in a file of its own (a file you create stays private)",
                           code=exc.code, issues=exc.issues)


class MemoryFiles:
    """The commands over the store of ``svc``; ``warm`` keeps a long-lived tool's state between writes."""

    def __init__(self, svc: Services, lock_timeout: float, warm: WarmState | None = None) -> None:
        self.svc = svc
        self.lock_timeout = lock_timeout
        self.warm = warm
        self._heads: dict[str, int] = {}  # lines of frontmatter of each file the running edit writes

    # -- reading (no lock) --

    def view(self, path: object, wanted: object = None) -> Done:
        """The store as the next write will find it: teammates' memories that write's sync adopts are
        shown already, as every read of a project shows them (``mirror.team``)."""
        name = memory_target(path)
        seen = read_view(self.svc.layout, self.svc.limits, lambda: self.svc.ruleset)
        if name is None:
            sizes = {n: len(mt.text_of(seen.files[n]).encode("utf-8")) for n in seen.memories}
            return Done(listing(sizes, wanted))
        self._parsed(name, seen.memories, seen.broken)
        return Done(file_view(file_path(name), mt.text_of(seen.files[name]), wanted))

    @staticmethod
    def _parsed(name: str, memories: Mapping[str, Memory], broken: Mapping[str, object]) -> Memory:
        if name in broken:
            raise InputRejected(f"{file_path(name)} is in the store but does not parse as a memory file, so it "
                                "cannot be shown or edited here; delete it, or ask the user to fix it "
                                "(`memfold doctor` names the problem)", code="memory.broken")
        memory = memories.get(name)
        if memory is None:
            raise _missing([*memories, *broken], name)
        return memory

    # -- writing (one receipted transaction each) --

    def _edit(self, action: str, build: Callable[[PreState], list[Operation]]) -> TxResult:
        self._heads.clear()
        try:
            return direct_transaction(self.svc, f"{COMMAND} {action}", build, lock_timeout=self.lock_timeout,
                                      publish="named", warm=self.warm, extra={"tool": "memory_20250818"})
        except PrivacyRejected as exc:
            raise _privacy_refusal(exc, dict(self._heads)) from None

    def _bounded(self, name: str, memory: Memory, text: str) -> bytes:
        content = mt.compose(memory, text)
        self._heads[name] = content.count(b"\n", 0, len(content) - len(text.encode("utf-8")))
        limit = self.svc.limits.max_file_bytes
        if len(content) > limit:
            room = limit - (len(content) - len(text.encode("utf-8")))
            raise InputRejected(f"{file_path(name)} would be {len(content)} bytes, over memfold's bound of {limit} "
                                f"bytes a memory file: its text may be at most {room} bytes. Nothing was written; "
                                "split the text across several files", code="bounds.file-size")
        return content

    def _early_bound(self, text: str, field: str) -> None:
        """Refuse a text past the bound before encoding or scanning it (a character is at least a byte)."""
        if len(text) > self.svc.limits.max_file_bytes:
            raise InputRejected(f"{field} is {len(text)} characters, over memfold's bound of "
                                f"{self.svc.limits.max_file_bytes} bytes a memory file. Nothing was written; "
                                "split the text across several files", code="bounds.file-size")
        mt.check_text(text, field)

    def create(self, path: object, file_text: str) -> Done:
        name = _file(path, "create")
        self._early_bound(file_text, "file_text")
        now = self.svc.clock()

        def build(pre: PreState) -> list[Operation]:
            names = [*pre.memories, *pre.broken]
            clash = find_name(names, name)
            if clash == name:
                raise InputRejected(f"File {file_path(name)} already exists; change it with str_replace or insert, "
                                    "or delete it first", code="memtool.exists")
            if clash is not None:
                raise InputRejected(f"{file_path(name)} clashes with {file_path(clash)}: memfold's file names are "
                                    "unique regardless of case; edit that file or pick another name",
                                    code="memory.duplicate")
            if len(names) >= self.svc.limits.max_files:
                raise InputRejected(f"the store holds {len(names)} memory files, memfold's bound; delete files "
                                    "you no longer need (or merge several into one) before creating more",
                                    code="bounds.file-count")
            description, mtype = mt.derived(name, file_text)
            memory = Memory(name=name.removesuffix(".md"), description=description, type=mtype,
                            visibility="private", created=today(now), modified=stamp(now))
            return [Operation(name, "create", "private", self._bounded(name, memory, file_text))]

        return Done(f"File created successfully at: {file_path(name)}", self._edit("create", build))

    def _rewrite(self, action: str, path: object, change: Callable[[str, str], tuple[str, int]],
                 reply: Callable[[str, str, int], str]) -> Done:
        """An edit of one file's text: ``change(text, path)`` gives the new text and the (0-based) line it
        changed; ``reply(path, new text, line)`` the answer to the model."""
        name = _file(path, action)
        now = self.svc.clock()
        edited: list[tuple[str, int]] = []

        def build(pre: PreState) -> list[Operation]:
            memory = self._parsed(name, pre.memories, pre.broken)
            old = mt.text_of(pre.harness.files[name])
            new, line = change(old, file_path(name))
            edited.append((new, line))
            if new == old:
                return []
            description, mtype = mt.follow(name, memory, old, new)
            changed = memory.with_changes(description=description, type=mtype, modified=stamp(now))
            return [Operation(name, "rewrite", memory.visibility, self._bounded(name, changed, new))]

        result = self._edit(action, build)
        new, line = edited[-1]
        return Done(reply(file_path(name), new, line), result)

    def str_replace(self, path: object, old_str: str, new_str: str) -> Done:
        self._early_bound(new_str, "new_str")
        mt.check_text(old_str, "old_str")
        return self._rewrite("str_replace", path, lambda text, where: mt.replace_once(text, old_str, new_str, where),
                             snippet)

    def insert(self, path: object, insert_line: object, insert_text: str) -> Done:
        if type(insert_line) is not int:
            raise InputRejected("insert_line must be a whole number: 0 inserts before the first line, the file's "
                                "number of lines after the last", code="memtool.insert-line")
        line: int = insert_line
        self._early_bound(insert_text, "insert_text")
        return self._rewrite("insert", path, lambda text, where: (mt.insert_at(text, line, insert_text, where), line),
                             lambda where, _new, _line: f"The file {where} has been edited.")

    def delete(self, path: object) -> Done:
        name = memory_target(path)
        if name is None:
            raise InputRejected(f"{ROOT} itself cannot be deleted; delete its files one by one",
                                code="memtool.folder")

        def build(pre: PreState) -> list[Operation]:
            if name in pre.broken:
                return [Operation(name, "delete", "private")]
            memory = self._parsed(name, pre.memories, pre.broken)
            return [Operation(name, "delete", memory.visibility)]

        return Done(f"Successfully deleted {file_path(name)}", self._edit("delete", build))

    def rename(self, old_path: object, new_path: object) -> Done:
        old = memory_target(old_path)
        new = memory_target(new_path)
        if old is None or new is None:
            raise InputRejected(f"{ROOT} itself cannot be renamed or replaced; rename one file to another, "
                                f"e.g. {ROOT}/a.md to {ROOT}/b.md", code="memtool.folder")
        now = self.svc.clock()

        def build(pre: PreState) -> list[Operation]:
            memory = self._parsed(old, pre.memories, pre.broken)
            clash = find_name([*pre.memories, *pre.broken], new)
            if clash is not None and clash != old:
                raise InputRejected(f"The destination {file_path(new)} already exists"
                                    + (f" as {file_path(clash)}" if clash != new else "")
                                    + "; delete it first or pick another name", code="memtool.exists")
            if new == old:
                return []
            # The title follows the file where it was the file's (the name memfold derived from the path).
            title = new.removesuffix(".md") if memory.name == old.removesuffix(".md") else memory.name
            moved = memory.with_changes(name=title, modified=stamp(now))
            text = mt.text_of(pre.harness.files[old])
            return [Operation(old, "delete", memory.visibility),
                    Operation(new, "create", memory.visibility, self._bounded(new, moved, text))]

        return Done(f"Successfully renamed {file_path(old)} to {file_path(new)}", self._edit("rename", build))

    def clear(self) -> Done:
        """Every memory file of the store deleted, as one transaction (``memfold undo`` brings them back)."""
        from ..state.ops import clear_ops

        return Done("All memory cleared", self._edit("clear", clear_ops()))
