#!/bin/sh
# pytest-cluster as a SLURM Prolog: the sanity level of the contract on this node, before
# a job starts on it. Set the three paths below, then in slurm.conf:
#
#   Prolog=/etc/slurm/pytest-cluster-prolog.sh
#   PrologFlags=Alloc            # run it when the job is allocated, before its first step
#   PrologEpilogTimeout=60       # longer than LIMIT below (plus 5 s to end it)
#
# What it does with the node (`pytest-cluster gate` decides; one line per reason):
#   PASS   every sanity check of this node passed: exit 0, the job starts.
#   FAIL   a check of this node failed, or the node did not answer its own probes: exit 1,
#          and slurmd drains the node ("Prolog error") and requeues the job, by itself (no
#          scontrol here: SchedMD advises against it in a prolog). Why: the FAIL lines on
#          stderr, and this run's evidence under REPORTS (<node>-job<id>/latest/verdict.json,
#          report.html). Put it back once fixed: scontrol update NodeName=<node> State=RESUME
#   ERROR  the tool could not judge the node: the spec or an option is not valid (a typo in
#          the contract), the interpreter is missing, pytest-cluster crashed, LIMIT was
#          reached, a check could not be decided. Exit 0: the job starts and the node is
#          NOT drained (a gate that drains the fleet for its own fault is worse than none).
#          It is said loudly instead: on stderr and to syslog (`logger -t pytest-cluster`,
#          priority daemon.err): alert on it (journalctl -t pytest-cluster -p err).
#
# Before deploying a changed contract, check it where you edit it:
#   pytest --cluster=contract.yaml --collect-only -q    # exit 4 names the file, line and key
# The run covers this node alone (SLURM_SCRIPT_CONTEXT=prolog_slurmd; SLURMD_NODENAME names
# it) with the local launcher: no ssh, no srun inside a prolog. Time: ~1-2 s warm for the
# sanity level of host, GPU (NVML) and NIC clauses; the first run after boot imports cold.
# SLURM runs a prolog without a search path: every path below is absolute.
SPEC=/etc/pytest-cluster/contract.yaml        # the contract; its launcher may be ssh or slurm
PYTHON=/opt/pytest-cluster/bin/python         # an interpreter with pytest-cluster installed
REPORTS=/var/lib/pytest-cluster/prolog        # where each run's evidence is kept
LIMIT=30                                      # seconds for the whole check
KEEP_DAYS=7                                   # runs older than this are removed

PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
NODE=${SLURMD_NODENAME:-$(hostname -s)}
# the tool could not judge: say so on stderr and in syslog, never fail the node for it
error() {
    echo "pytest-cluster prolog ERROR on $NODE (job ${SLURM_JOB_ID:-?}): $*" >&2
    command -v logger >/dev/null 2>&1 && \
        logger -t pytest-cluster -p daemon.err -- "prolog ERROR on $NODE (job ${SLURM_JOB_ID:-?}): $*"
    exit 0
}
# this job's check on this node, in a folder of its own: prologs of other jobs, or of other
# nodes sharing REPORTS, run at the same time
RUN="$REPORTS/$NODE-job${SLURM_JOB_ID:-$$}"
mkdir -p "$RUN" && cd "$RUN" || error "cannot write its evidence under $RUN"
find "$REPORTS" -mindepth 1 -maxdepth 1 -type d -mtime +"$KEEP_DAYS" -exec rm -rf {} + 2>/dev/null
STARTED=$(date +%s)
timeout -k 5 "$LIMIT" "$PYTHON" -m pytest --cluster="$SPEC" -m sanity -q -p no:cacheprovider \
    --cluster-reports="$RUN" --cluster-node=. >"$RUN/pytest.log" 2>&1
STATUS=$?
"$PYTHON" -m pytest_cluster.cli gate "$RUN" --exit-status "$STATUS" --log "$RUN/pytest.log" \
    --since "$STARTED" >"$RUN/gate.log" 2>&1
case $? in
    0) exit 0 ;;
    1) cat "$RUN/gate.log" >&2; exit 1 ;;   # FAIL: slurmd drains this node
    *) error "$(head -c 1000 "$RUN/gate.log" | tr '\n' ' ')(evidence: $RUN)" ;;
esac
