"""contract/reading/compose.py: YAML text to nodes, bounded, typed by YAML 1.2's core schema; a
SpecError (file and line) at the first sign of anything but a small tree of plain data."""

from __future__ import annotations

import pytest
from yaml.nodes import MappingNode, Node, ScalarNode

from pytest_cluster.contract.reading.compose import MAX_DEPTH, MAX_VALUES, compose, core_type
from pytest_cluster.errors import SpecError


def error(text: str) -> tuple[str, int | None]:
    with pytest.raises(SpecError) as caught:
        compose(text, "t.yaml")
    return str(caught.value), caught.value.line


def tags(node: Node | None) -> dict[str, tuple[str, str]]:
    """A flat map's values: each key's (tag name, text)."""
    assert isinstance(node, MappingNode)
    found = {}
    for key, value in node.value:
        assert isinstance(key, ScalarNode) and isinstance(value, ScalarNode)
        found[key.value] = (value.tag.rsplit(":", 1)[1], value.value)
    return found


@pytest.mark.parametrize(("value", "kind"), [
    ("0", "int"), ("-0", "int"), ("+12", "int"), ("010", "str"), ("0o7", "str"),
    ("0x70", "str"), ("1_000", "str"), ("1:30", "str"), ("1e3", "float"), (".5", "float"),
    (".inf", "float"), (".NaN", "float"), ("true", "bool"), ("FALSE", "bool"), ("yes", "str"),
    ("no", "str"), ("", "null"), ("~", "null"), ("Null", "null"), ("<<", "merge")])
def test_a_plain_scalar_is_typed_by_the_core_schema(value: str, kind: str) -> None:
    assert core_type(value) == kind


def test_yaml_1_1s_numbers_and_booleans_reach_the_fields_as_written() -> None:
    node = compose("a: 010\nb: 0x70\nc: no\nd: 1:30\ne: 1.5\nf: '1'\n", "t.yaml")
    assert tags(node) == {"a": ("str", "010"), "b": ("str", "0x70"), "c": ("str", "no"),
                          "d": ("str", "1:30"), "e": ("float", "1.5"), "f": ("str", "1")}
    node = compose("a: !!int 010\nb: !!float 1\nc: !!bool yes\nd: !!str 1\n", "t.yaml")
    assert tags(node) == {"a": ("str", "010"), "b": ("float", "1"), "c": ("str", "yes"),
                          "d": ("str", "1")}


def test_an_empty_text_is_no_node_and_a_merge_key_is_plain_data() -> None:
    assert compose("", "t.yaml") is None
    assert compose("# only a comment\n", "t.yaml") is None
    assert isinstance(compose("a: &x {b: 1}\nc: {<<: *x, d: 2}\n", "t.yaml"), MappingNode)


def laughs(levels: int) -> str:
    """A 'billion laughs': each level ten aliases of the one before."""
    lines = ["l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_aliases_count_as_copies_of_what_they_name() -> None:
    assert compose(laughs(3), "t.yaml") is not None  # about a thousand values: fine
    sizes = [11]  # each level: its list, and ten copies of the level before
    while sum(sizes) <= MAX_VALUES:
        sizes.append(1 + 10 * sizes[-1])
    line = len(sizes)  # where the count passes MAX_VALUES, long before it expands
    assert error(laughs(line + 3)) == (
        f"t.yaml:{line}: more than {MAX_VALUES} YAML values (each alias counted as a copy "
        "of what it names); a spec needs far fewer", line)


@pytest.mark.parametrize(("text", "message", "line"), [
    ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),
     f"YAML nested more than {MAX_DEPTH} levels deep; a spec needs a few", 1),
    ("a: &x [1, *x]\n", "YAML alias *x inside what &x names: a spec cannot refer to itself", 1),
    ("a: *nope\n", "YAML syntax error: found undefined alias 'nope'", 1),
    ("a: &x 1\nb: &x 2\n", "YAML syntax error: anchor &x is defined twice (first on line 1)",
     2),
    ("a: 1\n---\nb: 2\n", "YAML syntax error: a spec is one document, but found another (a "
                          "second '---')", 2),
    ("a: !!python/object/apply:os.system [ls]\n", "YAML tag 'tag:yaml.org,2002:python/object/"
                                                  "apply:os.system' is not allowed; a spec is "
                                                  "plain data", 1),
    ("a: !custom x\n", "YAML tag '!custom' is not allowed; a spec is plain data", 1),
])
def test_anything_but_a_small_tree_of_plain_data_is_refused_at_its_line(
        text: str, message: str, line: int) -> None:
    assert error(text) == (f"t.yaml:{line}: {message}", line)


def test_a_deep_tree_through_an_alias_is_refused_too() -> None:
    half = MAX_DEPTH // 2 + 1
    text = f"a: &x {'[' * half}{']' * half}\nb: {'[' * half}*x{']' * half}\n"
    assert error(text) == (f"t.yaml:2: YAML nested more than {MAX_DEPTH} levels deep (with "
                           "alias *x expanded); a spec needs a few", 2)


@pytest.mark.parametrize(("text", "hint"), [
    ("cpu_cores: >= 8\n", " (quote values that start with '>' or '<', e.g. cpu_cores: "
                          "\">= 192\")"),
    ("nodes: [gpu-[1-2]]\n", " (quote hostlists inside [...] lists, e.g. nodes: "
                             "['gpu-[001-004]', login01])"),
])
def test_a_syntax_error_a_spec_often_makes_says_how_to_write_it(text: str,
                                                               hint: str) -> None:
    message, line = error(text)
    assert message.startswith("t.yaml:1: YAML syntax error: ") and message.endswith(hint)
    assert line == 1


def test_a_character_yaml_refuses_is_named_by_its_code_point_and_line() -> None:
    assert error("a: 1\nb: \"x\x1by\"\n") == (
        "t.yaml:2: YAML error: the character U+001B is not allowed in YAML; write it as an "
        "escape inside double quotes (\"\\e\" for ESC) or leave it out", 2)
