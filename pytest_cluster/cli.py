"""The `pytest-cluster` command: what is done with a run's evidence after the run.

    pytest-cluster verify DIR [--key PUBKEY [--require-signature]]
    pytest-cluster gate DIR --exit-status N [--log FILE] [--since EPOCH] [--max-age DURATION]
                        [--drain] [--resume]
    pytest-cluster check SPEC [--disable FILE]

`check` validates a contract (and a disable file, --cluster-disable's) as a run reads them,
without running anything or contacting a node: exit 0 and a line each saying so, or
CHECK_INVALID (4, a run's usage error) with every problem at FILE:LINE; a file that cannot
be read (missing, a FIFO, too large, not UTF-8) is such a problem.

`gate` says what a gate does with a run (evidence/verdict/gate.py): PASS (exit 0), FAIL (exit 1:
take the failed nodes out; --drain drains them with scontrol) or ERROR (exit 2: the tool
could not judge; never drains), one line per reason. A verdict past its valid_until, or
made longer ago than --max-age, is stale: an ERROR. --resume puts back the nodes the run
accepted that pytest-cluster drained; a node drained by someone else keeps its drain and
its reason (evidence/verdict/resume.py). What SLURM did or refused never changes the exit.

`verify`:
Its last line states the files (FILES MATCH / FILES CHANGED) and the signature (SIGNED BY
the key given / UNSIGNED / SIGNATURE NOT CHECKED: signed, no --key / SIGNATURE INVALID)
apart; it starts with VERIFIED only when the files match and the --key given signed them.
It exits with a VerifyExit, each listed with its meaning in `verify --help`:
0 when every file of DIR is as its manifest lists it (and, with --key, the manifest is
signed by that key), 1 when a file differs (or, with --key, the signature is not that
key's), 2 when DIR, its manifest or the key cannot be read as one (one line, on stderr) or
the command line is wrong, 130 when Ctrl-C stopped it first (one line, on stderr).
--require-signature makes a signature by --key's key a condition of exit 0 said out loud:
without --key it is a usage error, so a script that asks for a signature cannot pass an
unsigned bundle by leaving the key out.
"""

from __future__ import annotations

import argparse
import math
import os
import selectors
import shlex
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from enum import IntEnum
from pathlib import Path

from pytest_cluster import __version__
from pytest_cluster.errors import (
    BundleError,
    InputError,
    LaunchError,
    SpecError,
    UnitError,
    log_line,
)
from pytest_cluster.evidence.bundle.keys import PublicKey
from pytest_cluster.evidence.bundle.verify import verify
from pytest_cluster.evidence.verdict.gate import Decision, gate
from pytest_cluster.evidence.verdict.resume import (
    MAX_STATE_BYTES,
    SLURM_TIMEOUT_S,
    NodeState,
    looked_up,
    parse_states,
    states_commands,
    steps,
    unread_line,
)
from pytest_cluster.units import parse_duration

#: The most characters of a message from elsewhere (scontrol's stderr) a gate's line says.
MAX_SAID = 300
#: The most of a SLURM command's stderr kept (and of scontrol's stdout: it prints nothing).
MAX_ERR_BYTES = 64 * 2**10


class VerifyExit(IntEnum):
    """What `pytest-cluster verify` exits with (VERIFY_EXIT_MEANING says each in words)."""

    OK = 0
    NOT_VERIFIED = 1
    ERROR = 2  # argparse's own code for a usage error, too
    INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command Ctrl-C stopped


#: Each exit of `verify`, as `verify --help` and docs/running.md list it.
VERIFY_EXIT_MEANING: dict[VerifyExit, str] = {
    VerifyExit.OK: "every file is as the manifest lists it and, with --key, that key "
                   "signed the manifest (VERIFIED); without --key nothing is said of the "
                   "signature",
    VerifyExit.NOT_VERIFIED: "a file changed, is missing, was added or is a link; or "
                             "--key was given and did not sign the manifest (UNSIGNED, "
                             "SIGNATURE INVALID)",
    VerifyExit.ERROR: "DIR, its manifest or the key cannot be read as one (one line on "
                      "stderr), or a usage error (--require-signature without --key)",
    VerifyExit.INTERRUPTED: "stopped by Ctrl-C (SIGINT) before it could say (one line on "
                            "stderr): nothing is said of the files or the signature",
}


def _verify_epilog() -> str:
    codes = "\n".join(textwrap.fill(VERIFY_EXIT_MEANING[code], 79,
                                     initial_indent=f"  {code.value}  ",
                                     subsequent_indent="     ") for code in VerifyExit)
    return ("The last line says FILES MATCH or FILES CHANGED, and SIGNED BY the key,\n"
            "UNSIGNED, SIGNATURE NOT CHECKED or SIGNATURE INVALID; VERIFIED only when the\n"
            "files match and --key signed them.\n\nexit codes:\n" + codes)


def given_path(text: str) -> Path:
    """A path argument; an empty one (an unset variable) is a usage error, never the
    current directory Path('') would be."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a path, got an empty value (an unset "
                                         "variable?)")
    return Path(text)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="pytest-cluster", description="pytest-cluster's "
                                  "evidence tools (the tests run with pytest --cluster=SPEC)")
    top.add_argument("--version", action="version", version=f"pytest-cluster {__version__}")
    commands = top.add_subparsers(dest="command", required=True)
    check = commands.add_parser(
        "verify", help="check a run directory against its signed manifest",
        description="Recompute the hash of every file of a run directory, name every\n"
                    "changed, missing or added one, and check the manifest's signature.",
        epilog=_verify_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    check.add_argument("run_dir", metavar="DIR", type=given_path,
                       help="a run's evidence directory (e.g. reports/latest)")
    check.add_argument("--key", metavar="PUBKEY", type=given_path,
                       help="public key the manifest must be signed by: a PEM public key "
                            "or an OpenSSH .pub line")
    check.add_argument("--require-signature", action="store_true",
                       help="exit 0 only when the --key given signed the manifest (which "
                            "--key alone already requires); without --key: a usage error")
    check.set_defaults(usage_error=check.error)
    decide = commands.add_parser(
        "gate", help="PASS, FAIL or ERROR for a run, as a prolog or health check acts",
        description="Read a run's verdict.json and pytest's exit status and say what a "
                    "gate does: PASS; FAIL (a node failed a check or did not answer: take "
                    "it out); ERROR (the tool could not judge: a spec or option that is "
                    "not valid, a crash, a time limit, a check not decided; never drains).",
        epilog="Exit 0: PASS; 1: FAIL; 2: ERROR. One line per reason on stdout.")
    decide.add_argument("run_dir", metavar="DIR", type=given_path,
                        help="the run's directory, or the --cluster-reports directory "
                             "(its latest run)")
    decide.add_argument("--exit-status", type=exit_status, required=True, metavar="N",
                        help="how `pytest --cluster=...` exited (the shell's $?, 0 to 255)")
    decide.add_argument("--log", type=given_path, metavar="FILE",
                        help="the run's output, for why it ended without a verdict")
    decide.add_argument("--since", type=epoch, metavar="EPOCH",
                        help="when the run started: an older verdict.json is not its own")
    decide.add_argument("--max-age", type=duration, metavar="DURATION",
                        help="refuse a verdict made longer ago than this (e.g. 30min, 24h, "
                             "or seconds) as stale, an ERROR, even where its valid_until "
                             "is later; for a gate reading a verdict made elsewhere (the "
                             "latest run under DIR); one without made_at is an ERROR then")
    decide.add_argument("--drain", action="store_true",
                        help="on FAIL, drain the failed nodes (scontrol update ... "
                             "State=DRAIN Reason='pytest-cluster ...'); never on ERROR, "
                             "never a simulated node; a node drained by someone else keeps "
                             "its reason")
    decide.add_argument("--resume", action="store_true",
                        help="on PASS or FAIL, resume (scontrol update ... State=RESUME) "
                             "each node the run accepted whose drain reason is "
                             "pytest-cluster's; a node drained for another reason stays "
                             "drained, said; never on ERROR, never a simulated node")
    decide.set_defaults(usage_error=decide.error)
    lint = commands.add_parser(
        "check", help="validate a contract (and a disable file) without running anything",
        description="Read SPEC as `pytest --cluster=SPEC` reads it, and the disable file "
                    "as --cluster-disable reads it, saying every problem at FILE:LINE; "
                    "nothing is run and no node is contacted. Run it before deploying a "
                    "contract or a disable file to a fleet's prolog.",
        epilog=f"Exit 0: valid; {CHECK_INVALID}: not valid (a problem each at FILE:LINE, "
               "as a run's usage error says it, which exits 4 too); 2: this command's "
               "own usage error.")
    lint.add_argument("spec", metavar="SPEC", type=given_path, help="a contract spec (YAML)")
    lint.add_argument("--disable", metavar="FILE", type=given_path,
                      help="a disable file (--cluster-disable's, PYTEST_CLUSTER_DISABLE's)")
    return top


#: What the gate exits with where it failed itself (ERROR's): never 1, FAIL's, which
#: Python's own exit on an uncaught exception is, and a prolog drains the node on
GATE_CRASHED = 2


def _gate(args: argparse.Namespace) -> int:
    try:
        decision = gate(args.run_dir, args.exit_status, args.log, args.since, args.max_age)
    except InputError as exc:  # --log is no regular file (a FIFO): refused, not waited on
        args.usage_error(f"--log {log_line(str(exc), MAX_SAID)}")
    except Exception as exc:  # the gate's own failure: an ERROR, never a FAIL (exit 1)
        _say(f"pytest-cluster ERROR: the gate could not decide: {type(exc).__name__}: "
             f"{log_line(str(exc), MAX_SAID)}; no node is drained for it")
        return GATE_CRASHED
    _say("\n".join(f"pytest-cluster {line}" for line in decision.lines))
    if args.drain and decision.simulated and decision.failed:
        _say("pytest-cluster not drained: a simulated cluster's nodes are no SLURM nodes")
    if args.drain or args.resume:
        _act(decision, args.drain, args.resume)
    return decision.exit_code


#: What a gate's scontrol did, by its verb.
DONE = {"drain": "drained", "resume": "resumed"}


def _act(decision: Decision, drain: bool, resume: bool) -> None:
    """Drain and resume as the decision and the nodes' states (read once, with sinfo) say,
    each outcome in one line; SLURM's refusal is said, never raised."""
    names = looked_up(decision, drain, resume)
    states: dict[str, NodeState | None] | None = {}
    if names:
        states, why = _read_states(names)
        if why:
            _say("pytest-cluster " + unread_line(why, drain and bool(decision.failed),
                                                 resume and bool(decision.accepted)))
    for step in steps(decision, states, drain, resume):
        if not step.command:
            _say(f"pytest-cluster {step.line}")
            continue
        text = shlex.join(step.command)
        code, _, err, why = _run(step.command, MAX_ERR_BYTES)
        if why or code != 0:
            _say(f"pytest-cluster {step.verb} failed" + (f" (exit {code})" if not why else "")
                 + f": {text}: {log_line(why or err.strip(), MAX_SAID)}")
        else:
            _say(f"pytest-cluster {DONE[step.verb]}: {text}"
                 + (f" ({step.line})" if step.line else ""))


def _read_states(names: Sequence[str]) -> tuple[dict[str, NodeState | None] | None, str]:
    """The nodes' states from sinfo (states_commands), or None and why not."""
    text = []
    for command in states_commands(names):
        code, out, err, why = _run(command, MAX_STATE_BYTES)
        if why or code != 0:
            return None, f"{command[0]}: " + (
                why or f"exit {code}: {err.strip() or 'it said nothing'}")
        text.append(out)
    return parse_states("\n".join(text)), ""


def _run(command: Sequence[str], limit: int) -> tuple[int | None, str, str, str]:
    """`command` run within SLURM_TIMEOUT_S, its stdout read up to `limit` bytes and its
    stderr's first MAX_ERR_BYTES: (exit code, stdout, stderr, why it did not end by
    itself: '' where it did; killed where it ran out of time or printed more than
    `limit`)."""
    try:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE)
    except OSError as exc:  # not found, not executable
        return None, "", "", f"cannot be run: {exc.strerror or exc}"
    deadline = time.monotonic() + SLURM_TIMEOUT_S
    out, err = bytearray(), bytearray()
    why = ""
    with process, selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ, out)  # type: ignore[arg-type]
        selector.register(process.stderr, selectors.EVENT_READ, err)  # type: ignore[arg-type]
        while selector.get_map() and not why:
            ready = selector.select(max(deadline - time.monotonic(), 0))
            if not ready:
                why = f"no answer within {SLURM_TIMEOUT_S} s"
            for key, _ in ready:
                chunk = os.read(key.fd, 2**16)
                if not chunk:
                    selector.unregister(key.fileobj)
                elif key.data is out:
                    out += chunk
                    why = why or (f"printed more than {limit} bytes" if len(out) > limit
                                  else "")
                else:
                    err += chunk[:max(MAX_ERR_BYTES - len(err), 0)]
        if why:
            process.kill()
        try:
            code = process.wait(max(deadline - time.monotonic(), 1))
        except subprocess.TimeoutExpired:
            process.kill()
            code, why = process.wait(), f"no answer within {SLURM_TIMEOUT_S} s"
    return code, out[:limit].decode("utf-8", "replace"), err.decode("utf-8", "replace"), why


def _say(text: str) -> None:
    """A line on stdout; a reader gone (`| head -1`) is no reason to stop: the gate still
    drains what it must, and says nothing more there."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def exit_status(text: str) -> int:
    """An exit status as a shell gives it ($?): a whole number from 0 to 255."""
    if not text.isascii() or not text.isdigit() or not 0 <= int(text) <= 255:
        raise argparse.ArgumentTypeError(f"expected an exit status from 0 to 255 (the "
                                         f"shell's $?), got {text[:40]!r}")
    return int(text)


def epoch(text: str) -> float:
    """A time as seconds since the epoch (`date +%s`): a finite number from 0 (nan, which
    compares with nothing, made every verdict.json this run's)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected seconds since the epoch (date +%s), "
                                         f"got {log_line(text, 40)!r}")
    return value


def duration(text: str) -> float:
    """A duration ('30 min', '24h', or seconds: units.parse_duration)."""
    try:
        return parse_duration(text)
    except UnitError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "gate":
        return _gate(args)
    if args.command == "check":
        return _check(args.spec, args.disable)
    return _verify(args)


#: What `check` exits with for a contract or disable file that is not valid: pytest's
#: usage error, which a run of it exits with.
CHECK_INVALID = 4


def _check(spec_path: Path, disable: Path | None) -> int:
    """The contract at `spec_path` (and the disable file) validated as a run reads them,
    a line each (its problems, one a line), nothing run; 0 or CHECK_INVALID."""
    # here, not at the top: the gate a prolog runs imports none of the contract's reading
    from pytest_cluster.contract import (  # noqa: PLC0415
        disable_file,
        extensions,
        load_spec,
        narrow,
    )
    from pytest_cluster.contract.promised import clause_count  # noqa: PLC0415
    from pytest_cluster.evidence.baseline.golden_file import check_spec  # noqa: PLC0415
    from pytest_cluster.launchers import launcher_class  # noqa: PLC0415

    lines = [f"warning: {text}" for text in extensions.load()]  # as a run: their clauses
    valid = True
    try:
        spec = load_spec(spec_path)
        narrow.run_size(spec.cluster.nodes)
        launcher_class(spec.cluster.launcher)
        check_spec(spec)  # the golden file it names, as a run reads it
    except SpecError as exc:
        valid, lines = False, [*lines, str(exc)]
    except (ValueError, LaunchError) as exc:
        valid, lines = False, [*lines, f"{spec_path}: cluster: {exc}"]
    else:
        lines += [f"{spec_path}: valid: {clause_count(spec)} clause(s) on "
                  f"{len(spec.cluster.nodes)} node(s) (cluster {spec.cluster.name}, "
                  f"launcher {spec.cluster.launcher}"
                  + (f", extends profile {spec.extends}" if spec.extends else "") + ")",
                  *(f"warning: {note}" for note in spec.warnings)]
    if disable is not None:
        try:
            read = disable_file.load(disable)
        except SpecError as exc:
            valid, lines = False, [*lines, str(exc)]
        else:
            now = time.time()
            count = len(read.entries)
            lines.append(f"{disable}: valid: {count} entr{'y' if count == 1 else 'ies'}; "
                         "in force: "
                         + (", ".join(f"{e.clause} until {e.until}" for e in read.in_force(now))
                            or "none")
                         + "".join(f"; expired (ignored): {e.clause} until {e.until}"
                                   for e in read.expired(now)))
    _say("\n".join(log_line(line) for text in lines for line in text.splitlines()))
    return 0 if valid else CHECK_INVALID


def _verify(args: argparse.Namespace) -> VerifyExit:
    """The directory checked, its lines printed; --require-signature without --key exits
    with argparse's usage error (2) before anything is read."""
    if args.require_signature and args.key is None:
        args.usage_error("--require-signature needs --key PUBKEY: the public key the "
                         "manifest must be signed by")
    try:
        key = PublicKey.load(args.key) if args.key is not None else None
        verdict = verify(args.run_dir, key)
    except BundleError as exc:
        print(f"pytest-cluster verify: {exc}", file=sys.stderr)
        return VerifyExit.ERROR
    except KeyboardInterrupt:
        print("pytest-cluster verify: interrupted (Ctrl-C) before the check ended: "
              "nothing is verified", file=sys.stderr)
        return VerifyExit.INTERRUPTED
    _say("\n".join(verdict.lines()))
    held = verdict.verified if args.require_signature else verdict.ok
    return VerifyExit.OK if held else VerifyExit.NOT_VERIFIED


if __name__ == "__main__":
    sys.exit(main())
