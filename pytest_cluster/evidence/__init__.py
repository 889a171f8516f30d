"""What a run recorded and how it is kept: the evidence each test records, results.jsonl,
the plan, the ledger and its tallies, the verdicts, the derived cases, the baseline (as
untrusted input), the run directory, the JUnit spool and the sealed bundle."""
