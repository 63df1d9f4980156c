"""``memfold init`` and ``memfold recover``: the project home, both roots and indexes; recovery on demand."""

from __future__ import annotations

from ..fsutil import atomic_write
from ..state.post import compute_post
from ..state.read import read_pre
from ..store.memory import INDEX_NAME
from .commit import Services
from .skeleton import transaction


def init_project(svc: Services, lock_timeout: float) -> bool:
    """True when anything was created. Existing indexes are left to the next transaction; a mirror that
    holds no memory file gets no index (it would stand in the way of a teammate's first commit of one)."""
    layout = svc.layout
    with transaction(svc, "init", lock_timeout=lock_timeout) as tx:
        created = tx.created
        post = compute_post(read_pre(layout, svc.limits), [])
        for root, files in ((layout.harness, post.harness), (layout.mirror, post.public)):
            if root is not None and INDEX_NAME in files and not (root / INDEX_NAME).exists():
                atomic_write(root / INDEX_NAME, files[INDEX_NAME], 0o644 if root == layout.mirror else 0o600)
                created = True
    return created


def recover_project(svc: Services, lock_timeout: float) -> str | None:
    """``memfold recover``: what recovery did under the lock (None: there was nothing to recover)."""
    with transaction(svc, "recover", lock_timeout=lock_timeout) as tx:
        return tx.recovered
