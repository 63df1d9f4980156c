"""Regular expressions compiled on first use: a plan of notes without paths, links or dates needs few."""

from __future__ import annotations

import re


class Lazy:
    """``pattern()`` is the compiled expression, compiled once, the first time it is asked for."""

    __slots__ = ("source", "flags", "_compiled")

    def __init__(self, source: str, flags: int = 0) -> None:
        self.source = source
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    def __call__(self) -> re.Pattern[str]:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self.source, self.flags)
        return compiled
