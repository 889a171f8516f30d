#!/bin/sh
# pytest-cluster as SLURM's HealthCheckProgram: the sanity level on an idle node, every
# HealthCheckInterval seconds. Set the three paths below, then in slurm.conf:
#
#   HealthCheckProgram=/etc/slurm/pytest-cluster-healthcheck.sh
#   HealthCheckInterval=3600
#   HealthCheckNodeState=IDLE    # idle nodes, drained ones too (not NONDRAINED_IDLE: a
#                                # node drained by us would never be checked, nor resumed)
#
# slurmd kills a health check that has not ended within 60 seconds: LIMIT + GATE_LIMIT
# below, plus 5 s each for `timeout` to end them, stay under that.
#
# What it does with the node (`pytest-cluster gate --drain --resume` decides; one line per
# reason). A drain reason is "ours" when pytest-cluster wrote it: it starts with
# "pytest-cluster " (or a fault code and that: "PC-GPU-ROWREMAP pytest-cluster ..."). The
# gate reads the node's state and reason first (sinfo) and never undoes anyone else's.
#   PASS   every sanity check of this node passed. A node drained by us (an earlier check
#          failed) is resumed: it was fixed (scontrol update NodeName=<node> State=RESUME,
#          said to syslog, priority daemon.notice). A node drained for any other reason
#          (an admin's "maintenance", slurmd's "Prolog error") stays drained, said once
#          a check: "not resumed <node>: drained by someone else: <their reason>".
#   FAIL   a check of this node failed, or the node did not answer its own probes: the node
#          is drained with pytest-cluster's reason, as LBNL NHC does (scontrol update
#          NodeName=<node> State=DRAIN Reason="PC-STORAGE-CAPACITY pytest-cluster rejected:
#          1 clause(s) failed: storage[/scratch].capacity": its fault code first, which
#          sinfo -R groups by; docs/faults.md says what to do); one drained by us already gets this check's reason;
#          one drained by someone else keeps theirs ("kept drained <node>: drained by someone
#          else: <their reason>; its failure: ..."). Why: this run's evidence under REPORTS
#          (<host>-<time>/latest/verdict.json, report.html). Once fixed, the next check
#          that passes resumes it (or by hand: scontrol update NodeName=<node> State=RESUME).
#   ERROR  the tool could not judge the node: the spec or an option is not valid (a typo in
#          the contract), the interpreter is missing, pytest-cluster crashed, LIMIT or
#          GATE_LIMIT was reached, a check could not be decided, the node's name is not
#          a host name (nothing is written then). The node is NOT drained, and NOT resumed
#          (a health check that drains the fleet for its own fault is worse than none); it
#          is said loudly instead, on stderr and to syslog (`logger -t pytest-cluster`,
#          priority daemon.err): alert on it (journalctl -t pytest-cluster -p err).
# What SLURM refused (sinfo or scontrol failing) is said in one line; the outcome stays.
# It always exits 0 (slurmd does nothing with a health check's exit code).
#
# Before deploying a changed contract (or disable file), check it where you edit it; it runs
# nothing and contacts no node; exit 0 valid, 4 with every problem at FILE:LINE:
#   pytest-cluster check contract.yaml --disable disable.yaml
# A clause that misfires across the fleet is turned off without touching the contract by
# a disable file (docs/running.md, "Turning a clause off fleet-wide"): entries of clause,
# reason and until; its cases are skipped as "disabled: <reason>, until <date>", never
# passed, and an entry past its date is ignored (said). Name it to the run here:
#   PYTEST_CLUSTER_DISABLE=/etc/pytest-cluster/disable.yaml; export PYTEST_CLUSTER_DISABLE
SPEC=/etc/pytest-cluster/contract.yaml
PYTHON=/opt/pytest-cluster/bin/python
REPORTS=/var/lib/pytest-cluster/healthcheck
LIMIT=30
GATE_LIMIT=15
KEEP_DAYS=7

PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
NODE=${SLURMD_NODENAME:-$(hostname -s)}
ALNUM=ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789
# $1 as a log line shows a name: its first 64 bytes, each but a letter, a digit, '.', '_'
# and '-' a '?', and how long it was where it was longer (a cut marked)
shown() {
    printf '%s' "$1" | head -c 64 | LC_ALL=C tr -c "$ALNUM._-" '?'
    bytes=$(printf '%s' "$1" | wc -c)
    [ "$bytes" -le 64 ] || printf '[...%s bytes]' "$bytes"
}
SHOWN_NODE=$(shown "$NODE")
say() {  # $1: syslog priority; the rest: the line
    priority=$1; shift
    echo "pytest-cluster healthcheck on $SHOWN_NODE: $*" >&2
    command -v logger >/dev/null 2>&1 && \
        logger -t pytest-cluster -p "$priority" -- "healthcheck on $SHOWN_NODE: $*"
    return 0
}
# FILE as one line (the gate's lines, each already one line and bounded, joined): its
# first 1000 bytes, any control character a '?', and how much more where it was longer
one_line() {
    bytes=$(wc -c <"$1")
    head -c 1000 "$1" | tr '\n' ' ' | LC_ALL=C tr '\000-\037\177' '?' | sed 's/ *$//'
    [ "$bytes" -le 1000 ] || printf ' [...%s more bytes]' $((bytes - 1000))
}
# the node's name makes the run's folder: a host name (letters, digits, '-', '.', '_'; a
# letter or digit first; at most 64, Linux's HOST_NAME_MAX: a longer one with the time is
# more than a folder's name may be), or nothing is written ('../x' is outside REPORTS)
case $NODE in
    ''|[!$ALNUM]*|*[!$ALNUM._-]*) NOT_A_HOST=1 ;;
    *) [ ${#NODE} -le 64 ] || NOT_A_HOST=1 ;;
esac
if [ -n "${NOT_A_HOST:-}" ]; then
    say daemon.err "ERROR: the node's name is not a host name: $SHOWN_NODE; not checked"
    exit 0
fi
STARTED=$(date +%s)
RUN="$REPORTS/$NODE-$STARTED-$$"  # this check's own folder (REPORTS may be shared)
# a link in its place (put there by whoever else writes REPORTS) would take the evidence,
# and the logs, elsewhere
if [ -L "$RUN" ] || ! { mkdir -p "$RUN" && cd "$RUN"; } 2>/dev/null; then
    say daemon.err "ERROR: cannot write its evidence under $RUN (not a folder of its" \
        "own); not drained"
    exit 0
fi
find "$REPORTS" -mindepth 1 -maxdepth 1 -type d -mtime +"$KEEP_DAYS" -exec rm -rf {} + 2>/dev/null
timeout -k 5 "$LIMIT" "$PYTHON" -m pytest --cluster="$SPEC" -m sanity -q -p no:cacheprovider \
    --cluster-reports="$RUN" --cluster-node=. >"$RUN/pytest.log" 2>&1
STATUS=$?
# on FAIL the gate drains the failed node, on PASS it resumes it where the drain was
# ours (a simulated one never)
# no --max-age: the verdict gated on is this run's own, made seconds ago (--since says
# it is); a gate on a verdict made elsewhere (the latest daily run) adds --max-age 24h
timeout -k 5 "$GATE_LIMIT" "$PYTHON" -m pytest_cluster.cli gate "$RUN" --exit-status "$STATUS" \
    --log "$RUN/pytest.log" --since "$STARTED" --drain --resume >"$RUN/gate.log" 2>&1
case $? in
    0) # a pass is silent, but for what it did or could not do in SLURM (resumed, not)
       if grep -v -q '^pytest-cluster PASS' "$RUN/gate.log"; then
           say daemon.notice "$(one_line "$RUN/gate.log") (evidence: $RUN)"
       fi ;;
    1) if grep -q '^pytest-cluster FAIL ' "$RUN/gate.log"; then
           say daemon.warning "$(one_line "$RUN/gate.log") (evidence: $RUN)"
       else  # Python exits 1 too where the gate cannot start (no pytest-cluster there)
           say daemon.err "ERROR: the gate exited 1 without a FAIL line (is pytest-cluster" \
               "installed for $PYTHON?): $(one_line "$RUN/gate.log") (evidence: $RUN)"
       fi ;;
    124|137) say daemon.err "ERROR: the gate did not decide within $GATE_LIMIT s:" \
                 "$(one_line "$RUN/gate.log") (evidence: $RUN)" ;;
    *) say daemon.err "$(one_line "$RUN/gate.log") (evidence: $RUN)" ;;
esac
exit 0
