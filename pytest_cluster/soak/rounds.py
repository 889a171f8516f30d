"""A soak (--cluster-soak=48h, --cluster-soak-rounds=N): the selected suite repeated in
rounds, each round a whole ordinary run with its own sealed evidence, and what only the
rounds together can say.

    SOAK/                       the soak's own evidence (results.jsonl, junit.xml, ...)
    SOAK/soak.json              what the soak is: spec, its start, its time and rounds
    SOAK/spec.yaml              the spec the soak started with: every round runs it
    SOAK/rounds/round-0001/     round 1: an ordinary run directory, sealed
    SOAK/logs/round-0001.log    what round 1 printed
    SOAK/logs/session-0004.json a resumed session's mark: round 4 is the first it ran
    SOAK/stops/stop-01/         the soak's own evidence as an earlier, stopped session left it

Pure functions over the rounds' directories: which rounds there are, what each says per
node (healthy, failed, unreachable), the nodes' timelines, the counters that grew, the
figures that did not stay steady, and the command line of a round. soak/driver.py runs
the rounds and reports these as cases.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TypedDict

from pytest_cluster.evidence.sinks.results import ResultLine, read_results
from pytest_cluster.evidence.verdict.nodes import ACCEPTED, REJECTED
from pytest_cluster.evidence.verdict.nodes import UNREACHABLE as UNREACHABLE_VERDICT
from pytest_cluster.evidence.verdict.sla import FAILED, HEALTHY, UNREACHABLE
from pytest_cluster.evidence.verdict.timelines import Round
from pytest_cluster.units import MAX_DURATION_S, utc

SOAK_FILE = "soak.json"
SPEC_FILE = "spec.yaml"
ROUNDS_DIR = "rounds"
LOGS_DIR = "logs"
STOPS_DIR = "stops"
#: What a soak keeps from session to session; anything else in its directory is the
#: evidence of the session that wrote it, moved to stops/ when the soak is resumed.
KEPT = (SOAK_FILE, SPEC_FILE, ROUNDS_DIR, LOGS_DIR, STOPS_DIR)
_ROUND = re.compile(r"^round-(\d{4,})$")
_SESSION = re.compile(r"^session-(\d{4,})\.json$")
_LOG = re.compile(r"^round-(\d{4,})\.log$")

#: Options of the soak's own command line that a round does not take: the soak's, the
#: spec (each round runs the soak's copy, SOAK/spec.yaml) and where its evidence goes
#: (each round writes into SOAK/rounds/round-NNNN).
ROUND_DROPS_VALUED = ("--cluster", "--cluster-soak", "--cluster-soak-rounds",
                      "--cluster-soak-resume", "--cluster-soak-round", "--cluster-reports",
                      "--junitxml", "--junit-xml", "--html", "--cluster-metrics")
ROUND_DROPS_FLAGS = ("--self-contained-html",)


class SoakError(Exception):
    """A soak that cannot go on as asked (a bad duration, a directory that is no soak)."""


#: The most rounds one may ask for (the longest soak: units.MAX_DURATION_S): beyond it a
#: value is a slip.
MAX_ROUNDS = 1_000_000


def parse_rounds(raw: str) -> int:
    """A number of rounds: a whole number from 1 to MAX_ROUNDS, written in digits."""
    text = raw.strip()
    if not text.isdigit() or not text.isascii():
        raise SoakError(f"expected a whole number of rounds from 1 to {MAX_ROUNDS:,} like "
                        f"48, got {raw[:40]!r}")
    if len(text) > 7 or not 1 <= int(text) <= MAX_ROUNDS:
        raise SoakError(f"expected a whole number of rounds from 1 to {MAX_ROUNDS:,}, got "
                        f"{text[:40]}")
    return int(text)


def round_name(number: int) -> str:
    return f"round-{number:04d}"


def round_argv(python: str, args: Sequence[str], rounds_dir: Path, number: int,
               spec: Path) -> list[str]:
    """The command line of round `number`: the soak's own, without the soak's options and
    its report paths, writing into `rounds_dir/round-NNNN`, checking the spec in `spec`
    (the soak's pinned copy; given last, so it wins over a --cluster in addopts too)."""
    kept: list[str] = []
    skip_value = False
    for arg in args:
        if skip_value:
            skip_value = False
            continue
        name, equals, _ = arg.partition("=")
        if name in ROUND_DROPS_VALUED:
            skip_value = not equals
            continue
        if arg in ROUND_DROPS_FLAGS:
            continue
        kept.append(arg)
    return [python, "-m", "pytest", *kept, f"--cluster={spec}",
            f"--cluster-reports={rounds_dir}", f"--cluster-soak-round={number}"]


#: The largest spec file read (contract/loader.py's MAX_SPEC_BYTES; not imported from there,
#: which would put the whole spec parser under the soak's pure functions).
MAX_SPEC_BYTES = 4 * 2**20


def pin_spec(soak_dir: Path, text: str, spec_sha256: str) -> Path:
    """The soak's copy of the spec it started with (SOAK/spec.yaml), which every round
    runs: written once, from the text the soak read (a soak resumed from a version that
    kept none gets it now: its spec is the one it was started with, resume_dir checked);
    a copy there that is not that spec is refused."""
    path = soak_dir / SPEC_FILE
    with contextlib.suppress(FileExistsError), path.open("xb") as pinned:
        pinned.write(text.encode("utf-8"))
    found = file_sha256(path, follow=False)
    if found != spec_sha256:
        raise SoakError(f"{path} is not the spec this soak started with (sha256 "
                        f"{(found or 'unreadable')[:16]}..., the soak's "
                        f"{spec_sha256[:16]}...)")
    return path


def file_sha256(path: Path, follow: bool = True) -> str | None:
    """The sha256 of a spec file's bytes, as the soak's record gives its spec's; None when
    it is no plain file of at most a spec's size (a link, unless `follow`), or cannot be
    read."""
    try:
        if not stat.S_ISREG(os.stat(path, follow_symlinks=follow).st_mode):
            return None
        # O_NONBLOCK: a FIFO swapped in since is not waited on
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
                     | (0 if follow else getattr(os, "O_NOFOLLOW", 0)))
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            data = handle.read(MAX_SPEC_BYTES + 1)
    except OSError:
        return None
    return hashlib.sha256(data).hexdigest() if len(data) <= MAX_SPEC_BYTES else None


def round_numbers(soak_dir: Path) -> list[int]:
    """The rounds a soak directory holds, in order."""
    where = soak_dir / ROUNDS_DIR
    if not where.is_dir():
        return []
    found = (_ROUND.match(p.name) for p in where.iterdir() if p.is_dir())
    return sorted(int(m.group(1)) for m in found if m)


def next_round(soak_dir: Path) -> int:
    """The number of the soak's next round: after every round it holds and every round
    it has a log of (a round that could not start, or was stopped as it started, left a
    log and no directory: its number is not used again, so its log stays as it was, as
    the manifest of the session that wrote it says)."""
    logs = soak_dir / LOGS_DIR
    logged = (_LOG.match(p.name) for p in logs.iterdir()) if logs.is_dir() else iter(())
    return max([*round_numbers(soak_dir), *(int(m.group(1)) for m in logged if m)],
               default=0) + 1


#: How a simulated result's message starts.
SIM_MARK = "[SIMULATED] "
#: Failure spells a case's message names one by one, and how much of each it quotes.
MAX_SPELLS, MAX_SAID = 5, 400


# -- resuming ----------------------------------------------------------------------------------

def begin_session(soak_dir: Path, first: int) -> None:
    """Mark round `first` as the first of a resumed session (logs/session-NNNN.json,
    written once: a session that ran no round leaves the mark to the next): the pause
    before it is no pause between rounds, and is not observed."""
    logs = soak_dir / LOGS_DIR
    logs.mkdir(exist_ok=True)
    now = time.time()
    with contextlib.suppress(FileExistsError), \
            (logs / f"session-{first:04d}.json").open("x", encoding="utf-8") as mark:
        mark.write(json.dumps({"first_round": first, "started_at": now,
                               "started_utc": utc(now)}, sort_keys=True,
                              allow_nan=False) + "\n")


def session_firsts(soak_dir: Path) -> set[int]:
    """The rounds resumed sessions began with, from their marks' names."""
    logs = soak_dir / LOGS_DIR
    if not logs.is_dir():
        return set()
    found = (_SESSION.match(p.name) for p in logs.iterdir())
    return {int(m.group(1)) for m in found if m}


def resume_dir(soak_dir: Path, spec_sha256: str) -> list[str]:
    """Make an earlier soak's directory ready to go on: it must be a soak of this spec;
    the evidence its last session wrote moves to stops/stop-NN. What moved is returned."""
    marker = soak_dir / SOAK_FILE
    if not marker.is_file():
        raise SoakError(f"{soak_dir} is not a soak's directory (no {SOAK_FILE})")
    known = read_marker(marker)
    if known["spec_sha256"] != spec_sha256:
        raise SoakError(f"{soak_dir} is a soak of another spec (sha256 "
                             f"{str(known['spec_sha256'])[:16]}..., this one "
                             f"{spec_sha256[:16]}...)")
    pinned = soak_dir / SPEC_FILE
    if (pinned.exists() or pinned.is_symlink()) and \
            file_sha256(pinned, follow=False) != spec_sha256:
        raise SoakError(f"{pinned} is not the spec this soak started with (its soak.json "
                        f"says sha256 {spec_sha256[:16]}...)")
    stale = [p for p in soak_dir.iterdir() if p.name not in KEPT]
    if not stale:
        return []
    stops = soak_dir / STOPS_DIR
    stops.mkdir(exist_ok=True)
    number = len([p for p in stops.iterdir() if p.name.startswith("stop-")]) + 1
    target = stops / f"stop-{number:02d}"
    target.mkdir()
    for path in stale:
        path.rename(target / path.name)
    return [p.name for p in stale]


#: soak.json is a few hundred bytes; a larger one is not ours.
MARKER_MOST = 64 * 1024


class SoakMarker(TypedDict):
    """What a soak's soak.json says that a resumed soak reads (read_marker checked it)."""

    spec_sha256: str | None  # the spec the soak began with (None: not a text)
    duration_s: float | None  # as asked (--cluster-soak); None: rounds only
    max_rounds: int | None


def read_marker(marker: Path) -> SoakMarker:
    """A soak's soak.json, checked as the untrusted input it is on resuming: bounded, an
    object, its duration and round count within what a soak may be asked for."""
    try:
        if marker.is_symlink() or marker.stat().st_size > MARKER_MOST:
            raise SoakError(f"{marker}: expected a soak's soak.json (a plain file of at most "
                            f"{MARKER_MOST // 1024} KiB)")
        known = json.loads(marker.read_bytes())
    except (OSError, ValueError, RecursionError) as exc:
        raise SoakError(f"{marker} cannot be read: {str(exc)[:200]}") from None
    if not isinstance(known, dict):
        raise SoakError(f"{marker}: expected a JSON object")
    duration, most = known.get("duration_s"), known.get("max_rounds")
    if duration is not None and (isinstance(duration, bool)
                                 or not isinstance(duration, (int, float))
                                 or not 0 < duration <= MAX_DURATION_S):
        raise SoakError(f"{marker}: duration_s: expected seconds above 0 and at most a year, "
                        f"got {str(duration)[:40]}")
    if most is not None and (isinstance(most, bool) or not isinstance(most, int)
                             or not 1 <= most <= MAX_ROUNDS):
        raise SoakError(f"{marker}: max_rounds: expected a whole number from 1 to "
                        f"{MAX_ROUNDS:,}, got {str(most)[:40]}")
    sha256 = known.get("spec_sha256")
    return {"spec_sha256": sha256 if isinstance(sha256, str) else None,
            "duration_s": duration, "max_rounds": most}


# -- one round --------------------------------------------------------------------------------

def node_state(entry: Mapping[str, object]) -> str | None:
    """A node's state over a round from its verdict: failed or unreachable as soon as one
    of its checks saw so; healthy only when every check of it that the round selected ran
    and passed (ACCEPTED); None when the round did not judge it (it was stopped before
    every check of the node ran, deselected, busy under SLURM): not observed in that
    round, neither up nor down."""
    verdict = entry.get("verdict")
    if verdict == UNREACHABLE_VERDICT:
        return UNREACHABLE
    if verdict == REJECTED:
        return FAILED
    return HEALTHY if verdict == ACCEPTED else None


def read_round(path: Path, number: int) -> tuple[Round, list[ResultLine]] | None:
    """The round in `path` and its result lines (read once, for the soak's tally); None
    when it left no results (it never started its checks)."""
    results_path = path / "results.jsonl"
    if not results_path.is_file():
        return None
    found = read_results(results_path)
    started = float(found.run.get("started_at") or 0.0)
    finished = [float(r["finished_at"]) for r in found.results
                if isinstance(r.get("finished_at"), (int, float))]
    ended = float(found.end["ended_at"]) if found.end is not None else \
        max(finished, default=started)
    states: dict[str, str] = {}
    with contextlib.suppress(*UNREADABLE):
        verdict = json.loads((path / "verdict.json").read_text(encoding="utf-8"))
        for entry in verdict.get("nodes") or []:
            state = node_state(entry) if isinstance(entry, dict) else None
            if state is not None:
                states[str(entry.get("node"))] = state
    counts = dict(found.end.get("counts") or {}) if found.end is not None else {}
    return Round(number, path, started, ended, found.status, states, counts), found.results


#: What a file a killed round left half-written raises as it is read: nothing is taken
#: from it.
UNREADABLE = (OSError, ValueError, TypeError)


#: Where a hang's message says what NCCL's RAS said (measure/nccl_ras.py), and the most
#: of it a round line keeps, and the most cases.
RAS_MARK = "NCCL RAS"
MAX_RAS_TEXT = 600
MAX_RAS_CASES = 32


def ras_summaries(results: Sequence[ResultLine]) -> list[dict[str, str]]:
    """What NCCL's RAS said in a round's hung jobs: per case whose message carries it (a
    collective or training job that hung past its bound; its ranks asked RAS while it
    hung), the case, its node and RAS's words, each text once. RAS answers only while a
    job runs on the node, so a round's summary is what its hung jobs' ranks asked, never
    a query of the controller's between jobs (nothing listens then)."""
    found: list[dict[str, str]] = []
    seen: set[str] = set()
    for record in results:
        message = str(record.get("message") or "")
        at = message.find(RAS_MARK)
        if at < 0:
            continue
        text = message[at:at + MAX_RAS_TEXT]
        if text in seen:
            continue
        seen.add(text)
        found.append({"nodeid": str(record.get("nodeid", ""))[:300],
                      "node": str(record.get("node", ""))[:200], "ras": text})
        if len(found) == MAX_RAS_CASES:
            break
    return found
