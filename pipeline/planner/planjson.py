"""The compact plan text: keys sorted, no padding, artifact items packed into lines of bounded length.

The built-in planner prints a plan this way so that a 20,000-memory plan stays within the default
output bounds (lines, bytes a line, bytes); ``plan.json`` holds the same text with one item a line,
so it stays readable and diffs item by item.
"""

from __future__ import annotations

import json
from _json import encode_basestring, make_encoder
from collections import Counter

# The built-in planner imports this module: typing stays out of its imports.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

# What one stdout line of the built-in planner may reach before the next item starts a new line:
# far below the per-line bound, far above one item, so a plan of any size takes few lines.
PRINT_LINE_BUDGET = 256 * 1024


# One C encoder for every item, built once: json.dumps builds a new one per call, and even a kept
# JSONEncoder's encode() does in iterencode(), which cost as much as the encoding of an item itself.
# The arguments are those JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True)
# passes, so the text is the same; the encoder is not re-entered (the C code holds the GIL).
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True)
_MARKERS: dict[int, object] = {}  # the containers being encoded (circular references are refused)
_ITEM = make_encoder(_MARKERS, _ENCODER.default, encode_basestring, None, ":", ",", True, False, True)


def _compact(value: object) -> str:
    try:
        return "".join(_ITEM(value, 0))
    except BaseException:
        _MARKERS.clear()  # a failed call leaves its open containers marked: the next call starts clean
        raise


def item_json(value: object) -> str:
    """One item's text exactly as ``plan_json`` prints it (keys sorted, no padding)."""
    return _compact(value)


class TooLong(Exception):
    """The text passed the ``limit`` given to ``plan_json``; nothing more of it was built."""


def plan_json(plan: dict[str, object], line_budget: int = 0, limit: int | None = None) -> bytes:
    """The plan as compact JSON; a new line starts before an array item once a line passes ``line_budget``.

    With ``limit``, raises TooLong as soon as the text passes ``limit`` characters (so its UTF-8
    bytes do too), instead of building the rest of a text the caller will not use.
    """
    if line_budget <= 0 and limit is None:
        return _item_lines(plan)
    lines: list[str] = []
    current: list[str] = ["{"]
    size = 1
    total = [1]

    def put(text: str) -> None:
        nonlocal size
        current.append(text)
        size += len(text)
        total[0] += len(text)
        if limit is not None and total[0] > limit:
            raise TooLong

    def wrap() -> None:
        nonlocal size
        lines.append("".join(current))
        current.clear()
        size = 0

    for position, key in enumerate(sorted(plan)):
        if position:
            put(",")
        if size > line_budget:
            wrap()
        value = plan[key]
        put(_compact(key) + ":")
        if not isinstance(value, list) or not value:
            put(_compact(value))
            continue
        put("[")
        for index, item in enumerate(value):
            if index:
                put(",")
            if size > line_budget:
                wrap()
            put(_compact(item))
        put("]")
    put("}")
    wrap()
    return ("\n".join(lines) + "\n").encode("utf-8")


def _item_lines(plan: dict[str, object]) -> bytes:
    """``plan_json(plan)``, one item a line (``plan.json``), joined per array instead of item by item:
    "{" alone, then each key with its value, or with "[" and then one item a line, the last closing
    the array; a comma ends every line of a key but its last, which the closing "}" ends."""
    keys = sorted(plan)
    if not keys:
        return b"{}\n"
    lines = ["{"]
    last = len(keys) - 1
    for position, key in enumerate(keys):
        end = "}" if position == last else ","
        value = plan[key]
        head = _compact(key) + ":"
        if not isinstance(value, list) or not value:
            lines.append(head + _compact(value) + end)
            continue
        lines.append(head + "[")
        lines.append(",\n".join([_compact(item) for item in value]) + "]" + end)
    return ("\n".join(lines) + "\n").encode("utf-8")


# The compact shape: artifact items equal to a default are left out and named by ``defaults``.
# A store far past the default store bound (20,000 memories) only fits the default plan bound
# this way; smaller plans keep the full seed shape, which seed validators read unchanged.
DEFAULTABLE = ("staleness", "grounding", "report")
SELF_CLUSTERS = "self"


def compacted(plan: dict[str, Any]) -> dict[str, Any]:
    """The plan with each artifact's most common item (apart from its name) moved to ``defaults``."""
    out = dict(plan)
    defaults: dict[str, Any] = {}
    for artifact in DEFAULTABLE:
        items = plan.get(artifact) or []
        # Each item is encoded once: the count and the filter read the same texts.
        texts = [_compact({k: v for k, v in item.items() if k != "name"}) for item in items]
        if not texts:
            continue
        common, _ = Counter(texts).most_common(1)[0]
        defaults[artifact] = json.loads(common)
        out[artifact] = [item for item, text in zip(items, texts, strict=True) if text != common]
    out["clusters"] = [c for c in plan.get("clusters") or []
                       if not (len(c["files"]) == 1 and c["name"] == _self_name(c["files"][0]))]
    defaults["clusters"] = SELF_CLUSTERS
    out["defaults"] = defaults
    return out


def _self_name(name: str) -> str:
    return name.removesuffix(".md")


def expanded(plan: dict[str, Any], selected: Sequence[str]) -> dict[str, Any]:
    """The full shape of a compact plan: every selected name not listed gets the default item.

    A plan without ``defaults``, or with a malformed one (left for the schema to report), is
    returned as it is.
    """
    defaults = plan.get("defaults")
    if not isinstance(defaults, dict) or not _well_formed(plan, defaults):
        return plan
    out = {k: v for k, v in plan.items() if k != "defaults"}
    for artifact in DEFAULTABLE:
        if artifact not in defaults:
            continue
        listed = {item.get("name") for item in out[artifact] if isinstance(item, dict)}
        names = [n for n in selected if n not in listed]
        out[artifact] = [*out[artifact], *({"name": n, **item}
                                           for n, item in zip(names, _copies(defaults[artifact], len(names)),
                                                              strict=True))]
    if defaults.get("clusters") == SELF_CLUSTERS:
        listed = {n for c in out["clusters"] if isinstance(c, dict) and isinstance(c.get("files"), list)
                  for n in c["files"]}
        out["clusters"] = [*out["clusters"], *({"name": _self_name(n)[:200], "files": [n]}
                                               for n in selected if n not in listed)]
    return out


def _copies(item: dict[str, Any], count: int) -> list[dict[str, Any]]:
    """``count`` deep copies of a JSON item, none sharing a container with another: one parse of the
    item's text repeated (at 20,000 memories a parse per copy cost 135 ms, one parse of them all 75 ms)."""
    copies: list[dict[str, Any]] = json.loads("[" + ",".join([_compact(item)] * count) + "]")
    return copies


def full_shape(plan: dict[str, Any]) -> dict[str, Any]:
    """``expanded`` over the plan's own ``selected``: what a reader of a stored plan (the summary, the
    report) sees, so an item left out for equalling its artifact's default still has its reason."""
    if "defaults" not in plan:
        return plan
    selected = plan.get("selected")
    names = [n for n in selected if isinstance(n, str)] if isinstance(selected, list) else []
    return expanded(plan, names)


def _well_formed(plan: dict[str, Any], defaults: dict[str, Any]) -> bool:
    for key, value in defaults.items():
        if key == "clusters":
            if value != SELF_CLUSTERS or not isinstance(plan.get("clusters"), list):
                return False
        elif key not in DEFAULTABLE or not isinstance(value, dict) or "name" in value \
                or not isinstance(plan.get(key), list):
            return False
    return True
