"""Hash maps: each root's files by name to their sha256, the shape receipts record and states compare."""

from __future__ import annotations

HashMaps = dict[str, dict[str, str]]
