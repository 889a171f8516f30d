"""The verdict: each node's (`nodes`: ACCEPTED, REJECTED, UNREACHABLE, NOT CHECKED), who a
failure blames (`blame`), the run's (`cluster_verdict`), what a gate drains (`drain`,
`gate`), nodes grouped by what they reported, and over time (`timelines`, `sla`)."""
