#!/bin/sh
# pytest-cluster as a SLURM Prolog: the sanity level of the contract on this node, before
# a job starts on it. Set the three paths below, then in slurm.conf:
#
#   Prolog=/etc/slurm/pytest-cluster-prolog.sh
#   PrologFlags=Alloc            # run it when the job is allocated, before its first step
#   PrologEpilogTimeout=60       # longer than LIMIT + GATE_LIMIT below (plus 5 s each)
#
# What it does with the node (`pytest-cluster gate` decides; one line per reason):
#   PASS   every sanity check of this node passed: exit 0, the job starts.
#   FAIL   a check of this node failed, or the node did not answer its own probes: exit 1,
#          and slurmd drains the node ("Prolog error") and requeues the job, by itself (no
#          scontrol here: SchedMD advises against it in a prolog). Why: the FAIL lines on
#          stderr, and this run's evidence under REPORTS (<node>-job<id>/latest/verdict.json,
#          report.html). Put it back once fixed: scontrol update NodeName=<node> State=RESUME
#   ERROR  the tool could not judge the node: the spec or an option is not valid (a typo in
#          the contract), the interpreter is missing, pytest-cluster crashed, LIMIT or
#          GATE_LIMIT was reached, a check could not be decided, the node's name is not a
#          host name or the job id not digits (nothing is written then). Exit 0: the job
#          starts and the node is NOT drained (a gate that drains the fleet for its own
#          fault is worse than none). It is said loudly instead: on stderr and to syslog
#          (`logger -t pytest-cluster`, priority daemon.err): alert on it (journalctl -t
#          pytest-cluster -p err). Every line said is one line: a name shown with each
#          character but letters, digits, '.', '_', '-' a '?', a cut marked.
#
# Before deploying a changed contract (or disable file), check it where you edit it; it runs
# nothing and contacts no node; exit 0 valid, 4 with every problem at FILE:LINE:
#   pytest-cluster check contract.yaml --disable disable.yaml
# A clause that misfires across the fleet is turned off without touching the contract by
# a disable file (docs/running.md, "Turning a clause off fleet-wide"): entries of clause,
# reason and until; its cases are skipped as "disabled: <reason>, until <date>", never
# passed, and an entry past its date is ignored (said). Name it to the run here:
#   PYTEST_CLUSTER_DISABLE=/etc/pytest-cluster/disable.yaml; export PYTEST_CLUSTER_DISABLE
# The run covers this node alone (SLURM_SCRIPT_CONTEXT=prolog_slurmd; SLURMD_NODENAME names
# it) with the local launcher: no ssh, no srun inside a prolog. Time: ~1-2 s warm for the
# sanity level of host, GPU (NVML) and NIC clauses; the first run after boot imports cold.
# SLURM runs a prolog without a search path: every path below is absolute.
SPEC=/etc/pytest-cluster/contract.yaml        # the contract; its launcher may be ssh or slurm
PYTHON=/opt/pytest-cluster/bin/python         # an interpreter with pytest-cluster installed
REPORTS=/var/lib/pytest-cluster/prolog        # where each run's evidence is kept
LIMIT=30                                      # seconds for the whole check
GATE_LIMIT=10                                 # seconds for the gate's decision after it
KEEP_DAYS=7                                   # runs older than this are removed

PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
NODE=${SLURMD_NODENAME:-$(hostname -s)}
JOB=${SLURM_JOB_ID:-$$}
ALNUM=ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789
# $1 as a log line shows a name: its first 64 bytes, each but a letter, a digit, '.', '_'
# and '-' a '?', and how long it was where it was longer (a cut marked)
shown() {
    printf '%s' "$1" | head -c 64 | LC_ALL=C tr -c "$ALNUM._-" '?'
    bytes=$(printf '%s' "$1" | wc -c)
    [ "$bytes" -le 64 ] || printf '[...%s bytes]' "$bytes"
}
SHOWN_NODE=$(shown "$NODE") SHOWN_JOB=$(shown "$JOB")
# the tool could not judge: say so on stderr and in syslog, never fail the node for it
error() {
    echo "pytest-cluster prolog ERROR on $SHOWN_NODE (job $SHOWN_JOB): $*" >&2
    command -v logger >/dev/null 2>&1 && \
        logger -t pytest-cluster -p daemon.err -- "prolog ERROR on $SHOWN_NODE (job $SHOWN_JOB): $*"
    exit 0
}
# FILE as one line (the gate's lines, each already one line and bounded, joined): its
# first 1000 bytes, any control character a '?', and how much more where it was longer
one_line() {
    bytes=$(wc -c <"$1")
    head -c 1000 "$1" | tr '\n' ' ' | LC_ALL=C tr '\000-\037\177' '?' | sed 's/ *$//'
    [ "$bytes" -le 1000 ] || printf ' [...%s more bytes]' $((bytes - 1000))
}
# the node's name and the job's id make the run's folder: a host name (letters, digits,
# '-', '.', '_'; a letter or digit first; at most 64, Linux's HOST_NAME_MAX: a longer one
# with the job's id is more than a folder's name may be) and digits (at most 10: SLURM's
# job ids are 32-bit), or nothing is written ('../x' would be outside REPORTS)
case $NODE in
    ''|[!$ALNUM]*|*[!$ALNUM._-]*) error "the node's name is not a host name: $SHOWN_NODE" ;;
esac
[ ${#NODE} -le 64 ] || error "the node's name is not a host name: $SHOWN_NODE"
case $JOB in
    ''|*[!0123456789]*|???????????*) error "the job id is not a SLURM job id: $SHOWN_JOB" ;;
esac
# this job's check on this node, in a folder of its own: prologs of other jobs, or of other
# nodes sharing REPORTS, run at the same time
RUN="$REPORTS/$NODE-job$JOB"
# a link in its place (put there by whoever else writes REPORTS) would take the evidence,
# and the logs, elsewhere
[ ! -L "$RUN" ] || error "$RUN is a symbolic link, not a folder of its own; not checked"
{ mkdir -p "$RUN" && cd "$RUN"; } 2>/dev/null || error "cannot write its evidence under $RUN"
find "$REPORTS" -mindepth 1 -maxdepth 1 -type d -mtime +"$KEEP_DAYS" -exec rm -rf {} + 2>/dev/null
STARTED=$(date +%s)
timeout -k 5 "$LIMIT" "$PYTHON" -m pytest --cluster="$SPEC" -m sanity -q -p no:cacheprovider \
    --cluster-reports="$RUN" --cluster-node=. >"$RUN/pytest.log" 2>&1
STATUS=$?
# no --max-age: the verdict gated on is this run's own, made seconds ago (--since says
# it is); a gate on a verdict made elsewhere (the latest daily run) adds --max-age 24h
timeout -k 5 "$GATE_LIMIT" "$PYTHON" -m pytest_cluster.cli gate "$RUN" \
    --exit-status "$STATUS" --log "$RUN/pytest.log" --since "$STARTED" >"$RUN/gate.log" 2>&1
case $? in
    0) exit 0 ;;
    1) # FAIL, said by the gate (Python exits 1 too where the gate cannot start: an
       # interpreter without pytest-cluster; that is no reason to drain the node)
       grep -q '^pytest-cluster FAIL ' "$RUN/gate.log" || \
           error "the gate exited 1 without a FAIL line (is pytest-cluster installed for" \
                 "$PYTHON?): $(one_line "$RUN/gate.log") (evidence: $RUN)"
       head -n 20 "$RUN/gate.log" >&2       # FAIL: slurmd drains this node
       lines=$(wc -l <"$RUN/gate.log")
       [ "$lines" -le 20 ] || \
           echo "pytest-cluster ... and $((lines - 20)) more line(s) in $RUN/gate.log" >&2
       exit 1 ;;
    124|137) error "the gate did not decide within $GATE_LIMIT s; no node is drained for it" \
                   "(evidence: $RUN)" ;;
    *) error "$(one_line "$RUN/gate.log") (evidence: $RUN)" ;;
esac
