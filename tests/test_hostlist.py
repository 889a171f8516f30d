from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_cluster.errors import UnitError
from pytest_cluster.hostlist import compress_hostlist, expand_hostlist, is_valid_hostname


@pytest.mark.parametrize(("expr", "names"), [
    ("node01", ["node01"]),
    ("gpu-[001-004]", ["gpu-001", "gpu-002", "gpu-003", "gpu-004"]),
    ("gpu-[001-002,007]", ["gpu-001", "gpu-002", "gpu-007"]),
    ("n[8-11]", ["n8", "n9", "n10", "n11"]),
    ("r[1-2]-n[01-02]", ["r1-n01", "r1-n02", "r2-n01", "r2-n02"]),
    ("a,b[1-2],c", ["a", "b1", "b2", "c"]),
    ("n[5]", ["n5"]),
    ("node.example.com", ["node.example.com"]),
])
def test_expand(expr: str, names: list[str]) -> None:
    assert expand_hostlist(expr) == names


@pytest.mark.parametrize(("expr", "message"), [
    ("n[1-", "unbalanced '[' in hostlist 'n[1-'"),
    ("n1-]", "unbalanced ']' in hostlist 'n1-]'"),
    ("n[[1]]", "nested '[' in hostlist 'n[[1]]'"),
    ("n[3-1]", "range '3-1' in hostlist 'n[3-1]' goes backwards"),
    ("n[a-b]", "bad range 'a-b' in hostlist 'n[a-b]' (expected like 001-004)"),
    ("n[1-100000]", "range '1-100000' in hostlist 'n[1-100000]' has more than 65536 nodes"),
    ("a,,b", "empty name in hostlist 'a,,b'"),
    ("a;reboot", "'a;reboot' is not a valid hostname (letters, digits, '-', '_' and '.')"),
    ("-oProxyCommand=x", "'-oProxyCommand=x' is not a valid hostname "
     "(letters, digits, '-', '_' and '.')"),
])
def test_bad_hostlists(expr: str, message: str) -> None:
    with pytest.raises(UnitError) as info:
        expand_hostlist(expr)
    assert str(info.value) == message


@pytest.mark.parametrize("name", ["$(reboot)", "a b", "a'b", "`id`", "a|b", "user@host",
                                  "-x", "a/b", "", "a..b", "x" * 64])
def test_hostile_names_are_refused(name: str) -> None:
    assert not is_valid_hostname(name)


@given(st.text(max_size=40))
def test_arbitrary_expressions_raise_only_unit_error(expr: str) -> None:
    try:
        names = expand_hostlist(expr)
    except UnitError:
        return
    assert all(is_valid_hostname(name) for name in names)


@pytest.mark.parametrize(("names", "expr"), [
    ([f"gpu-{i:04d}" for i in range(1, 1025) if i != 128], "gpu-[0001-0127,0129-1024]"),
    (["n8", "n9", "n10", "n11", "n12"], "n8,n9,n[10-12]"),  # each width its shorter form
    (["n8", "n9", "n10", "n11"], "n8,n9,n10,n11"),  # a bracket would be longer
    (["a00", "a01"], "a00,a01"),
    (["r1-n01", "r1-n02", "r2-n01"], "r1-n[01-02],r2-n01"),
    (["b", "a", "b", "n5"], "b,a,n5"),
    (["x.example.com"], "x.example.com"),
    (["gpu7-ib", "gpu8-ib"], "gpu[7-8]-ib"),
    ([], ""),
])
def test_compress(names: list[str], expr: str) -> None:
    assert compress_hostlist(names) == expr


_NAMES = st.lists(st.from_regex(r"[a-z]{1,3}(-?[0-9]{1,4}){0,2}", fullmatch=True),
                  max_size=60)


@given(_NAMES)
def test_compressed_hostlists_expand_to_the_same_names(names: list[str]) -> None:
    expr = compress_hostlist(names)
    assert sorted(expand_hostlist(expr) if names else []) == sorted(set(names))
    assert len(expr) <= len(",".join(dict.fromkeys(names)))


@pytest.mark.parametrize("name", ["gpu-0127", "gpu-0127.ib", "r1-n02x", "node", "", "7",
                                  "a1b22c333", "n\u0663\u0664", "1" * 63 + "x", "x" * 10 + "--"])
def test_a_names_last_number_is_found_as_the_pattern_found_it(name: str) -> None:
    """The scan from the end splits a name where `^(.*?)(\\d+)(\\D*)$` did (that pattern
    took quadratic time on a long run of digits followed by another number)."""
    from pytest_cluster.hostlist import _last_number

    old = re.match(r"^(.*?)(\d+)(\D*)$", name)
    assert _last_number(name) == (old.groups() if old else None)
