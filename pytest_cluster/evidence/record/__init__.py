"""The run's record: what each test recorded (`check.Evidence`), what the run set out to
check (`plan`), the lines of results.jsonl (`lines`), what the end of a run reads of them
(`ledger`, `end`, verdict.json's schema), the cases derived from the whole run, the run's
directory, and the summaries the reports show (`summary`, `gathered`, `latency_map`)."""
