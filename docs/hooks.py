"""MkDocs hook: the reference pages are generated from memfold's code at build time, never written by hand."""

from __future__ import annotations

from typing import Any

from mkdocs.structure.files import File, Files

from pipeline.commands.reference import GENERATED
from pipeline.commands.registry import root_command


def on_files(files: Files, config: Any) -> Files:
    root = root_command()
    for path, make in GENERATED.items():
        files.append(File.generated(config, path, content=make(root)))
    return files
