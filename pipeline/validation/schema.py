"""The JSON Schema stage: one compiled validator, a fast pre-check, and messages that never echo values."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from ..errors import Issue
from ..frozen import Slotted
from ..resources import load_schema
from .context import json_path, valid_name

SCHEMA_FILE = "plan.schema.json"
MAX_SCHEMA_ISSUES = 50
VERDICT_PATH = ("staleness", "verdict")
_ANNOTATIONS = frozenset({"$schema", "$id", "title", "description", "$defs", "$comment", "default", "examples"})
_SAFE_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,39}$")

Check = Callable[[Any], bool]


class _Unsupported(Exception):
    """The schema uses a keyword the pre-check cannot decide; jsonschema then runs alone."""


@lru_cache(maxsize=1)
def plan_validator() -> Any:
    from jsonschema import Draft202012Validator

    schema = load_schema(SCHEMA_FILE)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


@lru_cache(maxsize=4)
def fast_check(schema_file: str = SCHEMA_FILE) -> Check | None:
    """A pre-check compiled from a shipped schema file. True means jsonschema would accept the value.

    jsonschema costs about a second on a 2,000-memory plan, most of it per-node bookkeeping
    (and as much on a receipt's hash maps of a large store). The pre-check only has to be sound
    in one direction: when it says True the value is valid; when it says False (or the schema
    uses a keyword it does not know) jsonschema decides and writes the messages. So it may
    refuse what it cannot judge, but never accept it.
    """
    schema = load_schema(schema_file)
    try:
        return _Compiler(schema).compile(schema, exact=False)
    except _Unsupported:
        return None


class _Compiler:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.refs: dict[tuple[str, bool], Check] = {}

    def compile(self, schema: Any, *, exact: bool) -> Check:
        """``exact`` asks for a predicate that is right both ways (needed under ``if``)."""
        if schema is True:
            return _always
        if not isinstance(schema, dict):
            raise _Unsupported(repr(schema))
        keys = {k for k in schema if k not in _ANNOTATIONS and k not in ("then", "else")}
        # Fused closures for the common shapes: a call per node, not one per keyword, is what
        # makes the pre-check an order of magnitude cheaper than jsonschema.
        if schema.get("type") == "string" and keys <= {"type", "pattern", "minLength", "maxLength"}:
            return _string_check(schema)
        if schema.get("type") == "array" and keys <= {"type", "items", "minItems", "maxItems"}:
            return self._array(schema, exact)
        if schema.get("type") == "object" and keys <= {"type", "properties", "required", "additionalProperties", "if"}:
            whole = self._object(schema, exact)
            if "if" in keys:
                return _conjunction([whole, self._keyword("if", schema["if"], schema, exact)])
            return whole
        checks = [self._keyword(key, schema[key], schema, exact) for key in schema if key in keys]
        return _conjunction(checks)

    def _object(self, schema: dict[str, Any], exact: bool) -> Check:
        props = {name: self.compile(sub, exact=exact) for name, sub in schema.get("properties", {}).items()}
        additional = schema.get("additionalProperties", True)
        extra = None if additional is False else self.compile(additional, exact=exact)
        required = frozenset(schema.get("required", ()))

        def check(x: Any) -> bool:
            if not isinstance(x, dict) or not x.keys() >= required:
                return False
            for name, value in x.items():
                sub = props.get(name, extra)
                if sub is None or not sub(value):
                    return False
            return True
        return check

    def _keyword(self, key: str, value: Any, schema: dict[str, Any], exact: bool) -> Check:
        if key == "$ref":
            return self._ref(value, exact)
        if key == "type":
            return _type_check(value, exact)
        if key in ("const", "enum"):
            return _enum_check([value] if key == "const" else value, exact)
        if key == "pattern":
            search = re.compile(value).search
            return lambda x: not isinstance(x, str) or search(x) is not None
        if key in ("minLength", "maxLength", "minItems", "maxItems"):
            return _length_check(key, value)
        if key == "required":
            names = tuple(value)
            return lambda x: not isinstance(x, dict) or all(n in x for n in names)
        if key == "properties":
            return self._properties(value, schema.get("additionalProperties", True), exact)
        if key == "additionalProperties":
            if "properties" in schema:
                return _always  # judged together with properties
            extra = self.compile(value, exact=exact)
            return lambda x: not isinstance(x, dict) or all(extra(v) for v in x.values())
        if key == "items":
            item = self.compile(value, exact=exact)
            return lambda x: not isinstance(x, list) or all(item(v) for v in x)
        if key == "propertyNames":
            name = self.compile(value, exact=exact)
            return lambda x: not isinstance(x, dict) or all(map(name, x))
        if key == "anyOf":
            branches = [self.compile(sub, exact=exact) for sub in value]
            return lambda x: any(b(x) for b in branches)
        if key == "uniqueItems":
            if value is not True:
                return _always
            # Sound in one direction only: distinct strings are unique to jsonschema too; any other
            # item kind is left to jsonschema (its equality treats 1 and 1.0 alike, True and 1 apart).
            return lambda x: not isinstance(x, list) or (all(type(v) is str for v in x) and len(set(x)) == len(x))
        if key == "if":
            condition = self.compile(value, exact=True)
            then = self.compile(schema.get("then", True), exact=exact)
            otherwise = self.compile(schema.get("else", True), exact=exact)
            return lambda x: then(x) if condition(x) else otherwise(x)
        raise _Unsupported(key)

    def _array(self, schema: dict[str, Any], exact: bool) -> Check:
        item = self.compile(schema.get("items", True), exact=exact)
        low, high = schema.get("minItems", 0), schema.get("maxItems")

        def check(x: Any) -> bool:
            if not isinstance(x, list) or len(x) < low or (high is not None and len(x) > high):
                return False
            return item is _always or all(map(item, x))
        return check

    def _ref(self, ref: Any, exact: bool) -> Check:
        if not isinstance(ref, str) or not ref.startswith("#/$defs/") or ref.count("/") != 2:
            raise _Unsupported(str(ref))
        key = (ref, exact)
        if key not in self.refs:
            self.refs[key] = self.compile(self.root["$defs"][ref.rsplit("/", 1)[1]], exact=exact)
        return self.refs[key]

    def _properties(self, properties: dict[str, Any], additional: Any, exact: bool) -> Check:
        props = {name: self.compile(sub, exact=exact) for name, sub in properties.items()}
        if additional is True:
            def check_open(x: Any) -> bool:
                if not isinstance(x, dict):
                    return True
                for name, value in x.items():
                    sub = props.get(name)
                    if sub is not None and not sub(value):
                        return False
                return True
            return check_open
        if additional is not False:
            raise _Unsupported("additionalProperties schema next to properties")

        def check_closed(x: Any) -> bool:
            if not isinstance(x, dict):
                return True
            for name, value in x.items():
                sub = props.get(name)
                if sub is None or not sub(value):
                    return False
            return True
        return check_closed


def _always(_: Any) -> bool:
    return True


def _conjunction(checks: list[Check]) -> Check:
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda x: first(x) and second(x)
    head, rest = checks[0], _conjunction(checks[1:])
    return lambda x: head(x) and rest(x)


def _string_check(schema: dict[str, Any]) -> Check:
    low, high = schema.get("minLength", 0), schema.get("maxLength")
    search = re.compile(schema["pattern"]).search if "pattern" in schema else None

    def check(x: Any) -> bool:
        if not isinstance(x, str) or len(x) < low or (high is not None and len(x) > high):
            return False
        return search is None or search(x) is not None
    return check


_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda x: isinstance(x, dict),
    "array": lambda x: isinstance(x, list),
    "string": lambda x: isinstance(x, str),
    "boolean": lambda x: isinstance(x, bool),
    "null": lambda x: x is None,
    # Only plain ints: 1.0 is an integer to jsonschema, so refusing it here merely defers to it.
    "integer": lambda x: type(x) is int,
}


def _type_check(value: Any, exact: bool) -> Check:
    names = [value] if isinstance(value, str) else list(value)
    if any(n not in _TYPES for n in names) or (exact and "integer" in names):
        raise _Unsupported(f"type {value}")
    tests = tuple(_TYPES[n] for n in names)
    if len(tests) == 1:
        return tests[0]
    return lambda x: any(t(x) for t in tests)


def _enum_check(values: list[Any], exact: bool) -> Check:
    if all(isinstance(v, str) for v in values):
        # jsonschema compares a string only with ==, so set membership is exact for strings.
        allowed = frozenset(values)
        return lambda x: isinstance(x, str) and x in allowed
    # null equals only null to jsonschema, so it joins strings and ints on the sound side.
    kinds = (int, str, type(None))
    if exact or not all(type(v) in kinds for v in values):
        raise _Unsupported("enum")
    pairs = frozenset((type(v), v) for v in values)
    return lambda x: (type(x), x) in pairs if type(x) in kinds else False


def _length_check(key: str, bound: int) -> Check:
    kind = str if key.endswith("Length") else list
    if key.startswith("min"):
        return lambda x: not isinstance(x, kind) or len(x) >= bound
    return lambda x: not isinstance(x, kind) or len(x) <= bound


class SchemaReport(Slotted):
    """Schema issues (capped), the top-level fields they touch, and whether jsonschema passed."""

    __slots__ = ("issues", "broken", "passed")
    issues: list[Issue]
    broken: frozenset[str]
    passed: bool

    def __init__(self, issues: list[Issue], broken: frozenset[str], passed: bool) -> None:
        self.issues = issues
        self.broken = broken
        self.passed = passed



def check_schema(plan: object, required: tuple[str, ...], flagged: Callable[[str], bool]) -> SchemaReport:
    """``flagged`` tells whether a string looks secret; only unflagged field names are quoted."""
    fast = fast_check()
    if fast is not None and fast(plan):
        return SchemaReport([], frozenset(), True)
    issues: list[Issue] = []
    broken: set[str] = set()
    passed = True
    everything = frozenset(required) | (frozenset(map(str, plan)) if isinstance(plan, dict) else frozenset())
    for error in plan_validator().iter_errors(plan):
        passed = False
        path = list(error.absolute_path)
        if _is_verdict_enum(error.validator, path):
            continue  # the verdict rule reports these with a spelling hint
        if not path:
            if not isinstance(plan, dict):
                broken |= everything
            elif error.validator == "required":
                broken |= {k for k in error.validator_value if k not in plan}
        else:
            broken.add(str(path[0]))
        if len(issues) >= MAX_SCHEMA_ISSUES:
            # Unseen errors may sit in any field, so no semantic rule can trust a shape now.
            issues.append(Issue("plan.schema", "$", f"more than {MAX_SCHEMA_ISSUES} schema errors; "
                                "the first ones are listed, the plan is rejected"))
            broken |= everything
            break
        issues.append(Issue("plan.schema", json_path(*path), describe(error, plan, flagged)))
    return SchemaReport(issues, frozenset(broken), passed)


def _is_verdict_enum(keyword: str, path: list[Any]) -> bool:
    return (keyword == "enum" and len(path) == 3 and path[0] == VERDICT_PATH[0]
            and isinstance(path[1], int) and path[2] == VERDICT_PATH[1])


def describe(error: Any, plan: object, flagged: Callable[[str], bool]) -> str:
    """A message built from the schema side only: the field, the memory and the rule broken."""
    path = list(error.absolute_path)
    where = json_path(*path)[2:] or "the plan"
    if len(path) >= 2 and isinstance(plan, dict) and isinstance(path[1], int):
        items = plan.get(str(path[0]))
        if isinstance(items, list) and path[1] < len(items) and isinstance(items[path[1]], dict):
            name = items[path[1]].get("name")
            if valid_name(name):
                where += f" ({name})"
    return f"{where}: {_rule_text(error, flagged)}"


def _rule_text(error: Any, flagged: Callable[[str], bool]) -> str:
    keyword, expected, instance = error.validator, error.validator_value, error.instance
    if keyword == "required":
        missing = [k for k in expected if isinstance(instance, dict) and k not in instance]
        return f"missing required field {', '.join(missing) or '(unknown)'}"
    if keyword == "additionalProperties":
        known = error.schema.get("properties", {})
        extra = [k for k in instance if k not in known] if isinstance(instance, dict) else []
        shown = [k for k in extra if isinstance(k, str) and _SAFE_KEY.match(k) and not flagged(k)][:5]
        named = f" ({', '.join(shown)})" if shown else ""
        return f"{len(extra)} field(s) not allowed here{named}"
    if keyword == "type":
        return f"must be of type {expected}, not {_json_type(instance)}"
    if keyword == "const":
        return f"must be {json.dumps(expected)}"
    if keyword == "enum":
        return f"must be one of {', '.join(json.dumps(v) for v in expected)}"
    if keyword == "pattern":
        return f"does not match the pattern {expected}"
    if keyword in ("maxLength", "minLength"):
        return f"must have {'at most' if keyword == 'maxLength' else 'at least'} {expected} characters"
    if keyword in ("maxItems", "minItems"):
        return f"must have {'at most' if keyword == 'maxItems' else 'at least'} {expected} items"
    return f"breaks the plan schema's {keyword!s:.40} rule"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def required_fields() -> tuple[str, ...]:
    return tuple(load_schema(SCHEMA_FILE).get("required", ()))


def verdicts() -> tuple[str, ...]:
    return tuple(load_schema(SCHEMA_FILE)["properties"]["staleness"]["items"]["properties"]["verdict"]["enum"])
