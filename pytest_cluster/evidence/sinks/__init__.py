"""Where a run's facts go as it runs: results.jsonl (results.py writes it, line by line,
and reads it back) and Prometheus metrics (metrics.py)."""
