"""A scalar of the spec's YAML as the spec wrote it: its value as YAML reads it (a number
with more digits than a double holds kept as its text), as text where YAML would read a
number (a version), and what it is in words for an error ('a map', 'nothing')."""

from __future__ import annotations

from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, SequenceNode

from pytest_cluster.units import MAX_DIGITS, significant_digits


def kind(node: Node) -> str:
    if isinstance(node, MappingNode):
        return "a map"
    if isinstance(node, SequenceNode):
        return "a list"
    if node.tag.endswith(":null"):
        return "nothing"
    return repr(scalar(node))


def scalar(node: Node) -> object:
    """A scalar's value as YAML reads it; but a number with more significant digits than
    a double holds (units.MAX_DIGITS) stays the text written, which a number's parser
    refuses saying so (111.99999999999999999 was read as 112.0)."""
    if node.tag == "tag:yaml.org,2002:float" and significant_digits(str(node.value)) \
            > MAX_DIGITS:
        return str(node.value)
    try:
        return SafeConstructor().construct_object(node, deep=True)
    except (ConstructorError, ValueError, OverflowError):
        return node.value


#: The tags of the scalars YAML reads as numbers.
NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")


def written(node: Node) -> object:
    """A scalar as its text where YAML would read a number (a version written unquoted:
    `torch: 2.10` is the text '2.10', where the float would be 2.1); else as `scalar`."""
    if node.tag in NUMBER_TAGS:
        return str(node.value)
    return scalar(node)
