"""Structural fuzzing of the spec loader: random nesting depths, anchors and aliases (cycles
included), merge keys, 'billion laughs', long lists, huge and odd scalars and wrong types in
every section. Whatever the text, parse_spec returns a Spec or raises a SpecError (never
another exception), with a bounded message (bench/hostile_specs.py times the worst forms)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_cluster.contract import Spec, parse_spec
from pytest_cluster.contract.clauses import DTYPES, SOFTWARE, keys
from pytest_cluster.contract.sections.interconnect import KEYS as INTERCONNECT_KEYS
from pytest_cluster.contract.sections.sim import FAULT_KEYS
from pytest_cluster.contract.sections.slurm import KEYS as SLURM_KEYS
from pytest_cluster.contract.sections.ssh import ALLOWED, REFUSED
from pytest_cluster.contract.sections.ssh import KEYS as SSH_KEYS
from pytest_cluster.errors import MAX_LINE, MAX_SHOWN, SpecError

#: the keys of each map the validators read, so generated maps reach deep into each one
MAP_KEYS: dict[str, tuple[str, ...]] = {
    "cluster": ("name", "nodes", "launcher", "python", "probe_timeout", "parallel"),
    "host": keys("host"),
    "software": SOFTWARE,
    "storage": keys("storage"),
    "gpus": keys("gpus"),
    "matmul": DTYPES,
    "sim": ("gpu_model", "gpus_per_node", "cpu_cores", "cpu_threads", "memory", "faults",
            "latency"),
    "faults": FAULT_KEYS,
    "interconnect": INTERCONNECT_KEYS,
    "intra_node": ("kind", "rate"),
    "inter_node": ("kind", "nics_per_node", "rate_per_nic"),
    "ssh": SSH_KEYS,
    "options": (*ALLOWED, *REFUSED),
    "slurm": SLURM_KEYS,
}
SECTIONS = ("host", "storage", "gpus", "interconnect", "sim", "ssh", "slurm")
LISTS = ("storage", "faults")  # lists of maps
#: scalars as YAML text: plausible, absurd and hostile
SCALARS = ["1", "0", "-5", "8", "64", "65", "1.5", "-0.5", "yes", "no", "true", "false", "~",
           "''", "'0 s'", "'-5 s'", "'5 min'", "'>= -5 GiB'", "'>= 1.5 TiB'", "'<= 85 C'",
           "'95%'", "'>= 10 GB/s'", "'400 Gb/s'", "'4 GiB'", "'1 KiB'", "'>= 800 TFLOPS'",
           "'>= 5.15'", "'gpu-[001-004]'", "'n[1-999999999]'", "'n[1-2]'", "'a;rm -rf /'",
           "n1", "n2", "a", "sim", "ssh", "slurm", "local", "nccl", "gloo", "all_reduce",
           "H100-SXM-80GB", "/data", "rel", "accept-new", "'-oProxyCommand=x'", "'nc %h %p'",
           "1e400", "9" * 400, ".inf", ".nan", "2020-01-01", "0x1F", "0o17", "'1:30'",
           "'" + "x" * 5000 + "'", "'n[" + "1-60000," * 50 + "1]'", "'" + "a[1]" * 500 + "'"]

@dataclass(frozen=True)
class Scalar:
    text: str  # YAML text


@dataclass(frozen=True)
class Alias:
    pick: int  # which anchor so far


@dataclass(frozen=True)
class Deep:
    levels: int  # of [ ] around `inner`
    inner: Tree


@dataclass(frozen=True)
class Repeat:
    count: int
    item: Scalar | Alias


@dataclass(frozen=True)
class Seq:
    anchored: bool
    items: list[Tree]


@dataclass(frozen=True)
class Mapping:
    anchored: bool
    pairs: list[tuple[str, Tree]]


Tree = Scalar | Alias | Deep | Repeat | Seq | Mapping


@dataclass
class Out:
    """The text being written, and the anchors defined so far: closed, or still open."""

    parts: list[str] = field(default_factory=list)
    closed: list[str] = field(default_factory=list)
    open: list[str] = field(default_factory=list)

    def alias(self, pick: int) -> str:
        """One of the anchors so far; now and then one still open (a cycle)."""
        names = self.closed + self.open if pick % 8 == 0 else self.closed
        return f"*{names[pick % len(names)]}" if names else "~"


def render(tree: Tree, out: Out) -> None:
    if isinstance(tree, Scalar):
        out.parts.append(tree.text)
    elif isinstance(tree, Alias):
        out.parts.append(out.alias(tree.pick))
    elif isinstance(tree, Deep):
        out.parts.append("[" * tree.levels)
        render(tree.inner, out)
        out.parts.append("]" * tree.levels)
    elif isinstance(tree, Repeat):  # a long list of one scalar or alias
        once = Out(closed=out.closed, open=out.open)
        render(tree.item, once)
        out.parts.append("[" + ", ".join(["".join(once.parts)] * tree.count) + "]")
    else:
        name = f"a{len(out.closed) + len(out.open)}"
        if tree.anchored:
            out.parts.append(f"&{name} ")
            out.open.append(name)
        if isinstance(tree, Seq):
            out.parts.append("[")
            for index, item in enumerate(tree.items):
                out.parts.append(", " if index else "")
                render(item, out)
            out.parts.append("]")
        else:
            out.parts.append("{")
            for index, (key, value) in enumerate(tree.pairs):
                out.parts.append(f"{', ' if index else ''}{key}: ")
                render(value, out)
            out.parts.append("}")
        if tree.anchored:
            out.open.remove(name)
            out.closed.append(name)


printable = st.characters(exclude_categories=["Cc", "Cn", "Co", "Cs"])  # what YAML may hold
text_scalars = st.text(printable, max_size=30).map(lambda text: json.dumps(text,
                                                                           ensure_ascii=False))
short: st.SearchStrategy[Scalar | Alias] = st.one_of(
    st.sampled_from([text for text in SCALARS if len(text) < 40]).map(Scalar),
    st.integers(min_value=0).map(Alias))
scalars: st.SearchStrategy[Tree] = st.one_of(
    short, st.sampled_from(SCALARS).map(Scalar), text_scalars.map(Scalar),
    st.integers().map(lambda n: Scalar(str(n))))
stray_keys = st.one_of(st.just("<<"), text_scalars, st.sampled_from(list(MAP_KEYS)))


def _children(inner: st.SearchStrategy[Tree]) -> st.SearchStrategy[Tree]:
    return st.one_of(
        st.builds(Seq, st.booleans(), st.lists(inner, max_size=5)),
        st.builds(Mapping, st.booleans(), st.lists(st.tuples(stray_keys, inner), max_size=4)),
        st.builds(Deep, st.integers(1, 70).map(lambda n: n if n > 64 else n % 4 + 1), inner),
        st.builds(Repeat, st.integers(0, 3000), short))


values: st.SearchStrategy[Tree] = st.recursive(scalars, _children, max_leaves=12)


def value_of(key: str, depth: int = 0) -> st.SearchStrategy[Tree]:
    """A value for `key`: mostly a map of the keys it takes (or a list of them), each with
    a value of its own kind; sometimes anything at all."""
    if key not in MAP_KEYS or depth > 2:
        return values
    pairs = st.lists(st.tuples(st.one_of(st.sampled_from(MAP_KEYS[key]), stray_keys),
                               st.deferred(lambda: st.sampled_from(MAP_KEYS[key]).flatmap(
                                   lambda inner: value_of(inner, depth + 1)))), max_size=6)
    one = st.builds(Mapping, st.booleans(), pairs)
    if key in LISTS:
        return st.one_of(st.builds(Seq, st.booleans(), st.lists(one, max_size=4)), values)
    return st.one_of(one, one, values)


@st.composite
def laughs(draw: st.DrawFn) -> str:
    """A chain of anchors, each naming `width` copies of the one before, maybe merged."""
    levels = draw(st.integers(min_value=1, max_value=9))
    width = draw(st.integers(min_value=2, max_value=10))
    merge = draw(st.booleans())
    lines = ["l0: &l0 {k0: 1, k1: [x, y]}" if merge else "l0: &l0 [x, y]"]
    for level in range(1, levels + 1):
        refs = ", ".join([f"*l{level - 1}"] * width)
        lines.append(f"l{level}: &l{level} " + (f"{{<<: [{refs}]}}" if merge else f"[{refs}]"))
    if draw(st.booleans()):
        lines.append(f"host: {{<<: *l{levels}}}" if merge else f"host: *l{levels}")
    return "\n".join(lines) + "\n"


launchers = st.sampled_from(["local", "sim", "ssh", "slurm"])


@st.composite
def documents(draw: st.DrawFn) -> str:
    """A spec: a cluster (mostly a valid one) and random sections, in block style at the
    top (so a chain of anchors can come first) and flow style below."""
    out = Out()
    top: list[tuple[str, Tree]] = [("cluster", draw(st.one_of(
        launchers.map(lambda launcher: Scalar(f"{{name: x, nodes: 'n[1-4]', "
                                              f"launcher: {launcher}}}")),
        value_of("cluster"))))]
    for name in draw(st.lists(st.sampled_from(SECTIONS), max_size=5)):
        top.append((name, draw(value_of(name))))
    if draw(st.integers(0, 3)) == 0:
        out.parts.append(draw(laughs()))
    for key, value in top:
        out.parts.append(f"{key}: ")
        render(value, out)
        out.parts.append("\n")
    return "".join(out.parts)


def check(text: str) -> None:
    try:
        assert isinstance(parse_spec(text, "fuzz.yaml"), Spec)
    except SpecError as exc:
        message = str(exc)
        assert len(message) <= (MAX_SHOWN + 2) * (MAX_LINE + 2) * 2, len(message)


@pytest.mark.slow
@settings(max_examples=700, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(documents())
def test_any_structure_loads_or_raises_a_bounded_spec_error(text: str) -> None:
    check(text)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(laughs())
def test_any_chain_of_aliases_loads_or_raises_a_bounded_spec_error(chain: str) -> None:
    check(chain + "cluster: {name: x, nodes: a}\nhost: {cpu_cores: 1}\n")
