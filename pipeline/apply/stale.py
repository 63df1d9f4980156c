"""The stale check: both roots re-hashed after the worker; any change since the snapshot refuses."""

from __future__ import annotations

from ..errors import StaleState
from ..paths import Layout
from ..receipts.receipt import diff_maps
from ..state.landed import current_hashes
from ..state.model import PreState
from ..store.state import Limits


def refuse_if_stale(layout: Layout, limits: Limits, pre: PreState) -> None:
    changed = diff_maps(pre.hash_maps(), current_hashes(layout, limits))
    if changed:
        raise StaleState(
            "the store changed while the worker ran: " + ", ".join(changed[:5]),
            code="state.stale",
            hint="nothing was written; run `memfold consolidate` again",
            data={"changed": changed},
        )
