"""contract/sections/__init__.py: the one registry of the spec's sections, in the order they are
parsed, ours then the installed extensions'."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_cluster.contract import extensions
from pytest_cluster.contract import sections as registry
from pytest_cluster.contract.extensions import ExtensionSection
from pytest_cluster.contract.model import SectionSpec
from pytest_cluster.contract.reading.compose import compose
from pytest_cluster.contract.reading.located_errors import Ctx
from pytest_cluster.contract.reading.mapping import Map
from pytest_cluster.contract.sections import BY_NAME, LISTED, SECTIONS, Section, Sofar


def test_the_spec_sections_are_one_registry() -> None:
    """SECTIONS declares each section once: every Spec field that is a section is parsed by
    it, every clause's section is one of them, and the probes a section names are probes
    (those its declared clauses read among them)."""
    from pytest_cluster.contract.clauses import CLAUSES
    from pytest_cluster.contract.model import Spec
    from pytest_cluster.contract.sections import BY_NAME, LISTED, SECTIONS
    from pytest_cluster.probes import PROBES

    names = [section.name for section in SECTIONS]
    fields = [f.name for f in dataclasses.fields(Spec)
              if f.name not in ("file", "sha256", "others", "warnings", "text", "whole",
                                "extends", "off")]
    typed = [section.name for section in SECTIONS if section.parse is not None]
    assert sorted(typed) == sorted(fields) and names == list(LISTED)
    assert names[0] == "cluster" and len(set(names)) == len(names)
    assert {d.section for d in CLAUSES} <= set(BY_NAME)
    for d in CLAUSES:
        if d.reads is not None:
            assert d.reads.probe in BY_NAME[d.section].probes, d.id
    named = {probe for section in SECTIONS for probe in section.probes}
    assert named <= set(PROBES)
    assert set(PROBES) - named == set(), "a probe no section reads"



def test_the_cluster_is_parsed_first_every_section_after_it_reads_it() -> None:
    """The sections after `cluster` read what it gave (its launcher, its nodes): it comes
    first, and the list is ours in order before any extension's."""
    assert SECTIONS[0].name == "cluster" and LISTED[0] == "cluster"
    assert [s.name for s in SECTIONS] == LISTED == list(BY_NAME)
    assert all(BY_NAME[s.name] is s for s in SECTIONS)
    assert [s.name for s in SECTIONS if s.keep_null] == ["sim"]  # `sim:` alone: healthy


def test_a_section_without_a_parser_is_a_map_of_its_declared_clauses() -> None:
    ctx = Ctx("t.yaml")
    top = compose("{}", "t.yaml")
    assert top is not None
    sofar = Sofar(Map(ctx, top, "", ()))
    plain = Section("host")
    assert plain.read(ctx, None, sofar) is None
    record = plain.read(ctx, compose("\n{cpu_cores: 8}", "t.yaml"), sofar)
    assert isinstance(record, SectionSpec) and record.name == "host"
    cores = record.clause("cpu_cores")
    assert cores is not None and (cores.key, cores.line, cores.requirement.text) == (
        "host.cpu_cores", 2, ">= 8")
    assert ctx.errors == [] and sofar.record("host") is None


def test_an_extensions_section_comes_after_ours_and_cannot_take_a_name(
        monkeypatch: pytest.MonkeyPatch) -> None:
    ours = list(SECTIONS)
    monkeypatch.setattr(extensions, "_STATE", extensions._State())
    monkeypatch.setattr(registry, "SECTIONS", list(ours))
    monkeypatch.setattr(registry, "BY_NAME", dict(BY_NAME))
    monkeypatch.setattr(registry, "LISTED", list(LISTED))
    monkeypatch.setattr(registry, "added_sections", lambda: (
        ExtensionSection("host"), ExtensionSection("pdu", ("host",), checked=False)))
    registry._add_extensions()
    pdu = Section("pdu", None, ("host",), checked=False)
    assert [*ours, pdu] == registry.SECTIONS and [*LISTED, "pdu"] == registry.LISTED
    assert registry.BY_NAME["pdu"] == pdu and registry.BY_NAME["host"] is BY_NAME["host"]
    assert extensions.problems() == (
        "the spec's sections: 'host' is declared twice (an installed extension repeats a name "
        "that is already taken; the second is left out)",)
