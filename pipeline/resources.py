"""Find the data shipped with memfold (schemas, procedures, docs) in a wheel or a source checkout."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_HERE = Path(__file__).resolve().parent


def data_dir(kind: str) -> Path:
    """``kind`` is ``schemas``, ``procedures`` or ``docs``: packaged copy first, then the source tree."""
    for candidate in (_HERE / "_data" / kind, _HERE.parent / kind):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"memfold data directory {kind!r} is missing from this installation")


@cache
def load_schema(name: str) -> dict[str, Any]:
    with open(data_dir("schemas") / name, encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data
