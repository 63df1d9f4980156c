"""Memories as the state cache gives them (fields known, body read on first use), and the report of a
file in a store root that does not parse."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from itertools import repeat
from pathlib import Path

from ..errors import InputRejected
from ..frozen import FrozenValue
from .memory import Memory

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class StoredMemory(Memory):
    """A memory whose fields the state cache gave; its body is read from the file when first asked for
    (``files[file][offset:]``). Built by ``stored_memories`` only."""

    __slots__ = ("_files", "_file", "_offset")
    _files: Mapping[str, bytes] | None
    _file: str
    _offset: int

    @property
    def body(self) -> str:  # type: ignore[override]  # the slot, filled on first read
        files = self._files
        if files is not None:
            _BODY_SLOT.__set__(self, files[self._file][self._offset:].decode("utf-8"))
            _FILES_SLOT.__set__(self, None)
        value: str = _BODY_SLOT.__get__(self, Memory)
        return value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Memory) and self._values() == other._values()

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (Memory, self._values())

    def with_changes(self, **changes: Any) -> Memory:  # type: ignore[override]  # a plain Memory
        return Memory(*(changes.get(name, getattr(self, name)) for name in Memory.__slots__))

    def _names(self) -> tuple[str, ...]:
        return Memory.__slots__


def stored_memories(files: Mapping[str, bytes], names: list[str], columns: list[tuple[Any, ...]]) -> list[Memory]:
    """One ``StoredMemory`` per name, from columns of name, description, type, visibility, created,
    modified, expires and body offset. Built column by column in C (a slot's setter mapped over all
    of them): a write builds one per memory of the store, and an ``__init__`` each cost twice as much."""
    count = len(names)
    built: list[Memory] = list(map(object.__new__, repeat(StoredMemory, count)))
    values = (*columns[:7], map(dict, repeat((), count)), repeat((), count), repeat(files, count), names,
              columns[7])
    for slot, column in zip(_STORED_SLOTS, values, strict=True):
        deque(map(slot.__set__, built, column), maxlen=0)
    return built


_BODY_SLOT: Any = Memory.__dict__["body"]
_FILES_SLOT: Any = StoredMemory.__dict__["_files"]
_STORED_SLOTS: tuple[Any, ...] = (*(Memory.__dict__[name] for name in ("name", "description", "type", "visibility",
                                                                       "created", "modified", "expires", "extra",
                                                                       "evidence")),
                                  *(StoredMemory.__dict__[name] for name in ("_files", "_file", "_offset")))


class Broken(FrozenValue):
    """A file in a store root that does not parse as a memory: where it is, what is wrong, how to fix it."""

    __slots__ = ("file", "path", "code", "problem", "fix")
    file: str
    path: str
    code: str
    problem: str
    fix: str

    def __init__(self, file: str, path: str, code: str, problem: str, fix: str) -> None:
        self._set(file=file, path=path, code=code, problem=problem, fix=fix)

    def as_dict(self) -> dict[str, str]:
        return {"file": self.file, "path": self.path, "code": self.code, "problem": self.problem, "fix": self.fix}


def broken_file(root: Path, name: str, exc: InputRejected) -> Broken:
    """What a refused file gets as a report: the parser's message without the file name it repeats."""
    problem = exc.message.removeprefix(f"{name}: ")
    fix = (f"{exc.hint}; " if exc.hint else "") + (
        f"`memfold edit {name}` opens it, `memfold forget {name}` removes it")
    return Broken(name, str(root / name), exc.code, problem, fix)
