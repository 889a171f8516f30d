#!/bin/sh
# pytest-cluster as a SLURM Prolog: the sanity level of the contract on this node, before
# a job starts on it. In slurm.conf:
#
#   Prolog=/etc/slurm/pytest-cluster-prolog.sh
#   PrologFlags=Alloc            # run it when the job is allocated, before its first step
#   PrologEpilogTimeout=60       # longer than LIMIT below
#
# A non-zero exit makes slurmd drain this node ("Prolog error") and requeue the job, by
# itself: no scontrol here (SchedMD advises against it in a prolog). Why the node failed
# is this run's evidence under REPORTS (latest/verdict.json, latest/report.html).
# SLURM runs a prolog without a search path: every path below is absolute.
SPEC=/etc/pytest-cluster/contract.yaml        # the contract; its launcher may be ssh or slurm
PYTHON=/opt/pytest-cluster/bin/python         # an interpreter with pytest-cluster installed
REPORTS=/var/lib/pytest-cluster/prolog        # where each run's evidence is kept
LIMIT=30                                      # seconds for the whole check
KEEP_DAYS=7                                   # runs older than this are removed

PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
# this job's check on this node, in a folder of its own: prologs of other jobs, or of other
# nodes sharing REPORTS, run at the same time
RUN="$REPORTS/${SLURMD_NODENAME:-$(hostname -s)}-job${SLURM_JOB_ID:-$$}"
mkdir -p "$RUN" && cd "$RUN" || exit 1
find "$REPORTS" -mindepth 1 -maxdepth 1 -type d -mtime +"$KEEP_DAYS" -exec rm -rf {} + 2>/dev/null
# SLURM_SCRIPT_CONTEXT=prolog_slurmd: pytest-cluster checks this node alone (SLURMD_NODENAME),
# running its probes here directly (no ssh, no srun inside a prolog)
timeout -k 5 "$LIMIT" "$PYTHON" -m pytest --cluster="$SPEC" -m sanity -q -p no:cacheprovider \
    --cluster-reports="$RUN" --cluster-node=. >"$RUN/pytest.log" 2>&1 || exit $?
# every check that ran passed: the node is accepted unless some did not run
exec "$PYTHON" -c 'import json, sys
sys.exit(json.load(open(sys.argv[1]))["verdict"] != "ACCEPTED")' "$RUN/latest/verdict.json"
