"""``memfold init``: the project home, both roots and their indexes, idempotently."""

from __future__ import annotations

from ..fsutil import atomic_write
from ..paths import ensure_layout
from ..state import compute_post, read_pre
from ..store.memory import INDEX_NAME
from .commit import Services, run_recovery
from .lock import project_lock
from .runs import new_run_id


def init_project(svc: Services, lock_timeout: float) -> bool:
    """True when anything was created. Existing indexes are left to the next transaction."""
    layout = svc.layout
    created = ensure_layout(layout)
    with project_lock(layout.lock_path, layout.lock_info, run_id=new_run_id(svc.clock()), operation="init",
                      timeout=lock_timeout, now=svc.now()):
        run_recovery(svc)
        post = compute_post(read_pre(layout, svc.limits), [])
        for root, files in ((layout.harness, post.harness), (layout.mirror, post.public)):
            if root is not None and not (root / INDEX_NAME).exists():
                atomic_write(root / INDEX_NAME, files[INDEX_NAME], 0o644 if root == layout.mirror else 0o600)
                created = True
    return created
