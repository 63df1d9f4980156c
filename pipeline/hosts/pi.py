"""Pi: the TypeScript extension that injects memfold context at session start and adds /consolidate."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path

TEMPLATE = "memfold.ts"
EXTENSION_NAME = "memfold.ts"


def agent_dir(home: Path, env: Mapping[str, str]) -> Path:
    """Pi's user agent dir: ``$PI_CODING_AGENT_DIR`` or ``<home>/.pi/agent``."""
    configured = env.get("PI_CODING_AGENT_DIR")
    return Path(configured) if configured else home / ".pi" / "agent"


def extension_path(project_root: Path, home: Path, env: Mapping[str, str], *, user: bool) -> Path:
    base = agent_dir(home, env) if user else project_root / ".pi"
    return base / "extensions" / EXTENSION_NAME


def render_extension(memfold: Sequence[str]) -> bytes:
    """The template with memfold's argv filled in as a JSON array (a string literal can never break out)."""
    text = resources.files(__package__).joinpath("templates", TEMPLATE).read_text(encoding="utf-8")
    return text.replace("__MEMFOLD_ARGV__", json.dumps(list(memfold))).encode("utf-8")


_TYPE_IMPORT = re.compile(r"^import type [^\n]*;\n", re.M)
# Only the annotations the template uses; anything wider would also eat object keys and ternaries.
_ANNOTATION = re.compile(r"(?<=\w): (?:ExtensionAPI|string\[\]|string|number|boolean)(?=[,)=\s])")


def strip_types(source: str) -> str:
    """Type syntax removed from the small subset of TypeScript the template uses.

    Only for a syntax check of our own template with ``node --check`` where Node cannot strip
    types itself; it is not a general TypeScript compiler.
    """
    return _ANNOTATION.sub("", _TYPE_IMPORT.sub("", source))


def node_check(source: bytes, workdir: Path, node: str | None = None) -> tuple[bool, str]:
    """Syntax-check the extension with Node: native type stripping when it has it, else ``strip_types``."""
    exe = node or shutil.which("node")
    if exe is None:
        return False, "node is not installed"
    version = subprocess.run((exe, "--version"), capture_output=True, text=True, timeout=30, check=False)
    major = int(re.sub(r"[^\d.]", "", version.stdout).split(".")[0] or 0)
    if major >= 22:
        target = workdir / "memfold-check.ts"
        target.write_bytes(source)
        argv: tuple[str, ...] = (exe, "--experimental-strip-types", "--check", str(target))
    else:
        target = workdir / "memfold-check.mjs"
        target.write_text(strip_types(source.decode("utf-8")), encoding="utf-8")
        argv = (exe, "--check", str(target))
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False,
                          env={"PATH": os.environ.get("PATH", "")})
    return proc.returncode == 0, proc.stderr.strip()
