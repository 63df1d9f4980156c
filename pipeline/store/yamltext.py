"""The YAML memfold reads (the config, memory frontmatter, imported files), bounded like its JSON.

The safe loader (libyaml's where it is built in) with ``jsontext``'s nesting bound: a document nested
deeper than the bound, or whose aliases unfold to more than ``MAX_ITEMS`` items, is ``TooDeep`` (a
ValueError), never a RecursionError from the pure-Python loader or from whoever walks the value later.
Syntax errors stay ``yaml.YAMLError``, for each reader to word as it does.
"""

from __future__ import annotations

from .jsontext import MAX_DEPTH, TooDeep, nests_deeper

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Far more than any config or frontmatter holds; an alias bomb is refused before anyone expands it.
MAX_ITEMS = 100_000


def loader() -> Any:
    """The C safe loader where libyaml is built in (about 10x faster), else the Python one."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str, max_depth: int = MAX_DEPTH, *, fast: bool = True) -> Any:
    """``yaml.safe_load(text)`` within the bounds; ``fast=False`` takes the Python loader (its messages)."""
    import yaml

    try:
        value = yaml.load(text, Loader=loader() if fast else yaml.SafeLoader)
    except RecursionError:
        raise TooDeep(f"nested deeper than {max_depth} levels") from None
    if nests_deeper(value, max_depth, MAX_ITEMS):
        raise TooDeep(f"nested deeper than {max_depth} levels, or its aliases repeat more than {MAX_ITEMS} items")
    return value
