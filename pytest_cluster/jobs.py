"""Distributed jobs for your own tests, where README's earlier versions named them: a
re-export of pytest_cluster.launchers.jobs (the job runner lives with the launchers)."""

from pytest_cluster.launchers.jobs import JobResult, JobSpec, RankResult, run_job

__all__ = ["JobResult", "JobSpec", "RankResult", "run_job"]
