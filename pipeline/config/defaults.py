"""Every config section's defaults: what a missing file or field means (no pydantic needed to read them)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Every section's defaults; the models in section_models take theirs from here.
DEFAULTS: dict[str, dict[str, Any]] = {
    "limits": {"max_file_bytes": 64 * 1024, "max_files": 4096, "index_lines": 200, "index_bytes": 25_600,
               "worker_output_bytes": 16 << 20, "worker_output_lines": 65_536, "worker_output_line_bytes": 1 << 20,
               "plan_bytes": 8 << 20, "plan_depth": 128, "mirror_bytes": 8 << 20},
    "lock": {"timeout": 5.0},
    "runs": {"keep": 50},
    "workers": {},
    "privacy": {"rules": [], "allowlist": []},
    "inject": {"guidance": True, "max_bytes": 16_000, "max_files": 8, "mask_credentials": True},
    # lock_wait: how long a consolidation waits for a direct edit to release the lock; worker: the one
    # used when none is named (builtin, or a name under `workers`).
    "consolidate": {"due_hours": 24.0, "due_writes": 20, "lock_wait": 5.0, "worker": "builtin"},
    "mcp": {"allow_publish": False, "max_request_bytes": 16 << 20},
    # A memory not used (injected in full, found by a search, read through a tool) in dormant_days is
    # reported by `status` and the consolidation report; the built-in planner deletes it only with
    # forget_dormant.
    "usage": {"dormant_days": 90, "forget_dormant": False},
}
