"""A run's own files (snapshot, manifest, task, plan, validation), written at once and fsynced meanwhile."""

from __future__ import annotations

import os
import threading
from _queue import SimpleQueue
from pathlib import Path

from ..fsutil import create_unsynced, ops, safe_join, sha256_bytes

# What a run-dir writer takes: the run dir, the file's name, its bytes; returns their sha256.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    Writer = Callable[[Path, str, bytes], str]


class RunArtifacts:
    """Writes each run-dir file once, as ``fsutil.write_artifact`` does, but leaves its fsync to a
    thread: the stages after it (the worker among them) need its bytes, not its durability.

    ``settle`` waits until every file written is durable (raising the first fsync error) and must
    be called before the commit point, which is where these files have to be durable: the receipt
    binds ``plan.json`` and the manifest. Each file used to wait for its own fsync on the way to the
    worker and back (five waits).
    """

    def __init__(self) -> None:
        self._queue: SimpleQueue[int | Callable[[], object] | None] = SimpleQueue()
        self._errors: list[OSError] = []
        self._thread: threading.Thread | None = None

    def write(self, run_dir: Path, name: str, data: bytes) -> str:
        fd = create_unsynced(safe_join(run_dir, name), data)
        self._put(fd)
        return sha256_bytes(data)

    def later(self, task: Callable[[], object]) -> None:
        """Run ``task`` on the same thread, after the fsyncs queued before it; ``settle`` waits for it.

        For clean-up of the run dir nothing reads any more (the worker's scratch dir): each
        directory it deletes frees a block, which on a disk mounted with online discard is a wait
        of milliseconds. Its own errors are its own to handle; they are not raised by ``settle``.
        """
        self._put(task)

    def _put(self, item: int | Callable[[], object]) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._sync, name="memfold-run-files", daemon=True)
            self._thread.start()
        self._queue.put(item)

    def _sync(self) -> None:
        while (item := self._queue.get()) is not None:
            if not isinstance(item, int):
                try:
                    item()
                except Exception:  # see ``later``: a clean-up's failure stays its own
                    pass
                continue
            try:
                ops.fsync(item)
            except OSError as exc:
                self._errors.append(exc)
            finally:
                os.close(item)

    def settle(self) -> None:
        """Return once every file written so far is durable and every ``later`` task has run; raise
        the first fsync error."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join()
        if self._errors:
            raise self._errors[0]
