"""The consistency oracle: every view of one run read back, and every fact two views show
compared. `disagreements(views)` lists each disagreement as one sentence naming the views,
the case or node and both values; a run is consistent when it lists none.

The views: the terminal summary (pytest's output), junit.xml, results.jsonl (the record
every other view is made from), verdict.json, report.html (pytest-html's table, the
scorecard's node table, matrix and clause table, the plots' legends, the latency heat
map's caption and cells), the Prometheus file (--cluster-metrics) and the signed
manifest. Case by case: the outcome, the measured and
required numbers, the unit, the node and the GPU. Node by node: the verdict, the reason,
the drain line, the culprits a cluster check names. The run: its verdict, outcome, level
and counts.

A view added later joins here: read it in `read_views`, compare it in a `_check_*`.
"""

from __future__ import annotations

import html
import json
import math
import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from pytest_cluster.evidence.baseline.accepted import signature_said
from pytest_cluster.evidence.bundle.verify import verify
from pytest_cluster.evidence.record.derived_cases import TESTS
from pytest_cluster.evidence.sinks.metrics import CASE_LABELS
from pytest_cluster.evidence.sinks.results import ResultLine, outcome
from pytest_cluster.evidence.verdict.blame import NOT_BLAMING, answered, culprits, no_answer
from pytest_cluster.evidence.verdict.faults import fault_of
from pytest_cluster.evidence.verdict.nodes import outcome_of
from pytest_cluster.units import Dim, parse_quantity, utc

Record = dict[str, Any]
#: JUnit's and pytest-html's names of an outcome, as results.jsonl names it.
JUNIT = {"failure": "failed", "error": "error", "skipped": "skipped"}
HTML = {"Passed": "passed", "Failed": "failed", "Error": "error", "Skipped": "skipped"}


@dataclass
class Views:
    run: Path
    terminal: str
    results: list[ResultLine]
    end: Record | None
    junit: ET.Element
    verdict: Record
    report: str
    metrics: dict[str, list[tuple[dict[str, str], float]]] | None
    #: the scorecard's clause table: each clause's cases passed and failed, and its
    #: "Every clause" row under EVERY_CLAUSE
    clauses: dict[str, tuple[int, int]]
    #: the clause table's bound sources: each clause whose bound came from the spec's
    #: profile, and the citation it shows ('from profile NAME: URL (what it says)')
    sources: dict[str, str] = field(default_factory=dict)
    #: the profile the spec extends, as results.jsonl's run line says it ('' for none)
    extends: str = ""


def read_views(run: Path, terminal: str, metrics: Path | None = None) -> Views:
    """Every view of the run in `run` (a run directory), with pytest's output `terminal`
    and the metrics file, if the run wrote one."""
    lines = [json.loads(line) for line in
             (run / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    ends = [r for r in lines if r.get("type") == "end"]
    found: dict[str, list[tuple[dict[str, str], float]]] | None = None
    if metrics is not None:
        found = {}
        for family in text_string_to_metric_families(metrics.read_text(encoding="utf-8")):
            for sample in family.samples:
                found.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    report = (run / "report.html").read_text(encoding="utf-8")
    return Views(run, terminal, [r for r in lines if r.get("type") == "result"],
                 ends[-1] if ends else None, ET.parse(run / "junit.xml").getroot(),
                 json.loads((run / "verdict.json").read_text(encoding="utf-8")),
                 report, found, clause_table(report), bound_sources(report),
                 next((str(r.get("extends", "")) for r in lines if r.get("type") == "run"), ""))


EVERY_CLAUSE = "Every clause"


def clause_table(report: str) -> dict[str, tuple[int, int]]:
    """The scorecard's clause table: per clause (and EVERY_CLAUSE), the cases it shows
    passed and failed."""
    table = re.search(r'<table id="clauses">(.*?)</table>', report, re.S)
    found = {}
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table.group(1) if table else "", re.S):
        cells = re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)
        if len(cells) >= 4 and cells[2].isdigit() and cells[3].isdigit():
            name = html.unescape(re.sub(r"<span[^>]*>.*?</span>", "", cells[0])).strip()
            found[name] = (int(cells[2]), int(cells[3]))
    return found


def bound_sources(report: str) -> dict[str, str]:
    """The clause table's bound sources: per clause, the citation its Required cell shows
    for a bound its profile supplied."""
    table = re.search(r'<table id="clauses">(.*?)</table>', report, re.S)
    found = {}
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table.group(1) if table else "", re.S):
        cells = re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)
        source = re.search(r'<span class="bound-source">from (.*?)</span>', cells[1]) \
            if len(cells) >= 2 else None
        if source is not None:
            name = html.unescape(re.sub(r"<span[^>]*>.*?</span>", "", cells[0])).strip()
            found[name] = html.unescape(source.group(1))
    return found


def disagreements(views: Views) -> list[str]:
    """Every fact two views show differently, one sentence each."""
    return [*_check_results(views), *_check_junit(views), *_check_report(views),
            *_check_verdicts(views), *_check_terminal(views), *_check_metrics(views),
            *_check_clause_metrics(views),
            *_check_manifest(views), *_check_legends(views), *_check_heatmap(views),
            *_check_clause_table(views), *_check_bound_sources(views),
            *_check_disabled(views), *_check_profile(views)]


def _same_number(a: object, b: object) -> bool:
    try:
        x, y = float(str(a)), float(str(b))
    except ValueError:
        return str(a) == str(b)
    return x == y or (math.isfinite(x) and math.isclose(x, y, rel_tol=1e-9))


def _key(nodeid: str) -> tuple[str, str]:
    """A case as JUnit names it: its module and its name."""
    module, _, name = nodeid.rpartition("::")
    return Path(module.split("::")[0]).stem, name


def _nodeid(record: ResultLine) -> str:
    """A line's pytest node id; a case never reached has only its case id (the same
    module and name)."""
    return str(record.get("nodeid") or record.get("case"))


def _judged(views: Views) -> list[ResultLine]:
    return [r for r in views.results if outcome(r) in ("passed", "failed", "error")]


def _family(record: ResultLine) -> str:
    return str(record.get("clause") or record.get("spec_key")).split("[", 1)[0]


def _check_results(views: Views) -> Iterator[str]:
    """results.jsonl itself: one line per case; the end record's counts are its lines'."""
    cases = Counter(str(r.get("case") or r.get("nodeid")) for r in views.results)
    for case, count in cases.items():
        if count > 1:
            yield f"results.jsonl: {case} has {count} result lines"
    for record in _judged(views):  # a storage case says the filesystem its key names
        named = re.fullmatch(r"storage\[(.+)\]\.[a-z_.]+", str(record.get("spec_key")))
        if named is not None and record.get("filesystem") != named[1]:
            yield (f"results.jsonl: {_nodeid(record)} has filesystem "
                   f"{record.get('filesystem')!r}, its spec_key {named[1]!r}")
        # a contract case that failed says its fault (code, action, who acts); one that
        # passed says none
        declared = fault_of(str(record.get("clause") or ""), record) if "case" in record \
            else None
        failed = outcome(record) in ("failed", "error")
        fault = tuple(record.get(key) for key in ("code", "action", "actor"))
        wanted = (declared[1].code, declared[1].action, declared[1].actor.value) \
            if failed and declared is not None else (None, None, None)
        if fault != wanted:
            yield f"results.jsonl: {_nodeid(record)} ({outcome(record)}) says fault {fault}"
    if views.end is None:
        yield "results.jsonl: no end record"
        return
    # the cases derived from the whole run (baseline, soak) are counted apart
    derived = [r for r in views.results if _family(r) in TESTS]
    counted = Counter(outcome(r) for r in views.results if _family(r) not in TESTS)
    for name, count in views.end["counts"].items():
        if counted.get(name, 0) != count:
            yield (f"results.jsonl: the end record counts {count} {name}, the lines "
                   f"{counted.get(name, 0)}")
    apart = Counter(outcome(r) for r in derived)
    said_apart = {k: v for k, v in (views.end.get("derived_counts") or {}).items() if v}
    if said_apart != dict(apart):
        yield (f"results.jsonl: the end record counts {said_apart} derived from the whole "
               f"run, the lines {dict(apart)}")
    compared = [r for r in derived if _family(r).startswith("baseline.")]
    said = views.end.get("baseline")
    if said is not None and (said["cases"], said["failed"]) != (
            len(compared), sum(outcome(r) != "passed" for r in compared)):
        yield (f"results.jsonl: the end record compares {said['cases']} cases with the "
               f"baseline ({said['failed']} failed), the lines {len(compared)}")


def _junit_cases(views: Views) -> dict[tuple[str, str], ET.Element]:
    return {(str(tc.get("classname")).rpartition(".")[2], str(tc.get("name"))): tc
            for tc in views.junit.iter("testcase")}


def _check_junit(views: Views) -> Iterator[str]:
    """Each case's outcome and figures in junit.xml (one never reached: no testcase, as
    the terminal counts it nowhere); the suite's counts, the end record's; its run
    properties."""
    cases = _junit_cases(views)
    for record in views.results:
        kind = outcome(record)
        tc = cases.get(_key(_nodeid(record)))
        if kind == "not_run":
            if tc is not None:
                yield f"junit.xml: a testcase for {_nodeid(record)}, which never ran"
            continue
        if tc is None:
            yield f"junit.xml: no testcase for {_nodeid(record)} ({kind})"
            continue
        said = next((JUNIT[child.tag] for child in tc if child.tag in JUNIT), "passed")
        if said != kind:
            yield f"junit.xml: {_nodeid(record)} is {said}, results.jsonl {kind}"
        props = {p.get("name"): p.get("value") for p in tc.iter("property")}
        for name in ("node", "gpu", "unit", "measured_base", "required_base",
                     "collective", "payload", "node_count", "code", "actor", "bound_source"):
            if name in record and record[name] is not None and name in props \
                    and not _same_number(props[name], record[name]):
                yield (f"junit.xml: {_nodeid(record)} {name} {props[name]!r}, "
                       f"results.jsonl {record[name]!r}")
            if name in record and record[name] not in (None, "") and name not in props:
                yield f"junit.xml: {_nodeid(record)} has no {name} ({record[name]!r})"
    suite = next(views.junit.iter("testsuite"))
    props = {p.get("name"): p.get("value") for p in suite.find("properties") or []}
    verdicts = {n["node"]: n["verdict"] for n in views.verdict["nodes"]}
    for name, verdict in (("nodes_accepted", "ACCEPTED"), ("nodes_rejected", "REJECTED"),
                          ("nodes_unreachable", "UNREACHABLE"),
                          ("nodes_not_checked", "NOT CHECKED")):
        listed = [n for n in (props.get(name) or "").split(",") if n]
        wanted = [n for n, v in verdicts.items() if v == verdict]
        if name in props and listed != wanted:
            yield f"junit.xml: {name} {listed}, verdict.json {wanted}"
    by_code: dict[str, list[str]] = {}  # the failed nodes by their first failure's code
    for entry in views.verdict["nodes"]:
        if entry.get("code") and entry["outcome"] == "FAIL":
            by_code.setdefault(entry["code"], []).append(entry["node"])
    wanted_codes = "; ".join(f"{code}: {','.join(nodes)}" for code, nodes in by_code.items())
    if props.get("fault_codes", "") != wanted_codes:
        yield f"junit.xml: fault_codes {props.get('fault_codes')!r}, verdict.json {wanted_codes!r}"
    if props.get("outcome") != views.verdict["outcome"]:
        yield (f"junit.xml: outcome {props.get('outcome')}, verdict.json "
               f"{views.verdict['outcome']}")
    failed = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
    bad = sum(outcome(r) in ("failed", "error") for r in views.results)
    if failed < bad:
        yield f"junit.xml: {failed} failures and errors, results.jsonl {bad} failed"
    if views.end is not None:
        counts: Counter[str] = (Counter(views.end["counts"])
                                + Counter(views.end.get("derived_counts", {})))
        if int(suite.get("skipped", 0)) != counts["skipped"]:
            yield (f"junit.xml: {suite.get('skipped')} skipped, the end record "
                   f"{counts['skipped']}")
        if int(props.get("not_run") or 0) != counts["not_run"]:
            yield (f"junit.xml: not_run {props.get('not_run')}, the end record "
                   f"{counts['not_run']}")


def _report_blob(report: str) -> dict[str, Any]:
    found = re.search(r'data-jsonblob="([^"]*)"', report)
    return json.loads(html.unescape(found.group(1))) if found else {}


def _why_agrees(why: str, node: dict[str, Any]) -> bool:
    """The Nodes table's "why" against verdict.json: a node with failed clauses shows
    their count and the first of them in its order, each with its figures (cut at a
    clause, 'and N more clause(s)' for the rest); any other node its reason."""
    if not node["failed_clauses"] or node["verdict"] != "REJECTED":
        # its reason, then its fault (a NOT CHECKED node's: what kept it undecided)
        fault = "".join(said for key, said in (
            ("code", f" {node.get('code')}"), ("action", f" action: {node.get('action')}"),
            ("actor", f" (by {node.get('actor')})")) if node.get(key))
        return html.unescape(re.sub(r"<[^>]*>", "", why)) == str(node["reason"]) + fault
    count = re.match(r"(\d+) clause\(s\) failed:", why)
    named = [html.unescape(n) for n in re.findall(r"<li><b>([^<]*)</b>", why)]
    more = re.search(r"<li>and (\d+) more clause\(s\)</li>", why)
    clauses = [str(clause) for clause in node["failed_clauses"]]
    return (count is not None and int(count.group(1)) == len(clauses)
            and named == clauses[:len(named)] and bool(named)
            and len(named) + (int(more.group(1)) if more else 0) == len(clauses))


def _check_what_failed(views: Views) -> Iterator[str]:
    """report.html's "What failed": each failed node (REJECTED, UNREACHABLE) in the spec's
    order with the clause of its first failure (verdict.json's first), those beyond the
    block's bound counted; a run where nothing failed says so."""
    block = re.search(r'<div id="what-failed">(.*?)</div>', views.report, re.S)
    if block is None:
        yield "report.html: no What failed block"
        return
    listed = [tuple(map(html.unescape, found)) for found in re.findall(
        r'<li><a href="#[^"]*">([^<]*)</a> <span[^>]*>([^<]*)</span>: <b>([^<]*)</b>',
        block.group(1))]
    failed = [(n["node"], n["verdict"], n["failures"][0]["clause"])
              for n in views.verdict["nodes"]
              if n["verdict"] in ("REJECTED", "UNREACHABLE") and n["failures"]]
    more = re.search(r"and (\d+) more node\(s\) failed", block.group(1))
    if listed != failed[:len(listed)] or len(listed) + (
            int(more.group(1)) if more else 0) != len(failed):
        yield f"report.html: What failed lists {listed}, verdict.json {failed}"
    nothing = "Nothing failed" in block.group(1)
    if nothing != (not failed and not views.verdict["cluster_checks_failed"]):
        yield (f"report.html: What failed says nothing failed: {nothing}, verdict.json "
               f"{len(failed)} failed node(s)")


def _check_report(views: Views) -> Iterator[str]:
    """report.html: pytest-html's row of each case that did not pass; the scorecard's
    node table; the matrix's failed cells."""
    tests = _report_blob(views.report).get("tests", {})
    for record in views.results:
        kind = outcome(record)
        rows = tests.get(_nodeid(record), [])
        shown = {HTML.get(str(row.get("result"))) for row in rows}
        if kind in ("failed", "error") and kind not in shown:
            yield f"report.html: {_nodeid(record)} shown {sorted(map(str, shown))}, is {kind}"
        if kind == "passed" and shown & {"failed", "error"}:
            yield f"report.html: {_nodeid(record)} shown failed, passed in results.jsonl"
    table = re.search(r'<table id="nodes">(.*?)</table>', views.report, re.S)
    rows = re.findall(r'<tr id="[^"]*"><td>([^<]*)</td><td[^>]*>([^<]*)</td><td>(.*?)</td></tr>',
                      table.group(1), re.S) if table else []
    shown_nodes = {html.unescape(node): (html.unescape(v), why) for node, v, why in rows}
    for node in views.verdict["nodes"]:
        if node["verdict"] == "ACCEPTED":
            if node["node"] in shown_nodes:
                yield f"report.html: {node['node']} listed as not accepted"
            continue
        verdict, why = shown_nodes.get(node["node"], ("", ""))
        if verdict != node["verdict"] or not _why_agrees(why, node):
            yield (f"report.html: {node['node']} shown {(verdict, why)}, "
                   f"verdict.json {(node['verdict'], node['reason'])}")
    yield from _check_what_failed(views)
    matrix = re.search(r'<table id="matrix">(.*?)</table>', views.report, re.S)
    if matrix:
        accepted = {n["node"] for n in views.verdict["nodes"] if n["verdict"] == "ACCEPTED"}
        for row in re.findall(r"<tr><th>([^<]*)</th>(.*?)</tr>", matrix.group(1)):
            node = html.unescape(row[0])
            if node in accepted and re.search(r'class="m-(fail|short)"', row[1]):
                yield f"report.html: the matrix shows a failed cell on accepted {node}"


def _check_clause_table(views: Views) -> Iterator[str]:
    """The scorecard's clause table counts cases, as every other view: each clause's
    passed and failed (with errors) are its result lines', and its "Every clause" row is
    what pytest's last line says."""
    wanted: dict[str, tuple[int, int]] = {}
    for r in _judged(views):
        passed, failed = wanted.get(str(r["spec_key"]), (0, 0))
        wanted[str(r["spec_key"])] = ((passed + 1, failed) if outcome(r) == "passed"
                                      else (passed, failed + 1))
    shown = {k: v for k, v in views.clauses.items() if k != EVERY_CLAUSE}
    for r in views.results:  # a clause every case of which was skipped (disabled): none
        if outcome(r) == "skipped":
            wanted.setdefault(str(r["spec_key"]), (0, 0))
    for clause in sorted(set(wanted) | set(shown)):
        if shown.get(clause) != wanted.get(clause):
            yield (f"report.html: the clause table shows {clause} (passed, failed) "
                   f"{shown.get(clause)}, results.jsonl {wanted.get(clause)}")
    if not wanted:
        return
    total = views.clauses.get(EVERY_CLAUSE)
    final = re.findall(r"^=+ (.*) in [\d.]+s.* =+$", views.terminal, re.M)
    said: Counter[str] = Counter()
    for n, kind in re.findall(r"(\d+) (failed|passed|errors?)", final[-1] if final else ""):
        said["passed" if kind == "passed" else "failed"] += int(n)
    if final and total != (said["passed"], said["failed"]):
        yield (f"report.html: the clause table's {EVERY_CLAUSE} row shows (passed, failed) "
               f"{total}, the terminal {(said['passed'], said['failed'])}")


def _check_profile(views: Views) -> Iterator[str]:
    """The profile the spec extends: results.jsonl's run line, verdict.json's `extends` and
    the report's header name the same one, or none."""
    verdict = str(views.verdict.get("extends", ""))
    shown = re.search(r'extends profile <span class="extends">(.*?)</span>', views.report)
    report = html.unescape(shown.group(1)) if shown else ""
    if verdict != views.extends:
        yield f"verdict.json: extends {verdict!r}, results.jsonl {views.extends!r}"
    if report != views.extends:
        yield f"report.html: extends profile {report!r}, results.jsonl {views.extends!r}"


def _check_bound_sources(views: Views) -> Iterator[str]:
    """Where a bound came from (the spec's profile): each clause's cases in results.jsonl
    say one source or none, and the clause table shows that one."""
    wanted: dict[str, set[str]] = {}
    for r in _judged(views):
        if "requirement" in r:  # a case that recorded its bound (a case may fail before)
            wanted.setdefault(str(r["spec_key"]), set()).add(str(r.get("bound_source") or ""))
    for clause in sorted(set(wanted) | set(views.sources)):
        said = wanted.get(clause, {""})
        if len(said) > 1:
            yield f"results.jsonl: the cases of {clause} say different bound sources {said}"
        elif views.sources.get(clause, "") != next(iter(said)):
            yield (f"report.html: the clause table shows {clause}'s bound from "
                   f"{views.sources.get(clause)!r}, results.jsonl {next(iter(said))!r}")


def _someone_answered(views: Views) -> bool:
    """Whether some node of the run answered: a case of a node's passed or failed for
    what the node said."""
    nodes = {n["node"] for n in views.verdict["nodes"]}
    return any(answered(r) for r in _judged(views) if r.get("node") in nodes)


def _blames(record: ResultLine, someone_answered: bool) -> bool:
    """Whether a failed case blames a node: its kind is one the verdict blames for, and
    it is no silence of a node in a run where no node answered (the controller's fault)."""
    if record.get("error_kind") in NOT_BLAMING:
        return False
    return someone_answered or not no_answer(record)


def _failed_against(views: Views, node: str) -> set[str]:
    """The clauses results.jsonl fails against `node`: its own failed cases, and the
    checks of several nodes that name it."""
    found = set()
    someone = _someone_answered(views)
    for r in _judged(views):
        if outcome(r) == "passed" or not _blames(r, someone):
            continue
        if r.get("node") == node or node in culprits(r):
            found.add(str(r.get("clause") or r.get("spec_key")))
    return found


def _codes_against(views: Views, node: str) -> set[str]:
    """The fault codes of the failures results.jsonl counts against `node`."""
    someone = _someone_answered(views)
    return {str(r["code"]) for r in _judged(views) if outcome(r) != "passed"
            and _blames(r, someone) and "code" in r
            and (r.get("node") == node or node in culprits(r))}


def _undecided_codes(views: Views, node: str) -> list[str]:
    """The fault codes of `node`'s own cases that failed without blaming it (an error kind
    NOT_BLAMING: DCGM's configuration finding, a busy node, this machine's fault), each
    once, in order: a NOT CHECKED node's codes, the first its code."""
    found: list[str] = []
    for r in _judged(views):
        if r.get("node") == node and outcome(r) != "passed" and \
                r.get("error_kind") in NOT_BLAMING and r.get("code") not in (None, *found):
            found.append(str(r["code"]))
    return found


def _check_verdicts(views: Views) -> Iterator[str]:
    """verdict.json against results.jsonl and the end record: each node's failed clauses
    are exactly the ones its cases (and the culprits named) failed; the drain lines are
    the failed nodes'; the run's verdict is the end record's."""
    document = views.verdict
    for node in document["nodes"]:
        failed = _failed_against(views, node["node"])
        if node["verdict"] == "REJECTED" and set(node["failed_clauses"]) != failed:
            yield (f"verdict.json: {node['node']} failed {sorted(node['failed_clauses'])}, "
                   f"results.jsonl {sorted(failed)}")
        if node["verdict"] in ("ACCEPTED", "NOT CHECKED") and failed:
            yield f"verdict.json: {node['node']} is {node['verdict']} but failed {sorted(failed)}"
        codes = _codes_against(views, node["node"])
        if node["verdict"] == "REJECTED" and set(node.get("codes", [])) != codes:
            yield (f"verdict.json: {node['node']} has codes {node.get('codes')}, "
                   f"results.jsonl {sorted(codes)}")
        if node["verdict"] in ("REJECTED", "UNREACHABLE") and \
                node.get("code") not in {*codes, None}:
            yield f"verdict.json: {node['node']} code {node.get('code')}, none of {codes}"
        # a NOT CHECKED node carries what kept it undecided: its undecided cases' codes
        undecided = _undecided_codes(views, node["node"])
        if node["verdict"] == "NOT CHECKED" and "codes" in node and (
                node["codes"] != undecided or node["code"] != (undecided or [""])[0]):
            yield (f"verdict.json: NOT CHECKED {node['node']} has codes {node['codes']} "
                   f"(first {node['code']!r}), its undecided cases {undecided}")
        if node["outcome"] != outcome_of(node["verdict"]):
            yield f"verdict.json: {node['node']} outcome {node['outcome']} for {node['verdict']}"
    drained = [n["node"] for n in document["nodes"] if n["outcome"] == "FAIL"]
    lines = document["drain"]
    if len(lines) != len(drained) or any(f"NodeName={n} " not in line
                                         for n, line in zip(drained, lines, strict=False)):
        yield f"verdict.json: drain lines {lines} for the failed nodes {drained}"
    for node, line in zip(drained, lines, strict=False):
        entry = next(n for n in document["nodes"] if n["node"] == node)
        reason = entry["reason"]
        # the reason starts with the code of the node's first failure, where it has one
        said = re.search(r"Reason=(?:(PC-[A-Z0-9-]+) )?pytest-cluster [a-z ]+: (.*?)'?$", line)
        if said and (said.group(1) or "") != entry.get("code", ""):
            yield (f"verdict.json: {node}'s drain reason starts with {said.group(1)!r}, its "
                   f"first failure's code is {entry.get('code')!r}")
        text = said.group(2) if said else ""
        if not (reason.startswith(text.removesuffix("...")) or (", and " in text
                and reason.startswith(text.split(", and ")[0]))):
            yield f"verdict.json: {node}'s drain reason {text!r} is not its reason {reason!r}"
    for check in document["cluster_checks_failed"]:
        for node in culprits(check):
            entry = next((n for n in document["nodes"] if n["node"] == node), None)
            if entry is not None and check["clause"] not in entry["failed_clauses"]:
                yield f"verdict.json: {node} named by {check['clause']} but not failed for it"
    if views.end is not None:
        for name in ("verdict", "status", "level", "levels", "nodes_in_spec"):
            if document[name] != views.end[name]:
                yield f"verdict.json: {name} {document[name]}, end record {views.end[name]}"
        if document["nodes_checked"] != len(views.end["nodes_covered"]):
            yield (f"verdict.json: nodes_checked {document['nodes_checked']}, the end "
                   f"record covers {views.end['nodes_covered']}")
        checked = {r.get("node") for r in views.results if outcome(r) != "not_run"}
        if set(views.end["nodes_covered"]) - checked:
            yield (f"results.jsonl: the end record covers {views.end['nodes_covered']}, "
                   f"no case ran on {sorted(set(views.end['nodes_covered']) - checked)}")
        if document.get("baseline") != views.end.get("baseline"):
            yield (f"verdict.json: baseline {document.get('baseline')}, end record "
                   f"{views.end.get('baseline')}")
        accepted = (views.end.get("baseline") or {}).get("accepted")
        if document.get("baseline_accepted") != accepted:
            yield (f"verdict.json: baseline_accepted {document.get('baseline_accepted')}, "
                   f"end record {accepted}")
        yield from _accepted_replacements(views, accepted or [])
        if document["ended_at"] != utc(views.end["ended_at"]):
            yield f"verdict.json: ended_at {document['ended_at']}, end record's differs"
        if document.get("made_at") != document["ended_at"] \
                or not document.get("valid_until", "") > document["ended_at"]:
            yield (f"verdict.json: made at {document.get('made_at')}, held until "
                   f"{document.get('valid_until')}: not the run's end and a time after it")


def _accepted_replacements(views: Views, accepted: list[dict[str, Any]]) -> Iterator[str]:
    """Each part --cluster-baseline-accept accepted is on its node's hardware line and the
    terminal, each seen nowhere is warned there, and no line lists one the end record
    does not."""
    listed = sorted((str(r.get("node")), part["part"], part["old"], part["new"])
                    for r in views.results if _family(r) == "baseline.hardware"
                    for part in r.get("accepted_replacements") or [])
    seen = sorted((s["node"], s["part"], s["old"], s["new"]) for each in accepted
                  for s in each["seen"])
    if listed != seen:
        yield f"results.jsonl: accepted replacements {listed}, the end record {seen}"
    for node, part, old, new in seen:
        words = f"  baseline: {node}: accepted replacement: {part} {old} -> {new} ("
        if words not in views.terminal:
            yield f"terminal: no line {words!r}"
    for each in accepted:
        if not each["seen"] and f"  baseline warning: {each['said']}" not in views.terminal:
            yield f"terminal: no warning {each['said']!r}"


def _check_terminal(views: Views) -> Iterator[str]:
    """The terminal's summary: the verdict line, the node counts, each node listed, the
    drain lines, pytest's own counts; no two identical lines."""
    text, document = views.terminal, views.verdict
    wanted = f"verdict: {document['verdict']} at level {document['level']} ({document['outcome']}"
    if wanted not in text:
        yield f"terminal: no line {wanted!r}"
    counted = Counter(n["verdict"] for n in document["nodes"])
    line = "nodes: " + ", ".join(f"{counted.get(v, 0)} {v}" for v in
                                 ("ACCEPTED", "REJECTED", "UNREACHABLE", "NOT CHECKED"))
    if line not in text:
        yield f"terminal: no line {line!r}"
    closing = (f"pytest-cluster: {document['verdict']} at level {document['level']} "
               f"({document['outcome']}): {line.removeprefix('nodes: ')}; ")
    if not any(said.startswith(closing) for said in text.splitlines()[-12:]):
        yield f"terminal: its last lines do not say {closing!r}"
    listed = dict(re.findall(r"^  (?:REJECTED|UNREACHABLE|NOT CHECKED) (\S+): (.*)$", text,
                             re.M))
    for node in document["nodes"]:
        # the reason, then the first failure's code, who acts and what to do (as verdict.json)
        fault = (f"; {node['code']}" + (f" ({node['actor']})" if node.get("actor") else "")
                 + (f": {node['action']}" if node.get("action") else "")
                 if node.get("code") else "")
        if node["node"] in listed and listed[node["node"]] != node["reason"] + fault:
            yield (f"terminal: {node['node']}: {listed[node['node']]!r}, verdict.json "
                   f"{node['reason']!r}")
    baseline = views.end.get("baseline") if views.end is not None else None
    if baseline is not None:  # the baseline line says how its signature stood
        words = signature_said(baseline["signature"], baseline["signature_key"])
        if not re.search(rf"^(\[SIMULATED\] )?baseline: compared with .*; {re.escape(words)}\)",
                         text, re.M):
            yield f"terminal: the baseline line does not say {words!r}"
    for drain in document["drain"]:
        if drain not in text and len(document["drain"]) <= 20:
            yield f"terminal: the drain line {drain!r} is not printed"
    summary = [line for line in text.splitlines() if line.startswith("  cluster check failed")]
    for line, count in Counter(summary).items():
        if count > 1:
            yield f"terminal: {count} identical lines {line!r}"
    final = re.findall(r"^=+ (.*) in [\d.]+s.* =+$", text, re.M)
    tail = re.findall(r"(\d+) (failed|passed|errors?|skipped)", final[-1] if final else "")
    said = {("error" if kind.startswith("error") else kind): int(n) for n, kind in tail}
    counted = Counter(outcome(r) for r in views.results)
    for kind in ("passed", "failed"):
        if kind in said and said[kind] != counted.get(kind, 0):
            yield f"terminal: pytest says {said[kind]} {kind}, results.jsonl {counted.get(kind, 0)}"
    if final and views.end is not None:  # a case not run is no case pytest counts
        counts: Counter[str] = (Counter(views.end["counts"])
                                + Counter(views.end.get("derived_counts", {})))
        if said.get("skipped", 0) != counts["skipped"]:
            yield (f"terminal: pytest says {said.get('skipped', 0)} skipped, the end record "
                   f"{counts['skipped']}")


def _check_metrics(views: Views) -> Iterator[str]:
    """The Prometheus file: one check_passed and one check_judged per judged case with
    its labels, equal to its outcome and to whether it blames its node; measured and bound
    in base units; each node's verdict; the run's."""
    if views.metrics is None:
        return
    found = views.metrics
    passed = {tuple(labels[n] for n in CASE_LABELS[2:10]): value
              for labels, value in found.get("pytest_cluster_check_passed", [])}
    figures: dict[tuple[str, ...], float] = {}
    for name, samples in found.items():
        if name.startswith("pytest_cluster_check_measured"):
            figures.update({tuple(labels[n] for n in CASE_LABELS[2:10]): value
                            for labels, value in samples})
    decided = {tuple(labels[n] for n in CASE_LABELS[2:10]): value
               for labels, value in found.get("pytest_cluster_check_judged", [])}
    judged = _judged(views)
    someone = _someone_answered(views)
    if len(passed) != len(judged) or len(decided) != len(judged):
        yield (f"metrics: {len(passed)} check_passed and {len(decided)} check_judged "
               f"samples for {len(judged)} judged cases")
    for r in judged:
        key = tuple("" if r.get(n) is None else str(r.get(n)) for n in (
            "spec_key", "node", "gpu", "filesystem", "collective", "payload", "node_count",
            "rail"))
        value = passed.get(key)
        if value != (1.0 if outcome(r) == "passed" else 0.0):
            yield f"metrics: check_passed {value} for {r['nodeid']} ({outcome(r)})"
        # 0 exactly where the case failed with a kind the verdict blames no node for
        blames = outcome(r) == "passed" or _blames(r, someone)
        if decided.get(key) != (1.0 if blames else 0.0):
            yield (f"metrics: check_judged {decided.get(key)} for {r['nodeid']} "
                   f"({outcome(r)}, {r.get('error_kind')})")
        number = r.get("measured_base")
        if isinstance(number, (int, float)) and not isinstance(number, bool) \
                and "required_base" in r and not _same_number(figures.get(key), number):
            yield f"metrics: measured {figures.get(key)} for {r['nodeid']}, results {number}"
    codes: dict[str, set[str]] = {}  # each node's fault codes
    firsts: dict[str, list[str]] = {}  # ... and those labelled its first failure's
    for labels, _ in found.get("pytest_cluster_node_fault", []):
        codes.setdefault(labels["node"], set()).add(labels["code"])
        if labels["first"] == "true":
            firsts.setdefault(labels["node"], []).append(labels["code"])
    for node in views.verdict["nodes"]:
        first = node.get("code", "")
        wanted_codes = set(node.get("codes", [])) | ({first} if first else set())
        if codes.get(node["node"], set()) != wanted_codes or \
                firsts.get(node["node"], []) != ([first] if first else []):
            yield (f"metrics: node_fault {sorted(codes.get(node['node'], ()))} on "
                   f"{node['node']} (first {firsts.get(node['node'])}), verdict.json "
                   f"{sorted(wanted_codes)} (first {first!r})")
    nodes = {labels["node"]: labels["verdict"]
             for labels, _ in found.get("pytest_cluster_node_verdict", [])}
    wanted = {n["node"]: n["verdict"] for n in views.verdict["nodes"]}
    if nodes != wanted:
        yield f"metrics: node verdicts {nodes}, verdict.json {wanted}"
    for labels, _ in found.get("pytest_cluster_run_info", []):
        for name in ("verdict", "outcome", "level", "status"):
            if labels[name] != views.verdict[name]:
                yield f"metrics: run {name} {labels[name]}, verdict.json {views.verdict[name]}"
    if views.end is not None and found.get("pytest_cluster_run_info"):
        for family, field in (("pytest_cluster_run_checks", "counts"),
                              ("pytest_cluster_run_derived_checks", "derived_counts")):
            said = {labels["outcome"]: value for labels, value in found.get(family, [])}
            wanted = dict(views.end.get(field) or {})
            if said != wanted:
                yield f"metrics: {family} {said}, the end record's {field} {wanted}"


def _check_clause_metrics(views: Views) -> Iterator[str]:
    """The metrics' clause samples: clause_passed 0 where a case of the clause failed on
    the node (or named it); clause_judged 0 where those failures could not be judged; a
    clause failed and judged on a node exactly where verdict.json fails the node for it."""
    if views.metrics is None:
        return
    found = views.metrics
    expected: dict[tuple[str, str], float] = {}
    blamed: set[tuple[str, str]] = set()  # failed against the node
    unjudged: set[tuple[str, str]] = set()  # failed, but could not be judged
    family: dict[str, str] = {}  # the metrics' clause label -> verdict.json's clause
    someone = _someone_answered(views)
    for r in _judged(views):
        key = (str(r.get("spec_key")), str(r.get("node")))
        family[key[0]] = str(r.get("clause") or r.get("spec_key"))
        bad = outcome(r) != "passed"
        expected[key] = min(expected.get(key, 1.0), 0.0 if bad else 1.0)
        if bad and _blames(r, someone):
            blamed.add(key)
            for node in culprits(r):
                expected[(key[0], node)] = 0.0
                blamed.add((key[0], node))
        elif bad:
            unjudged.add(key)
    shown = {(labels["clause"], labels["node"]): value
             for labels, value in found.get("pytest_cluster_clause_passed", [])}
    for key in sorted(set(shown) | set(expected)):
        if shown.get(key) != expected.get(key):
            yield (f"metrics: clause_passed {shown.get(key)} for {key[0]} on {key[1]}, "
                   f"results.jsonl {expected.get(key)}")
    ruled = {(labels["clause"], labels["node"]): value
             for labels, value in found.get("pytest_cluster_clause_judged", [])}
    for key in sorted(set(ruled) | set(expected)):
        wanted = 0.0 if key in unjudged and key not in blamed else 1.0
        if ruled.get(key) != (wanted if key in expected else None):
            yield (f"metrics: clause_judged {ruled.get(key)} for {key[0]} on {key[1]}, "
                   f"results.jsonl {wanted if key in expected else None}")
    # a per-node alert on a failed clause that was judged fires exactly on the clauses
    # verdict.json fails the node for
    for node in views.verdict["nodes"]:
        alerting = {family.get(clause, clause) for (clause, name), value in shown.items()
                    if name == node["node"] and value == 0.0
                    and ruled.get((clause, name)) == 1.0}
        if alerting != set(node["failed_clauses"]):
            yield (f"metrics: clause_passed 0 and clause_judged 1 on {node['node']} for "
                   f"{sorted(alerting)}, verdict.json ({node['verdict']}) fails "
                   f"{sorted(node['failed_clauses'])}")


def _check_manifest(views: Views) -> Iterator[str]:
    """The manifest lists every evidence file as it is, and says the run's times."""
    checked = verify(views.run)
    if not checked.files_hold:
        yield (f"manifest: files do not hold: changed {checked.changed}, missing "
               f"{checked.missing}, added {checked.added}")
    for name in ("ended_at", "started_at"):
        if checked.predicate.get(name) != views.verdict.get(name):
            yield (f"manifest: {name} {checked.predicate.get(name)}, verdict.json "
                   f"{views.verdict.get(name)}")


def _check_legends(views: Views) -> Iterator[str]:
    """The plots: a node a legend calls the slowest (fastest) is the one with the lowest
    (highest) busbw among the single-node runs of that collective, by its worst case."""
    for chart in re.findall(r'<svg[^>]*aria-label="([^"]*): busbw vs payload"(.*?)</svg>',
                            views.report, re.S):
        collective = html.unescape(chart[0])
        worst: dict[str, float] = {}
        for r in _judged(views):
            if r.get("clause") == "interconnect.busbw[intra_node]" \
                    and r.get("collective") == collective \
                    and isinstance(r.get("measured_base"), (int, float)):
                node = str(r["node"])
                worst[node] = min(worst.get(node, math.inf), float(r["measured_base"]))
        if not worst:
            continue
        for label, which in re.findall(r">([^<>]+) \((slowest|fastest) node\)<", chart[1]):
            pick = min if which == "slowest" else max
            best = pick(worst.values())
            if not math.isclose(worst.get(html.unescape(label), math.nan), best):
                yield (f"report.html: {collective} legend calls {label} the {which} node; "
                       f"its busbw {worst.get(label)}, the {which} {best}")


LATENCY = ("interconnect.latency", "interconnect.colocation")


def _latency_cases(views: Views) -> tuple[dict[str, float], set[int], Record | None, set[str]]:
    """What results.jsonl's latency and colocation cases say: each node's median to its
    peers (us), the sizes judged, the first matrix kept, the nodes colocation failed."""
    medians: dict[str, float] = {}
    sizes: set[int] = set()
    matrix: Record | None = None
    far: set[str] = set()
    for r in views.results:
        if r.get("spec_key") not in LATENCY:
            continue
        raw = r.get("raw") or {}
        if isinstance(raw.get("median_us"), (int, float)):
            medians[str(r["node"])] = float(raw["median_us"])
        if isinstance(raw.get("size"), int):
            sizes.add(raw["size"])
        if matrix is None and isinstance(raw.get("matrix_us"), dict):
            matrix = raw["matrix_us"]
        if r["spec_key"] == "interconnect.colocation" and outcome(r) == "failed" \
                and not r.get("error_kind"):
            far.add(str(r["node"]))
    return medians, sizes, matrix, far


def _check_heatmap(views: Views) -> Iterator[str]:
    """The latency heat map: its caption names the node with the highest median to its
    peers among the latency and colocation cases (one the colocation check failed, when it
    failed any), at the size they judged and over as many nodes; each drawn cell is that
    pair's one-way latency in the cases' matrix."""
    medians, sizes, matrix, far = _latency_cases(views)
    figure = re.search(r'<figure id="latency-heatmap">(.*?)</figure>', views.report, re.S)
    if not medians:
        if figure:
            yield "report.html: a latency heat map, but no latency case has a median"
        return
    if figure is None:
        yield f"report.html: no latency heat map for the medians of {len(medians)} node(s)"
        return
    caption = re.search(r"<figcaption>(.*?)</figcaption>", figure.group(1), re.S)
    text = caption.group(1) if caption else ""
    named = re.search(r"Farthest node: <b>([^<]*)</b>, median ([\d.]+) us", text)
    shown, said = (html.unescape(named.group(1)), float(named.group(2))) if named \
        else (None, math.nan)
    highest = max(medians.values())
    if shown is None or not math.isclose(medians.get(shown, math.nan), highest):
        tops = ", ".join(sorted(n for n, m in medians.items() if m == highest))
        yield (f"report.html: the latency heat map names {shown} the farthest node "
               f"({medians.get(str(shown))} us); results.jsonl's highest median is "
               f"{highest} us ({tops})")
    elif not math.isclose(said, highest, rel_tol=1e-3):
        yield (f"report.html: the latency heat map says {shown}'s median {said} us, "
               f"results.jsonl {highest} us")
    if far and shown not in far:
        yield (f"report.html: the latency heat map names {shown} the farthest node; "
               f"colocation failed {sorted(far)}")
    at = re.search(r"One-way latency (?:between node pairs )?at ([^,]+), (\d+) nodes", text)
    size = parse_quantity(html.unescape(at.group(1)), Dim.SIZE).value if at else None
    if size not in sizes:
        yield (f"report.html: the latency heat map is at {size} bytes, the cases at "
               f"{sorted(sizes)}")
    if matrix is not None and at and int(at.group(2)) != len(matrix["nodes"]):
        yield (f"report.html: the latency heat map says {at.group(2)} nodes, the cases' "
               f"matrix {len(matrix['nodes'])}")
    cells = re.findall(r'<rect class="pair"[^>]*><title>([^<]*) to ([^<]*): ([\d.]+) us'
                       r"</title>", figure.group(1))
    if matrix is None:
        if cells:
            yield "report.html: the latency heat map draws cells; no case kept a matrix"
        return
    index = {node: i for i, node in enumerate(matrix["nodes"])}
    measured = sum(v is not None for i, row in enumerate(matrix["one_way"])
                   for j, v in enumerate(row) if i != j)
    if len(cells) != measured:
        yield (f"report.html: the latency heat map draws {len(cells)} pairs, the matrix "
               f"has {measured}")
    for a, b, value in cells:
        i, j = index.get(html.unescape(a)), index.get(html.unescape(b))
        wanted = matrix["one_way"][i][j] if i is not None and j is not None else None
        if wanted is None or not math.isclose(float(value), wanted, rel_tol=1e-3):
            yield (f"report.html: the latency heat map shows {a} to {b} {value} us, the "
                   f"matrix {wanted}")


def _check_disabled(views: Views) -> Iterator[str]:
    """The kill switch (--cluster-disable): each case it turned off is skipped in every
    view, saying "disabled: <reason>, until <until>", never passed; verdict.json's
    `disabled` (the end record's) counts its clauses' cases as results.jsonl has them and
    the terminal names each; the entries that expired are said on the terminal."""
    listed = {str(e["clause"]): e for e in views.verdict.get("disabled", [])}
    junit = _junit_cases(views)
    counted: Counter[str] = Counter()
    for record in views.results:
        clause = record.get("disabled")
        if clause is None:
            continue
        counted[str(clause)] += 1
        entry = listed.get(str(clause))
        if outcome(record) != "skipped":
            yield f"results.jsonl: {_nodeid(record)} is disabled but {outcome(record)}"
        if entry is None:
            yield f"verdict.json: {clause} is not listed disabled, {_nodeid(record)} is"
            continue
        said = f"disabled: {entry['reason']}, until {entry['until']}"
        if said not in str(record.get("message")):
            yield f"results.jsonl: {_nodeid(record)} does not say {said!r}"
        tc = junit.get(_key(_nodeid(record)))
        skipped = tc.find("skipped") if tc is not None else None
        if skipped is None or said not in str(skipped.get("message")):
            yield f"junit.xml: {_nodeid(record)} is not skipped saying {said!r}"
    for clause, entry in listed.items():
        if entry.get("cases") != counted[clause]:
            yield (f"verdict.json: {clause} disabled {entry.get('cases')} cases, "
                   f"results.jsonl {counted[clause]}")
        if f"disabled (--cluster-disable): {clause} until {entry['until']}" not in \
                views.terminal:
            yield f"terminal: no line saying {clause} is disabled"
    for entry in views.verdict.get("disabled_expired", []):
        if f"the disable entry of {entry['clause']} expired" not in views.terminal:
            yield f"terminal: no warning that {entry['clause']}'s disable entry expired"
    if views.end is not None:
        for name in ("disabled", "disabled_expired"):
            if views.verdict.get(name) != views.end.get(name):
                yield f"verdict.json: {name} {views.verdict.get(name)}, end record's differs"
    for node in views.verdict["nodes"]:
        ran = sum(1 for r in views.results if r.get("node") == node["node"]
                  and r.get("disabled") is not None)
        if node.get("checks_disabled", 0) != ran:
            yield (f"verdict.json: {node['node']} checks_disabled "
                   f"{node.get('checks_disabled')}, results.jsonl {ran}")


def check(run: Path, terminal: str, metrics: Path | None = None) -> list[str]:
    """The disagreements of the run in `run` (read_views, disagreements)."""
    return disagreements(read_views(run, terminal, metrics))


def by_case(records: list[Record]) -> Mapping[str, Record]:
    return {str(r["case"]): r for r in records}
