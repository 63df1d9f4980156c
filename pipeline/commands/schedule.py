"""``memfold schedule``: a crontab line or systemd user units that consolidate every project when due."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from ..errors import UsageError
from ._app import JsonOpt, app, emit, home_dir, want_json


def user_unit_dir(user_home: Path, env: dict[str, str]) -> Path:
    config_home = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else user_home / ".config"
    return config_home / "systemd" / "user"


@app.command()
def schedule(cron: bool = typer.Option(False, "--cron", help="print a crontab line"),
             systemd: bool = typer.Option(False, "--systemd", help="print (or --install) systemd user units"),
             install: bool = typer.Option(False, "--install", help="with --systemd: write the units"),
             json_out: bool = JsonOpt) -> int:
    """Run `consolidate --all-projects --if-due --skip-if-locked` hourly from cron or a systemd timer."""
    from ..hosts.cron import UNIT_NAME, crontab_line, install_units, systemd_units
    from .hooks import memfold_argv

    if cron == systemd or (install and not systemd):
        raise UsageError("give exactly one of --cron or --systemd (--install only with --systemd)",
                         code="usage.schedule")
    home = home_dir().absolute()
    memfold = memfold_argv()
    if cron:
        from .context import user_files

        line = crontab_line(memfold, home, logs=user_files()[2])
        emit({"ok": True, "crontab": line}, line, as_json=want_json(json_out))
        return 0
    units = systemd_units(memfold, home)
    if not install:
        text = "\n".join(f"# {name}\n{data.decode()}" for name, data in sorted(units.items()))
        emit({"ok": True, "units": {n: d.decode() for n, d in units.items()}}, text, as_json=want_json(json_out))
        return 0
    written = install_units(user_unit_dir(Path.home(), dict(os.environ)), units)
    enable = f"systemctl --user daemon-reload && systemctl --user enable --now {UNIT_NAME}.timer"
    emit({"ok": True, "written": [str(p) for p in written], "next": enable},
         "\n".join(f"written: {p}" for p in written) + f"\nnow run: {enable}", as_json=want_json(json_out))
    return 0
