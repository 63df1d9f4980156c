"""store.yamltext: the YAML memfold reads, bounded in nesting and in what its aliases unfold to."""

from __future__ import annotations

import pytest
import yaml

from pipeline.store.jsontext import TooDeep
from pipeline.store.yamltext import MAX_ITEMS, load_yaml


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("depth", [65, 900, 5000])
def test_yaml_nested_past_the_bound_is_too_deep_with_either_loader(fast: bool, depth: int) -> None:
    flow = "a: " + "[" * depth + "]" * depth + "\n"
    block = "".join(f"{'  ' * i}k{i}:\n" for i in range(min(depth, 2000))) + f"{'  ' * min(depth, 2000)}v: 1\n"
    for text in (flow, block):
        try:
            load_yaml(text, fast=fast)
        except TooDeep:
            continue
        except yaml.YAMLError:
            assert fast  # libyaml refuses past its own nesting limit, as a syntax error
            continue
        raise AssertionError(f"{len(text)} bytes nested {depth} deep were read")


def test_an_alias_bomb_is_refused_before_anyone_unfolds_it() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    with pytest.raises(TooDeep) as exc:
        load_yaml("\n".join(lines))
    assert str(MAX_ITEMS) in str(exc.value)


def test_a_plain_document_reads_as_the_safe_loader_reads_it() -> None:
    text = "name: Deploy\nlist: [1, 2, {a: b}]\nwhen: 2026-11-30\nshared: &s {x: 1}\nagain: *s\n"
    assert load_yaml(text) == load_yaml(text, fast=False) == yaml.safe_load(text)
