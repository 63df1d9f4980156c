"""Same subject, new value: the newer memory supersedes the older; an undecidable disagreement is flagged."""

from __future__ import annotations

from collections import defaultdict
from functools import lru_cache

from ..store.memory import Memory
from .dedupe import outdated_lines
from .roles import roles_disagree
from .text import distinct_subjects, fact_key, fact_lines, masked, newness, subject_stem, title_words
from .work import Fate, Work, canonical_body

MAX_SUBJECT_GROUP = 32


def note_line(older: str) -> str:
    return f"Verify: this disagrees with [[{older.removesuffix('.md')}]]; check which value is current."


def title_key(memory: Memory) -> str:
    return title_words(memory.name)


def _subjects(work: Work) -> list[tuple[str, list[str]]]:
    """Groups of live memories of one type sharing a title, a description apart from values, or a name stem."""
    buckets: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    live = work.live
    for name in sorted(live):
        memory = live[name]
        for key in _subject_keys(name, memory.type, memory.description, memory.name):
            buckets[key].append(name)
    # Only keys two memories share are sorted: at 20,000 memories most of the ~60,000 keys have one.
    return [(k[0], buckets[k][:MAX_SUBJECT_GROUP]) for k in sorted(k for k, v in buckets.items() if len(v) > 1)]


@lru_cache(maxsize=1 << 20)
def _subject_keys(name: str, kind: str, description: str, title: str) -> tuple[tuple[str, str, str], ...]:
    """A memory's subject keys, in the order ``_subjects`` files them; kept across the passes of a plan."""
    keys = []
    key, values = masked(description)
    if values and key:
        keys.append(("description", kind, key))
    stem = subject_stem(name)
    if stem:
        keys.append(("stem", kind, stem))
    words = title_words(title)
    if words:
        keys.append(("title", kind, words))
    return tuple(keys)


def clear_caches() -> None:
    _subject_keys.cache_clear()


def resolve(work: Work) -> bool:
    """Supersede, merge or flag older memories on the subject of a newer one; True when anything changed."""
    changed = False
    for kind, group in _subjects(work):
        alive = sorted((n for n in group if n in work.live), key=lambda n: newness(work.live[n], n), reverse=True)
        for older in alive[1:]:
            newest = next((n for n in alive if n in work.live and n != older), None)
            if older not in work.live or newest is None or newness(work.live[newest], newest) < \
                    newness(work.live[older], older):
                continue
            changed |= _settle(work, kind, older, newest)
    return changed


def _settle(work: Work, kind: str, older: str, newest: str) -> bool:
    old_mem, new_mem = work.live[older], work.live[newest]
    if distinct_subjects(old_mem, new_mem) or roles_disagree(old_mem, new_mem):
        # web01 and web02, app1 and app2: two subjects that happen to read alike; "from a to b" and
        # "from b to a": the same things in other roles.
        return False
    outdated = outdated_lines(old_mem, new_mem)
    if not outdated:
        if kind == "title" and old_mem.visibility == new_mem.visibility:
            return bool(work.absorb(newest, [older], "SUBSUMED", f"the same subject and title as {newest}"))
        return False
    if old_mem.visibility != new_mem.visibility or (old_mem.modified or "") == (new_mem.modified or ""):
        # Which value is current cannot be told (same time), or carrying the older's other facts
        # over would move them across visibilities: both stay, marked to verify.
        work.verdicts[older] = ("CONTRADICTED", f"disagrees with {newest} on a value; kept until someone verifies")
        work.verdicts[newest] = ("CONTRADICTED", f"disagrees with {older} on a value; kept, marked to verify")
        return _add_note(work, newest, older) if old_mem.visibility == new_mem.visibility else False
    kept = [raw for raw, key in fact_lines(old_mem) if key not in outdated]
    carried = old_mem.with_changes(description=old_mem.description if fact_key(old_mem.description) not in outdated
                                   else "", body=canonical_body("\n".join(kept)))
    merged = _carry(new_mem, carried)
    if not work.fits(merged):
        work.event(newest, f"supersedes {older}, but carrying its other facts would pass the size bound")
        return False
    work.live[newest] = merged
    work.touched.add(newest)
    work.remove(older, Fate("SUPERSEDED", "deleted", f"superseded by the newer {newest}, which states the same "
                            "subject with a new value", newest))
    work.event(newest, f"supersedes {older}")
    return True


def _carry(newest: Memory, carried: Memory) -> Memory:
    from .work import merge

    if not carried.description:
        carried = carried.with_changes(description=newest.description)
    return merge(newest, [carried]).with_changes(modified=newest.modified, expires=newest.expires)


def _add_note(work: Work, newest: str, older: str) -> bool:
    memory = work.live[newest]
    line = note_line(older)
    if fact_key(line) in {key for _, key in fact_lines(memory)}:
        return False
    candidate = memory.with_changes(body=canonical_body(memory.body.rstrip("\n") + "\n\n" + line))
    if not work.fits(candidate):
        work.event(newest, f"conflicts with {older}; no room for a verification note")
        return False
    work.live[newest] = candidate
    work.touched.add(newest)
    work.event(newest, f"gained a verification note about the conflicting {older}")
    return True


def retitle(work: Work) -> bool:
    """No two memories keep one title: every later holder of a title gets what tells it apart."""
    holders: dict[str, list[str]] = defaultdict(list)
    for name, memory in work.fixed.items():
        holders[title_key(memory)].append(name)
    for name in sorted(work.live, key=lambda n: newness(work.live[n], n), reverse=True):
        holders[title_key(work.live[name])].append(name)
    changed = False
    used = set(holders)
    for names in holders.values():
        for name in names[1:]:
            if name not in work.live:
                continue
            memory = work.live[name]
            others = [work.fixed.get(n) or work.live[n] for n in names if n != name]
            own = sorted(set().union(*(_idents(memory) - _idents(o) for o in others)))
            hint = " ".join(own[:3]) or subject_stem(name) or name.removesuffix(".md")
            title, n = f"{memory.name} ({hint})", 2
            while title_key(memory.with_changes(name=title)) in used:
                title, n = f"{memory.name} ({hint} {n})", n + 1
            used.add(title_key(memory.with_changes(name=title)))
            work.live[name] = memory.with_changes(name=title)
            work.touched.add(name)
            work.event(name, f"renamed to {title!r}: another memory has the title {memory.name!r}")
            changed = True
    return changed


def _idents(memory: Memory) -> frozenset[str]:
    from .text import memory_identifiers

    return memory_identifiers(memory)
