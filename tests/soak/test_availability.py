"""What a soak says of each node's availability and of the SLA, from the nodes' observed
time and outages."""

from __future__ import annotations

from pytest_cluster.contract import parse_spec
from pytest_cluster.evidence.sla import NodeAvailability, Settlement, credit, settle
from pytest_cluster.soak.availability import (
    NOT_OBSERVED,
    SLA_NOT_JUDGED,
    availability_cases,
    availability_lines,
)

SPEC = parse_spec("cluster: {name: c, nodes: [n1, n2], launcher: ssh}\n"
                  "host: {cpu_cores: '>= 1'}\n"
                  "sla:\n  uptime: 99.5%\n  down_after: 0 s\n"
                  "  price_per_node_hour: 20000.0\n  credits: [{below: 99.5%, credit: 10%}]\n",
                  "t.yaml")


def test_a_soak_that_observed_no_node_states_no_availability_and_judges_no_sla() -> None:
    assert SPEC.sla is not None
    found, settlement = settle({"n1": [], "n2": []}, (0.0, 0.0), SPEC.sla)
    assert availability_lines(SPEC, found, settlement) == [
        f"  availability: {NOT_OBSERVED}", f"  SLA: {SLA_NOT_JUDGED}"]
    (sla,) = availability_cases(SPEC, found, settlement)
    assert (sla.clause, sla.passed) == ("soak.sla", False)
    assert sla.not_judged == f"{SLA_NOT_JUDGED} (availability {NOT_OBSERVED})"


def test_a_node_down_below_the_uptime_fails_and_the_credit_is_owed() -> None:
    assert SPEC.sla is not None
    found = [NodeAvailability("n1", 3600.0, 36.0, ((0.0, 36.0),)),
             NodeAvailability("n2", 3600.0, 0.0, ())]
    settlement = Settlement(tuple(credit(each, SPEC.sla) for each in found), "USD")
    cases = availability_cases(SPEC, found, settlement)
    assert [(c.clause, c.node, c.passed) for c in cases] == [
        ("soak.availability", "n1", False), ("soak.availability", "n2", True),
        ("soak.sla", "cluster", False)]
    assert cases[0].message == settlement.credits[0].arithmetic
    lines = availability_lines(SPEC, found, settlement)
    assert lines[0].startswith("  availability: cluster ") and "1 node(s) down" in lines[0]
    assert lines[1].startswith("    n1: ") and lines[-1] == f"  SLA: {settlement.total_line()}"
