"""MkDocs hook: the reference pages are generated from memfold's code at build time, never written by hand."""

from __future__ import annotations

from typing import Any

from mkdocs.structure.files import File, Files

from pipeline.commands.reference import GENERATED


def on_files(files: Files, config: Any) -> Files:
    for path, make in GENERATED.items():
        files.append(File.generated(config, path, content=make()))
    return files
