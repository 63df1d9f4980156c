"""Hash maps encoded once and spliced give exactly the bytes and digests of encoding each document whole."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.fsutil import sha256_bytes
from pipeline.receipts.maptext import MapText
from pipeline.receipts.receipt import remember_written
from pipeline.store.jsontext import dump_json

# File names and hashes as a store could hold them, and worse: quotes, backslashes, newlines, control
# characters, BMP letters past U+E000 and non-BMP ones (RFC 8785 sorts keys by UTF-16 code units).
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12) | st.sampled_from(
    ["MEMORY.md", "a\"b.md", "back\\slash.md", "line\nbreak.md", "\ufb01le.md", "\U0001f600.md", "\ue000.md"])
MAPS = st.fixed_dictionaries({"harness": st.dictionaries(TEXT, TEXT, max_size=20),
                              "public": st.dictionaries(TEXT, TEXT, max_size=20)})


def _doc(source: dict[str, Any], final: dict[str, Any], note: Any) -> dict[str, Any]:
    return {"kind": "memory-consolidation-receipt", "phase": "post", "note": note, "previous": None,
            "operations": [{"name": "a.md", "kind": "create"}], "sourceHashes": source, "finalHashes": final}


@settings(max_examples=100, deadline=None)
@given(MAPS, MAPS, st.none() | TEXT | st.integers(-(2**53) + 1, 2**53 - 1)
       | st.floats(allow_nan=False, allow_infinity=False))
def test_spliced_documents_are_byte_identical_to_whole_encodings(source: Any, final: Any, note: Any) -> None:
    texts = MapText()
    snapshot = {"kind": "memfold-direct-edit", "sourceHashes": source}
    receipt = _doc(source, final, note)
    assert texts.dump(snapshot) == dump_json(snapshot)
    assert texts.dump(receipt) == dump_json(receipt)
    # The RFC 8785 reference implementation, on the document as a reader loads it from the file.
    expected = hashlib.sha256(rfc8785.dumps(json.loads(dump_json(receipt)))).hexdigest()
    assert texts.digest(receipt) == expected
    assert remember_written(receipt, texts.dump(receipt), texts=texts) == expected


def test_a_document_without_maps_or_with_a_marker_lookalike_is_encoded_whole() -> None:
    texts = MapText()
    plain = {"kind": "x", "sourceHashes": None, "finalHashes": [1, 2]}
    assert texts.dump(plain) == dump_json(plain)
    assert texts.digest(plain) == hashlib.sha256(rfc8785.dumps(plain)).hexdigest()
    maps = {"harness": {"a.md": "0" * 64}, "public": {}}
    # A value that holds the marker itself: the marker is then not unique and the document is encoded whole.
    marker = texts._marks({"sourceHashes": maps}, ("sourceHashes",))["sourceHashes"]
    doc = {"kind": "x", "sourceHashes": maps, "note": marker}
    assert texts.dump(doc) == dump_json(doc)
    assert texts.digest(doc) == hashlib.sha256(rfc8785.dumps(doc)).hexdigest()


def test_a_receipt_that_json_does_not_read_back_as_equal_gets_the_digest_of_its_bytes() -> None:
    # Integer keys become strings in the file and sort differently there: the file's bytes decide.
    receipt = {"kind": "x", "sourceHashes": {"harness": {"a.md": "1"}, "public": {}},
               "outcome": {10: "ten", 9: "nine"}}
    data = dump_json(receipt)
    assert remember_written(receipt, data) == hashlib.sha256(rfc8785.dumps(json.loads(data))).hexdigest()


def test_the_one_hash_helper_agrees_with_hashlib_below_and_past_the_large_input_size() -> None:
    for size in (0, 1, 4096, (256 << 10) - 1, 256 << 10, 1 << 20):
        data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
        assert sha256_bytes(data) == hashlib.sha256(data).hexdigest()


def test_a_run_whose_source_maps_are_the_last_runs_final_maps_gets_their_exact_bytes() -> None:
    from pipeline.receipts import maptext
    from pipeline.store.jsontext import canonical_json

    final = {"harness": {f"project_n{i}.md": f"{i:064x}" for i in range(50)}, "public": {"MEMORY.md": "ab" * 32}}
    first = MapText()
    first.dump(_doc({"harness": {}, "public": {}}, final, None))
    first.digest(_doc({"harness": {}, "public": {}}, final, None))
    # The next run's source maps: equal by value, other objects.
    source = {root: dict(files) for root, files in final.items()}
    receipt = _doc(source, {"harness": {}, "public": {}}, 1)
    assert maptext._encoded(source, 0) is maptext._encoded(final, 0)  # kept, not encoded again
    assert MapText().dump(receipt) == dump_json(receipt)
    assert MapText().digest(receipt) == sha256_bytes(canonical_json(receipt))
    # The map first encoded changed afterwards (nothing else may reach the kept copy): its own bytes.
    final["harness"]["project_n0.md"] = "f" * 64
    changed = _doc(final, {"harness": {}, "public": {}}, 2)
    assert MapText().dump(changed) == dump_json(changed)
    assert MapText().digest(changed) == sha256_bytes(canonical_json(changed))
    assert b'"' + b"f" * 64 + b'"' in MapText().dump(changed)


# Names a store holds, and the ones that would trip a careless rewrite of the entries' text.
ASCII_NAME = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=10) | st.sampled_from(
    ['x": .md', 'a": "b.md', "back\\\\.md", '\\": ".md', "tab\t.md", "MEMORY.md"])
CHANGES = st.lists(st.tuples(st.sampled_from(["harness", "public"]), ASCII_NAME | TEXT, st.none() | TEXT),
                   max_size=8)


@settings(max_examples=150, deadline=None)
@given(MAPS, CHANGES, st.booleans())
def test_maps_spelled_from_a_kept_maps_entries_are_byte_identical_to_whole_encodings(
        base: Any, changes: Any, add_ascii: bool) -> None:
    from pipeline.receipts import maptext

    base = {root: dict(files) for root, files in base.items()}
    if add_ascii:  # a store-like base, so the entries are kept and the final map is spelled from them
        base["harness"].update({f"project_n{i}.md": f"{i:064x}" for i in range(30)})
    final = {root: dict(files) for root, files in base.items()}
    for root, name, digest in changes:
        if digest is None:
            final[root].pop(name, None)
        else:
            final[root][name] = digest
    first = MapText()
    first.dump({"kind": "x", "sourceHashes": base})
    first.digest({"kind": "x", "sourceHashes": base})
    receipt = _doc(base, final, None)
    texts = MapText()
    assert texts.dump(receipt) == dump_json(receipt)
    expected = hashlib.sha256(rfc8785.dumps(json.loads(dump_json(receipt)))).hexdigest()
    assert texts.digest(receipt) == expected
    assert maptext._encoded(final, 0) == dump_json(final).rstrip(b"\n").replace(b"\n", b"\n  ")


def test_a_final_map_one_file_apart_is_spelled_from_the_source_maps_entries() -> None:
    from pipeline.receipts import maptext
    from pipeline.store.jsontext import canonical_json

    source = {"harness": {f"project_n{i:03d}.md": f"{i:064x}" for i in range(200)},
              "public": {"MEMORY.md": "ab" * 32, "project_n001.md": f"{1:064x}"}}
    final = {"harness": {**source["harness"], "project_n050b.md": "c" * 64, "MEMORY.md": "d" * 64},
             "public": {"MEMORY.md": "ef" * 32}}
    del final["harness"]["project_n007.md"]
    texts = MapText()
    texts.dump({"kind": "x", "sourceHashes": source})
    assert texts.dump(_doc(source, final, None)) == dump_json(_doc(source, final, None))
    assert texts.digest(_doc(source, final, None)) == sha256_bytes(canonical_json(_doc(source, final, None)))
    kept = {id(held): layout for held, layout, _texts in maptext._RECENT}
    held_final = next(held for held, _layout, _texts in maptext._RECENT if held == final)
    source_keys = next(layout for held, layout, _t in maptext._RECENT if held == source)
    final_layout = kept[id(held_final)]
    assert final_layout is not None and source_keys is not None
    # Both roots changed, so each is a copy; a root that does not change is shared with the map kept.
    assert [root for root, _keys, _frags in final_layout] == ["harness", "public"]
    assert final_layout[0][1] == sorted(final["harness"])
    unchanged = {"harness": final["harness"], "public": source["public"]}
    texts.dump(_doc(final, unchanged, None))
    layout = next(layout for held, layout, _t in maptext._RECENT if held == unchanged)
    assert layout is not None and layout[0][2] is final_layout[0][2]
