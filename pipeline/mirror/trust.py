"""Which projects' mirrors the user trusts for injection (a cloned `.memory/` is untrusted input)."""

from __future__ import annotations

import os

from ..fsutil import atomic_write, dump_json, read_bounded
from ..store import jsontext as json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

TRUST_FILE = "trusted-projects.json"


def trusted_roots(home: Path | str) -> set[str]:
    try:
        data = json.loads_bounded(read_bounded(os.path.join(home, TRUST_FILE), 4 << 20, settings="trust list"))
    except (OSError, ValueError):
        return set()
    roots = data.get("roots") if isinstance(data, dict) else None
    return {r for r in roots if isinstance(r, str)} if isinstance(roots, list) else set()


def is_trusted(home: Path | str, root: Path | str) -> bool:
    return str(root) in trusted_roots(home)


def set_trust(home: Path, root: Path, trusted: bool) -> bool:
    """Record or drop ``root``; returns whether anything changed."""
    roots = trusted_roots(home)
    before = set(roots)
    (roots.add if trusted else roots.discard)(str(root))
    if roots == before:
        return False
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    atomic_write(home / TRUST_FILE, dump_json({"kind": "memfold-trust", "roots": sorted(roots)}))
    return True
