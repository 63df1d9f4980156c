"""Scan text with a compiled rule set; RE2 keeps every pattern linear in the input size."""

from __future__ import annotations

from collections.abc import Callable, Collection

from .hits import Hit, Positions, dedupe, findings, inside, specific_credential
from .model import Finding, Rule, redact
from .prefilter import GLUES, Features, Gate, cluster_needs
from .screens import Screens

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# A hostile text can hold thousands of hits for one rule; past this many reported hits the
# verdict is clear. Allowlisted matches do not count, so padding cannot hide a later secret.
MAX_HITS_PER_RULE = 1000
# Texts whose hits a rule set keeps (see ``RuleSet.scan``); past this many characters it starts over.
MEMO_MAX_CHARS = 32 << 20


# A value that runs on into one of these was written with a filler for its rest (xoxp-5723…-####…): a
# placeholder, whatever its visible part looks like. Not an ellipsis: a whole token may end a sentence
# with one ("use ghp_…...").
_FILLER_TAILS = (b"####", b"xxxx", b"XXXX", b"****")

# Verdict marks (compared by identity): an allowlisted match, and one not decided yet.
_ALLOWED = "\0allowed"
_UNDECIDED = "\0undecided"


class RuleSet:
    """An immutable, compiled set of rules with one global allowlist."""

    def __init__(self, rules: tuple[Rule, ...], allowlist: Any, keyword_set: Any = None,
                 digest: Callable[[], str | None] | None = None, benign: Any = None,
                 needs: Callable[[], list[Gate | None]] | None = None) -> None:
        self.rules = rules
        self._digest = digest
        self._digested: list[str | None] = []
        self.allowlist = allowlist
        # Spans random by design (data URIs, ciphertext, certificates, URLs) where generic rules stay quiet.
        self.benign = benign
        # One RE2 set over every keyword answers "which keywords occur" in a single pass;
        # the set's answer is indices into the sorted ``_keywords`` list.
        self._keyword_set = keyword_set
        self._keywords = sorted({k for rule in rules for k in rule.keywords})
        # Which rules a keyword wakes, and which always run: a scan unions a few lists instead of
        # testing every rule's keywords (the loop over ~190 rules was a fifth of the scan).
        self._always = frozenset(i for i, rule in enumerate(rules) if not rule.keywords)
        self._specific = frozenset(i for i, rule in enumerate(rules) if specific_credential(rule))
        self._by_keyword: dict[str, list[int]] = {}
        for index, rule in enumerate(rules):
            for keyword in rule.keywords:
                self._by_keyword.setdefault(keyword, []).append(index)
        self._by_found = [self._by_keyword[keyword] for keyword in self._keywords]
        # Each rule's place in the file (``dedupe`` keeps the first rule of a span).
        self._order = {rule.id: index for index, rule in enumerate(rules)}
        # The hits of each text scanned, by the whole text: a consolidation scans each changed
        # memory as plan content (validation) and again as a mirror file (the gate).
        self._memo: dict[str, list[Hit]] = {}
        self._memo_chars = 0
        # What each (rule, match) came to: allowlisted, refused by the rule's check, or a hit with its
        # preview. A pure function of the rule and the matched bytes, so a match met again (a file name
        # in both halves of each index line, a line the last index scanned already) is decided once:
        # the allowlists and checks cost ~15 µs a match, and a 2,000-memory MEMORY.md has ~2,000.
        self._verdicts: dict[tuple[int, bytes, bytes], str | None] = {}
        self._verdict_bytes = 0
        # What each rule's matches must contain (see ``prefilter``), read on the first scan: a rule
        # whose needs a text lacks cannot match it, so it is neither compiled nor run there.
        self._needs_source = needs
        self._needs: list[Gate | None] | None = None
        self._gate_chars = b""
        self._gate_rows: list[tuple[frozenset[int], int, tuple[tuple[int, int], ...], Any] | None] | None = None
        # Each rule's match call (``patterns.span_finder``), made on the rule's first search.
        self._finders: list[Callable[[bytes, int, int], list[tuple[int, int]]] | None] = [None] * len(rules)
        # Rules searched together first (see ``screens``).
        self.screens = Screens(rules)

    def __repr__(self) -> str:
        return f"RuleSet({len(self.rules)} rules)"

    @property
    def digest(self) -> str | None:
        """What the rules and the code applying them are, when known (computed on first use): scan
        verdicts kept under it stay true until either changes."""
        if not self._digested:
            self._digested.append(self._digest() if self._digest is not None else None)
        return self._digested[0]

    def _allowed(self, rule: Rule, secret: bytes, whole: bytes) -> bool:
        """A rule's own allowlist reads its whole match (a documentation host, a public key's setting
        name) and silences that rule only. The global allowlist names documentation values: it reads
        the secret alone, so no word or host next to a secret can silence it."""
        from .patterns import found

        if rule.allowlist is not None and (found(rule.allowlist, secret) or found(rule.allowlist, whole)):
            return True
        return self.allowlist is not None and found(self.allowlist, secret)

    def _finder(self, index: int) -> Callable[[bytes, int, int], list[tuple[int, int]]]:
        from .patterns import span_finder

        find = self._finders[index] = span_finder(self.rules[index].pattern)
        return find

    def _hits(self, index: int, data: bytes, spans: list[tuple[int, int]],
              known: list[tuple[int, int]]) -> list[Hit]:
        """Rule ``index``'s unallowed hits, from its first match's ``spans`` on; the spans it recognised as
        documentation values go to ``known``."""
        find = self._finders[index]
        assert find is not None  # the caller found the first match with it
        rule = self.rules[index]
        hits: list[Hit] = []
        group = rule.secret_group
        verdicts, ident = self._verdicts, id(rule)  # the rule lives as long as this set: its id is stable
        pos, size = 0, len(data)
        while True:  # as ``finditer`` steps: past each match, and one byte on after an empty one
            if len(hits) >= MAX_HITS_PER_RULE:
                break
            whole_start, whole_end = spans[0]
            start, end = spans[group]
            while end > start and data[end - 1] == 0x2E:
                end -= 1  # a sentence's full stop or ellipsis after a token whose alphabet holds "."
            if start < 0 or start == end:
                pass
            elif data.startswith(_FILLER_TAILS, end):
                if not rule.fallback:
                    known.append((start, end))
            else:
                key = (ident, data[start:end], data[whole_start:whole_end])
                verdict = verdicts.get(key, _UNDECIDED)
                if verdict is _UNDECIDED:
                    verdict = verdicts[key] = self._verdict(rule, key[1], key[2])
                    self._verdict_bytes += len(key[1]) + len(key[2])
                    if self._verdict_bytes > MEMO_MAX_CHARS:
                        verdicts.clear()
                        self._verdict_bytes = 0
                if verdict is _ALLOWED:
                    if not rule.fallback:
                        known.append((start, end))
                elif verdict is not None:
                    hits.append(Hit(rule, start, end, verdict))
            if pos == size:
                break
            pos = pos + 1 if pos == whole_end else whole_end
            spans = find(data, pos, size)
            if spans[0][1] < 0:
                break
        return hits

    def _verdict(self, rule: Rule, secret_b: bytes, whole_b: bytes) -> str | None:
        """``_ALLOWED``, None (the rule's check refuses the match) or the hit's preview."""
        if self._allowed(rule, secret_b, whole_b):
            return _ALLOWED
        secret = secret_b.decode("utf-8", "replace")
        if rule.check is not None and not rule.check(secret, whole_b.decode("utf-8", "replace"), rule.check_params):
            return None
        return redact(secret, rule.preview_prefix)

    def _present_keywords(self, text: str, data: bytes) -> frozenset[str]:
        if self._keyword_set is not None:
            # A set of literals compiles to a trie-sized DFA, so the match cannot run out
            # of DFA memory on any input; None means no keyword occurs.
            found = self._keyword_set.Match(data) or ()
            return frozenset(self._keywords[i] for i in found)
        lowered = text.lower()
        return frozenset(k for k in self._keywords if k in lowered)

    def _kept_hits(self, text: str, data: bytes, categories: Collection[str] | None = None) -> list[Hit]:
        return self._collect(text, data, categories)

    def _collect(self, text: str, data: bytes, categories: Collection[str] | None = None,
                 strong: bool = False, every_span: bool = False) -> list[Hit]:
        """The hits of the text as written and, unless ``strong``, of its other readings; ``strong``:
        only the specific credential rules (no fallback), which alone read those other readings.
        ``every_span``: a generic rule's hit is kept where it overlaps a specific one (masking needs
        the union: a password rule may stop at a quote the quoted-literal rule reads past)."""
        hits: list[Hit] = []
        known: list[tuple[int, int]] = []
        woken = set(self._always)
        if self._keyword_set is not None:
            # The set's answer is indices into ``_keywords``; each names the rules that keyword wakes.
            by_found = self._by_found
            for found in self._keyword_set.Match(data) or ():
                woken.update(by_found[found])
        else:
            for keyword in self._present_keywords(text, data):
                woken.update(self._by_keyword.get(keyword, ()))
        from .patterns import found

        gates = self._gates()
        features = Features(data)
        rules, finders, size = self.rules, self._finders, len(data)
        if strong:  # the views: only the specific credential rules read them
            woken &= self._specific
        # ``Features.opens`` written out (it runs for ~50 rules of every text scanned): the bytes the
        # text holds, its digits and its clusters, each found once and on first need.
        held: frozenset[int] | None = None
        digit_count = -1
        clustered = [-1] * len(GLUES)
        run: list[int] = []
        for index in sorted(woken):
            rule = rules[index]
            if categories is not None and rule.category not in categories:
                continue
            gate = gates[index]
            if gate is not None:
                chars, digits, clusters, outline = gate
                if chars:
                    if held is None:  # which of the few characters any gate needs the text holds
                        held = frozenset(ch for ch in self._gate_chars if ch in data)
                    if not chars <= held:
                        continue
                if digits:
                    if digit_count < 0:
                        digit_count = features.digits()
                    if digit_count < digits:
                        continue
                if clusters:
                    short = False
                    for glue, count in clusters:
                        have = clustered[glue]
                        if have < 0:
                            have = clustered[glue] = features.cluster(glue)
                        if have < count:
                            short = True
                            break
                    if short:
                        continue
                if (outline is not None and not getattr(rule.pattern, "ready", True)
                        and not found(outline, data)):
                    continue
            run.append(index)
        starts = self.screens.starts(run, data, self._rule_needs) if self.screens else None
        for index in run:
            start = 0
            if starts is not None:
                start = starts.get(index, 0)
                if start < 0:
                    continue  # its screen matched nowhere in the text
            find = finders[index] or self._finder(index)
            spans = find(data, start, size)
            if spans[0][1] >= 0:  # most rules a text's gates let through match nowhere in it
                hits.extend(self._hits(index, data, spans, known))
        if known and hits:
            # A value a specific rule knows as a published example (a test card, the sample IBAN)
            # is not personal data to any other rule either: a phone rule must not catch its digits.
            # It never hides what a specific credential rule found: an address at an allowlisted host
            # is no reason to publish the token written as its local part.
            hits = [h for h in hits if specific_credential(h.rule) or not inside(h, known)]
        if self.benign is not None and any(h.rule.fallback for h in hits):
            spans = [m.span() for m in self.benign.finditer(data)]
            if spans:
                hits = [h for h in hits if not (h.rule.fallback and inside(h, spans))]
        if not strong and (categories is None or "credential" in categories):
            hits.extend(self._view_hits(text, data, hits))
        if every_span or not hits:
            return hits
        return dedupe(hits, self._order)

    def _view_hits(self, text: str, data: bytes, found: list[Hit]) -> list[Hit]:
        """Hits of the specific credential rules in the other readings of ``text`` (``views``), mapped
        back onto its bytes; a span the text as written already reports is not reported again."""
        from .views import views

        out: list[Hit] = []
        for view in views(text, data):
            vdata = view.text.encode("utf-8", "replace")
            hits = self._collect(view.text, vdata, strong=True)
            if not hits:
                continue
            vchars = Positions(view.text, vdata).char_offsets([b for h in hits for b in (h.start, h.end)])
            for hit in hits:
                start, end = view.original(vchars[hit.start], vchars[hit.end])
                if len(text) != len(data):
                    start, end = (len(text[:start].encode("utf-8", "replace")),
                                  len(text[:end].encode("utf-8", "replace")))
                if any(h.start < end and start < h.end and specific_credential(h.rule) for h in found):
                    continue
                out.append(Hit(hit.rule, start, end, hit.preview, view.how))
        return out

    def _gates(self) -> list[tuple[frozenset[int], int, tuple[tuple[int, int], ...], Any] | None]:
        """Each rule's gate as plain values: the bytes and the number of digits its matches need, the
        clusters (glue index, digits) that decide its cluster needs (``prefilter.cluster_needs``), and the
        outline (see ``Features.opens``)."""
        if self._gate_rows is None:
            self._gate_rows = [None if gate is None else
                               (frozenset(gate.needs.chars), gate.needs.digits, cluster_needs(gate.needs.clusters),
                                gate.outline)
                               for gate in self._rule_needs()]
            self._gate_chars = bytes(sorted({ch for row in self._gate_rows if row is not None for ch in row[0]}))
        return self._gate_rows

    def _rule_needs(self) -> list[Gate | None]:
        if self._needs is None:
            found = self._needs_source() if self._needs_source is not None else []
            self._needs = found if len(found) == len(self.rules) else [None] * len(self.rules)
        return self._needs

    def prepare(self) -> None:
        """Compile what every scan runs (the rules no keyword gates, the allowlists) before the first scan.

        Of a rule with an outline that is the outline: the pattern is compiled only for a text the
        outline matches (its Unicode tables took ~45 ms of every consolidation here, for patterns
        most runs never need).
        """
        needs = self._rule_needs()
        for index in sorted(self._always):
            rule = self.rules[index]
            gate = needs[index]
            first = gate.outline if gate is not None and gate.outline is not None else rule.pattern
            for pattern in (first, rule.allowlist):
                getattr(pattern, "compiled", None)  # a lazy pattern compiles on this first access
        for pattern in (self.allowlist, self.benign, self._keyword_set):
            getattr(pattern, "compiled", None)

    def forget(self) -> None:
        """Drop the remembered hits and verdicts (a throughput measurement scans the same texts again)."""
        self._memo.clear()
        self._memo_chars = 0
        self._verdicts.clear()
        self._verdict_bytes = 0

    def scan(self, text: str, file: str = "<text>") -> list[Finding]:
        """Findings sorted by line, column and rule id; one finding per secret span."""
        # "replace" maps each unencodable code point (a lone surrogate) to one "?", so
        # character offsets in the bytes and in ``text`` still agree.
        data = text.encode("utf-8", "replace")
        hits = self._memo.get(text)
        if hits is None:
            hits = self._kept_hits(text, data)
            # Hits are a pure function of the text and this (immutable) rule set; the key is the
            # whole text, compared in full on a hit, never a hash of it.
            if self._memo_chars + len(text) > MEMO_MAX_CHARS:
                self._memo.clear()
                self._memo_chars = 0
            self._memo[text] = hits
            self._memo_chars += len(text)
        if not hits:
            return []
        return findings(hits, text, data, file)

    def scan_name(self, name: str, file: str = "<name>") -> list[Finding]:
        """Findings of the specific credential rules in a file name or a memory's title, read whole and
        from each separator on (``views.name_readings``); one finding per rule."""
        from .views import name_readings, plain_name

        if plain_name(name):
            return []  # answered before the rules are read: most names are words
        out: dict[str, Finding] = {}
        for reading in name_readings(name):
            data = reading.encode("utf-8", "replace")
            hits = self._collect(reading, data, strong=True)
            for finding in findings(hits, reading, data, file) if hits else ():
                out.setdefault(finding.rule_id, finding)
        return list(out.values())

    def spans(self, text: str, categories: Collection[str]) -> list[list[Any]]:
        """``[start, end, rule id]`` character spans of the secrets of ``categories``, in text order.

        Overlapping spans are merged (the first rule names the merged span), so replacing each span
        leaves no part of any secret behind, also where a generic rule reads further than the specific
        one that names the finding.
        """
        data = text.encode("utf-8", "replace")
        hits = self._collect(text, data, categories, every_span=True)
        if not hits:
            return []
        offsets = Positions(text, data).char_offsets([b for h in hits for b in (h.start, h.end)])
        merged: list[list[Any]] = []
        for hit in sorted(hits, key=lambda h: (h.start, -h.end)):
            start, end = offsets[hit.start], offsets[hit.end]
            if merged and start < merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end, hit.rule.id])
        return merged



def scan_bytes(ruleset: RuleSet, data: bytes, file: str = "<bytes>") -> list[Finding]:
    """Scan raw file content; undecodable bytes become U+FFFD rather than an error."""
    return ruleset.scan(data.decode("utf-8", errors="replace"), file)
