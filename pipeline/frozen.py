"""The base of memfold's small immutable values.

dataclasses would do this, but importing it (it pulls in inspect, ast and dis) and generating each
class's code cost ~40 ms of every command; this module imports nothing.

A subclass lists its fields in ``__slots__`` in constructor order and sets them in ``__init__`` with
``self._set(name=value, ...)``. It gets ``__repr__``, ``with_changes``, pickling and copying (all by
calling the constructor with the fields in order), and refuses any later assignment.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Self


class Frozen:
    __slots__ = ()
    _hidden: tuple[str, ...] = ()  # fields left out of repr (large, or holding compiled objects)

    def _set(self, **values: Any) -> None:
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable; cannot set {name}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable; cannot delete {name}")

    def _names(self) -> tuple[str, ...]:
        names: tuple[str, ...] = type(self).__slots__
        return names

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._names())

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (type(self), self._values())

    def with_changes(self, **changes: Any) -> Self:
        """A copy with some fields replaced."""
        unknown = set(changes) - set(self._names())
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {min(unknown)!r}")
        return type(self)(*(changes.get(name, getattr(self, name)) for name in self._names()))

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._names() if name not in self._hidden)
        return f"{type(self).__name__}({shown})"


class FrozenValue(Frozen):
    """A Frozen whose instances are equal when their fields are (and hash alike when those are hashable)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())


class Slotted:
    """A mutable value with ``__slots__``: its repr names every field, as a dataclass's would."""

    __slots__ = ()

    def __repr__(self) -> str:
        names: tuple[str, ...] = type(self).__slots__
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{type(self).__name__}({shown})"
