"""What ``memfold hooks install`` wrote into host config, so that ``uninstall`` removes exactly that."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InputRejected
from ..fsutil import atomic_write, ensure_dir, read_bounded, refuse_symlinks, sha256_bytes
from ..store.jsontext import dump_json, read_json


class Installer:
    """Writes host files and remembers, in ``<home>/hosts/installed.json``, what it created, so that
    uninstall removes exactly that: files it wrote (if unchanged since), directories it made (if empty)."""

    def __init__(self, home: Path, host: str, below: Path | None = None) -> None:
        self.path = home / "hosts" / "installed.json"
        self.host = host
        # A project's host dirs arrive with the repository: there a symlinked `.claude/` or
        # `.pi/extensions/` would carry writes outside it, so no link is followed below ``below``.
        self.below = below
        self.actions: list[dict[str, str]] = []
        try:
            self.record: dict[str, Any] = read_json(self.path, 1 << 20, settings="host install record")
        except FileNotFoundError:
            self.record = {}
        self.record.setdefault("files", {})
        self.record.setdefault("dirs", {})

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        atomic_write(self.path, dump_json(self.record))

    def note(self, path: Path, action: str) -> None:
        self.actions.append({"path": str(path), "action": action})

    def guard(self, *paths: Path | None) -> None:
        """Refuse before anything is read or written if a path below the project passes a symlink."""
        if self.below is not None:
            for path in paths:
                if path is not None:
                    refuse_symlinks(path, self.below)

    def mkdirs(self, directory: Path) -> None:
        missing = [d for d in (directory, *directory.parents) if not os.path.lexists(d)]
        if self.below is not None:
            ensure_dir(directory, self.below, mode=0o777)
        for d in reversed(missing):
            if self.below is None:
                d.mkdir()
            self.record["dirs"][str(d)] = self.host

    def write_owned(self, path: Path, data: bytes) -> None:
        entry = self.record["files"].get(str(path))
        if path.exists():
            current = read_bounded(path, 4 << 20)
            if current == data:
                self.note(path, "unchanged")
                self.record["files"].setdefault(str(path), {"host": self.host, "sha256": sha256_bytes(data),
                                                            "created": False})
                return
            if entry is None or entry.get("sha256") != sha256_bytes(current):
                raise InputRejected(f"{path} exists and was not written by memfold; not overwritten",
                                    code="hooks.file-exists", hint="move it away, then install again")
        self.mkdirs(path.parent)
        atomic_write(path, data, mode=0o644)
        created = entry["created"] if entry else True
        self.record["files"][str(path)] = {"host": self.host, "sha256": sha256_bytes(data), "created": created}
        self.note(path, "written")

    def merge_settings(self, path: Path, command: str, events: Sequence[str]) -> None:
        from .claude import merge_hooks, read_settings, write_settings

        existing = read_settings(path)
        created = existing is None
        data = existing if existing is not None else {}
        changed = merge_hooks(data, command, events, path)
        if not changed:
            self.note(path, "unchanged")
            return
        self.mkdirs(path.parent)
        write_settings(path, data)
        entry = self.record["files"].get(str(path))
        self.record["files"][str(path)] = {"host": self.host, "settings": True,
                                           "created": bool(entry and entry.get("created")) or created}
        self.note(path, "merged " + ", ".join(changed))

    def remove_settings(self, path: Path) -> None:
        from .claude import read_settings, remove_hooks, write_settings

        data = read_settings(path)
        entry = self.record["files"].pop(str(path), None)
        if data is None or not remove_hooks(data):
            self.note(path, "nothing to remove")
            return
        if not data and entry and entry.get("created"):
            path.unlink()
            self.note(path, "deleted (memfold created it and it is now empty)")
        else:
            write_settings(path, data)
            self.note(path, "memfold hooks removed")

    def merge_env(self, path: Path, env: dict[str, str]) -> None:
        """Set variables in a host settings file's ``env`` object (Claude Code's settings.local.json)."""
        from .claude import read_settings, write_settings

        existing = read_settings(path)
        data = existing if existing is not None else {}
        block = data.setdefault("env", {})
        if not isinstance(block, dict):
            raise InputRejected(f"{path}: 'env' is not an object", code="hooks.settings-shape")
        entry = self.record["files"].get(str(path)) or {"host": self.host, "created": existing is None, "env": {}}
        if all(block.get(k) == v for k, v in env.items()):
            self.note(path, "unchanged")
        else:
            block.update(env)
            self.mkdirs(path.parent)
            write_settings(path, data)
            self.note(path, "set " + ", ".join(sorted(env)))
        entry["env"] = {**entry.get("env", {}), **env}
        self.record["files"][str(path)] = entry

    def remove_env(self, path: Path) -> None:
        """Drop the variables memfold set (while they still hold its value); the file if it made it empty."""
        from .claude import read_settings, write_settings

        entry = self.record["files"].pop(str(path), None)
        data = read_settings(path)
        if entry is None or data is None or not isinstance(data.get("env"), dict):
            return
        block = data["env"]
        ours = [k for k, v in entry.get("env", {}).items() if block.get(k) == v]
        if not ours:
            return
        for key in ours:
            del block[key]
        if not block:
            del data["env"]
        if not data and entry.get("created"):
            path.unlink()
            self.note(path, "deleted (memfold created it and it is now empty)")
        else:
            write_settings(path, data)
            self.note(path, "removed " + ", ".join(sorted(ours)))

    def remove_owned(self, path: Path) -> None:
        entry = self.record["files"].pop(str(path), None)
        if not path.exists():
            return
        if entry is None or entry.get("sha256") != sha256_bytes(read_bounded(path, 4 << 20)):
            self.note(path, "kept (changed since memfold wrote it, or not memfold's)")
            return
        path.unlink()
        self.note(path, "deleted")

    def remove_dirs(self) -> None:
        mine = [Path(d) for d, host in self.record["dirs"].items() if host == self.host]
        for d in sorted(mine, key=lambda p: len(p.parts), reverse=True):
            try:
                d.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                continue  # not empty: something else lives there now
            del self.record["dirs"][str(d)]
            self.note(d, "directory removed")
