"""A scalar of the spec's YAML as the spec wrote it."""

from __future__ import annotations

import yaml
from yaml.nodes import Node

from pytest_cluster.contract.reading.yaml_nodes import kind, scalar, written


def node(text: str) -> Node:
    """The YAML node of `text`, a document of one value."""
    found = yaml.compose(text)
    assert found is not None
    return found


def test_a_version_written_unquoted_is_its_text_not_the_float() -> None:
    version = node("2.10")
    assert scalar(version) == 2.1 and written(version) == "2.10"


def test_a_number_with_more_digits_than_a_double_holds_stays_its_text() -> None:
    assert scalar(node("111.99999999999999999")) == "111.99999999999999999"
    assert scalar(node("111.5")) == 111.5


def test_what_a_node_is_in_words() -> None:
    assert [kind(node(text)) for text in ("[1]", "{a: 1}", "a: ", "x")] == [
        "a list", "a map", "a map", "'x'"]
    assert kind(node("~")) == "nothing"
