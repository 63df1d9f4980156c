"""The whole typer app: every command module registered, as the full command line, ``help`` and the
generated command reference all see it."""

from __future__ import annotations

import typer
from typer import _click as click


def full_app() -> typer.Typer:
    """The typer app with every command registered (importing a command module registers its commands)."""
    from . import attest as _attest  # noqa: F401
    from . import audit as _audit  # noqa: F401
    from . import bench as _bench  # noqa: F401
    from . import demo as _demo  # noqa: F401
    from . import doctor as _doctor  # noqa: F401
    from . import everyday as _everyday  # noqa: F401
    from . import guide
    from . import hooks as _hooks  # noqa: F401
    from . import mirror as _mirror  # noqa: F401
    from . import report as _report  # noqa: F401
    from . import review as _review  # noqa: F401
    from . import schedule as _schedule  # noqa: F401
    from . import store as _store  # noqa: F401
    from ._app import app

    guide.point_at_pages()  # once every command is registered: each --help names its page
    return app


def root_command() -> click.Command:
    """The click command tree of the whole app, as `memfold --help` shows it."""
    from .typed import click_command

    return click_command(full_app())
