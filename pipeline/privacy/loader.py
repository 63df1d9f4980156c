"""Load, validate and compile the privacy rules file plus any user-supplied rules."""

from __future__ import annotations

import os
from _thread import allocate_lock

from ..errors import ConfigError, Issue
from ..resources import data_dir, load_schema
from .engine import RuleSet
from .model import Rule
from .prefilter import NEEDS_FILE, Gate, from_row, needs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

RULES_FILE = "privacy-rules.yaml"
CACHE_PREFIX = "privacy-rules-"
LEGACY_CACHE_NAME = "privacy-rules.json"  # the one file all installations shared: removed when rewritten
DIGEST_CACHE_PREFIX = "privacy-digest-"
SCHEMA_FILE = "privacy-rules.schema.json"


def _rule_label(document: dict[str, Any], path: list[Any]) -> str:
    if len(path) >= 2 and path[0] == "rules" and isinstance(path[1], int):
        rules = document.get("rules") or []
        if path[1] < len(rules) and isinstance(rules[path[1]], dict):
            rid = rules[path[1]].get("id")
            if isinstance(rid, str):
                return f"privacy rule {rid!r}"
        return f"privacy rule #{path[1] + 1}"
    if len(path) >= 2 and path[0] == "allowlist":
        return f"privacy allowlist entry #{path[1] + 1}"
    return "privacy rules"


def validate_document(document: Any, source: str) -> None:
    """Raise ConfigError naming the offending rule when ``document`` breaks the schema."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(load_schema(SCHEMA_FILE))
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    if not errors:
        return
    issues = []
    for error in errors:
        path = list(error.absolute_path)
        label = _rule_label(document if isinstance(document, dict) else {}, path)
        pointer = "/" + "/".join(str(p) for p in path)
        issues.append(Issue("privacy.schema", pointer, f"{label}: {error.message}"))
    first = issues[0]
    more = f" (and {len(issues) - 1} more)" if len(issues) > 1 else ""
    raise ConfigError(f"{source}: {first.message}{more}", code="config.invalid", issues=issues)


_MEMO: dict[str, Any] = {}  # the parsed shipped rules and their compiled RuleSet, once per process


def _default_document(cache_home: str | None = None) -> dict[str, Any]:
    """The shipped rules file, parsed once per process; also kept as JSON in the home's cache."""
    from ..store import filecache

    path = data_dir("schemas") / RULES_FILE
    cache = rules_cache(cache_home) if cache_home else None
    missed = False
    if "document" not in _MEMO and cache is not None:
        cached = filecache.load(cache, filecache.identity(path))
        if isinstance(cached, dict) and isinstance(cached.get("rules"), list):
            _MEMO["document"] = cached
            return cached
        # Absent, or written for another rules file (memfold was upgraded or reinstalled): rewritten
        # below, or every later process would parse the YAML again.
        missed = True
    if "document" not in _MEMO:
        _MEMO["document"] = _parse_rules_file(path)
    if cache is not None and (missed or not os.path.exists(cache)):
        source = filecache.identity(path)
        filecache.save(cache, source, _MEMO["document"], [source])
        try:
            os.unlink(os.path.join(os.path.dirname(cache), LEGACY_CACHE_NAME))
        except OSError:
            pass
    return _MEMO["document"]  # type: ignore[no-any-return]


def _install_tag() -> str:
    """This installation, as it names its cache files in a home that several may share."""
    from ..fsutil import sha256_bytes

    return sha256_bytes(os.path.dirname(os.path.dirname(os.path.abspath(__file__))).encode())[:16]


def rules_cache(cache_home: str | os.PathLike[str]) -> str:
    """Where this installation keeps the parsed shipped rules in ``cache_home``: one file per
    installation, as for the config and the rules digest. Two installations sharing one file each found
    the other's entry (written for another rules file) and parsed the YAML again on every write."""
    from ..store import filecache

    return filecache.cache_path(os.fspath(cache_home), f"{CACHE_PREFIX}{_install_tag()}.json")


def _parse_rules_file(path: Any) -> dict[str, Any]:
    import yaml

    with open(path, encoding="utf-8") as fh:
        # The C safe loader where libyaml is built in. The shipped file is checked against its
        # schema by the test suite, not on every start: that check alone costs ~0.3 s of jsonschema.
        document = yaml.load(fh, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    if not isinstance(document, dict) or not isinstance(document.get("rules"), list):
        validate_document(document, RULES_FILE)
    assert isinstance(document, dict)
    return document


def _build(rules: list[dict[str, Any]], sources: list[str], allowlist: list[str], *,
           shipped_allowlist: bool = False, benign: list[str] | None = None,
           cache_home: str | None = None) -> RuleSet:
    """Compile a rule set; the shipped rules (source RULES_FILE) lazily, everything else at once.

    With ``cache_home`` (the shipped rules alone) the digest is kept in the home's cache."""
    # Imported here: a write that scans nothing (a private memory) asks the rule set for its digest
    # only, and never pays for the compilers and the check functions they name (~2.5 ms of imports).
    from .patterns import compile_alternation, compile_rule, keyword_set

    seen: set[str] = set()
    compiled: list[Rule] = []
    for raw, source in zip(rules, sources, strict=False):
        if raw["id"] in seen:
            raise ConfigError(f"{source}: privacy rule {raw['id']!r} is defined twice")
        seen.add(raw["id"])
        compiled.append(compile_rule(raw, source, lazy=source == RULES_FILE))
    keywords = sorted({k for rule in compiled for k in rule.keywords})
    return RuleSet(
        tuple(compiled),
        compile_alternation(allowlist, "privacy allowlist", lazy=shipped_allowlist),
        keyword_set(keywords),
        (lambda: _shipped_digest(cache_home, rules, allowlist, benign or [])) if cache_home is not None
        else (lambda: _digest(rules, allowlist, benign or [])),
        compile_alternation(list(benign or ()), "privacy benign spans", lazy=shipped_allowlist),
        lambda: _rule_needs(rules),
    )


def _shipped_needs() -> dict[str, Any]:
    """The needs of the shipped patterns, by pattern text, as the test suite checks them."""
    if "needs" not in _MEMO:
        import json

        try:
            with open(data_dir("schemas") / NEEDS_FILE, encoding="utf-8") as fh:
                table = json.load(fh)
        except (OSError, ValueError):
            table = {}
        _MEMO["needs"] = table if isinstance(table, dict) else {}
    return _MEMO["needs"]  # type: ignore[no-any-return]


def _rule_needs(rules: list[dict[str, Any]]) -> list[Gate | None]:
    """Each rule's gate: the shipped table's row for its pattern, else read from the pattern now."""
    from .patterns import LazyPattern

    known = _shipped_needs()
    out: list[Gate | None] = []
    for raw in rules:
        pattern = str(raw["pattern"])
        row = known.get(pattern)
        found = from_row(row) if row is not None else None
        if found is None:
            found = needs(pattern)
        if found.trivial:
            out.append(None)
            continue
        widened = LazyPattern(found.outline, f"privacy rule {raw['id']!r} outline") if found.outline else None
        out.append(Gate(found, widened))
    return out


def _digest_sources() -> list[str]:
    """The files ``_digest`` hashes besides the rules: this package's modules and the shipped needs."""
    here = os.path.dirname(os.path.abspath(__file__))
    paths = [os.path.join(here, n) for n in sorted(os.listdir(here)) if n.endswith(".py")]
    return [*paths, str(data_dir("schemas") / NEEDS_FILE)]


def _shipped_digest(cache_home: str, rules: list[dict[str, Any]], allowlist: list[str],
                    benign: list[str]) -> str | None:
    return _shipped_digest_of(cache_home, lambda: (rules, allowlist, benign))


def _shipped_digest_of(cache_home: str,
                       parts: Callable[[], tuple[list[dict[str, Any]], list[str], list[str]]]) -> str | None:
    """``_digest`` of the shipped rules, kept in the home's cache under the identities of every file it
    hashes: the rules file (the rules, allowlist and benign spans are its parse) and the sources.

    Hashing them read the package's modules and loaded OpenSSL on every write (6.5 ms of an ``add``
    on the bench VM); the cache is one small read and a stat per source. Any write to one of those
    files changes its identity, and a file changed within the last two seconds is never cached, as
    for the config and the parsed rules (``filecache``). One cache file per installation, as for the
    config: two installations sharing a home have different sources.
    """
    from ..store import filecache

    sources = [str(data_dir("schemas") / RULES_FILE), *_digest_sources()]
    identities = [filecache.identity(path) for path in sources]
    key = [[os.path.basename(path), found] for path, found in zip(sources, identities, strict=True)]
    cache = filecache.cache_path(cache_home, f"{DIGEST_CACHE_PREFIX}{_install_tag()}.json")
    cached = filecache.load(cache, key)
    if isinstance(cached, str):
        return cached
    digest = _digest(*parts())  # the rules are read only when the digest is not kept
    if digest is not None:
        filecache.save(cache, key, digest, identities)
    return digest


def _digest(rules: list[dict[str, Any]], allowlist: list[str], benign: list[str]) -> str | None:
    """The rules, the allowlist, the benign spans and the source of the code that applies them, hashed together."""
    import hashlib
    import json

    digest = hashlib.sha256(json.dumps([rules, allowlist, benign], sort_keys=True, default=repr).encode("utf-8"))
    for path in _digest_sources():
        try:
            with open(path, "rb") as fh:
                digest.update(fh.read())
        except FileNotFoundError:
            digest.update(b"-")  # no shipped needs: each is read from its pattern
        except OSError:
            return None  # the code cannot be named, so no verdict is kept
    return digest.hexdigest()


def _default_ruleset(cache_home: str | None = None) -> RuleSet:
    memo = f"ruleset {cache_home}"  # one per home: each keeps its rules digest and parsed rules
    if memo not in _MEMO:

        def build() -> RuleSet:
            document = _default_document(cache_home)
            rules = list(document["rules"])
            return _build(rules, [RULES_FILE] * len(rules), list(document.get("allowlist", [])),
                          shipped_allowlist=True, benign=list(document.get("benign", [])), cache_home=cache_home)

        if cache_home is None:
            _MEMO[memo] = build()
        else:
            home = cache_home

            def parts() -> tuple[list[dict[str, Any]], list[str], list[str]]:
                document = _default_document(home)
                return list(document["rules"]), list(document.get("allowlist", [])), list(document.get("benign", []))

            _MEMO[memo] = _Later(build, lambda: _shipped_digest_of(home, parts))
    return _MEMO[memo]  # type: ignore[no-any-return]


class _Later(RuleSet):
    """The shipped rules, read and compiled when first used. A write whose mirror files are all known
    clean under the rule set's digest scans nothing and asks only for that digest, which the home's
    cache answers without the rules (reading and building the 188 shipped rules cost ~2 ms)."""

    def __init__(self, build: Callable[[], RuleSet], digest: Callable[[], str | None]) -> None:
        # Not RuleSet.__init__: every other attribute is the built rule set's, taken on first use.
        self.__dict__["_later"] = (build, allocate_lock())
        self._digest = digest
        self._digested = []

    def __getattr__(self, name: str) -> Any:
        later = self.__dict__.get("_later")
        if later is None:
            raise AttributeError(name)
        with later[1]:
            if "_later" in self.__dict__:
                built = later[0]()
                self.__dict__.update((key, value) for key, value in vars(built).items()
                                     if key not in ("_digest", "_digested"))
                del self.__dict__["_later"]
        return object.__getattribute__(self, name)


def load_ruleset(
    extra_rules: list[dict[str, object]] | None = None,
    extra_allowlist: list[str] | None = None,
    *,
    cache_home: str | None = None,
) -> RuleSet:
    """The shipped rules (compiled once, cached) plus validated user rules and allowlist entries.

    With ``cache_home`` the parsed rules file is kept as JSON under ``<cache_home>/cache/`` (YAML
    costs ~60 ms per process to import and parse; the cache ~1 ms to read).
    """
    if not extra_rules and not extra_allowlist:
        return _default_ruleset(cache_home)
    user_rules: list[dict[str, Any]] = list(extra_rules or [])
    user_allowlist = list(extra_allowlist or [])
    extra = {"version": 1, "rules": user_rules, "allowlist": user_allowlist}
    validate_document(extra, "user privacy rules")
    document = _default_document(cache_home)
    rules = list(document["rules"]) + user_rules
    sources = [RULES_FILE] * len(document["rules"]) + ["user privacy rules"] * len(user_rules)
    allowlist = list(document.get("allowlist", [])) + user_allowlist
    return _build(rules, sources, allowlist, benign=list(document.get("benign", [])))
