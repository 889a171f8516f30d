"""The reports: they only render records (the scorecard, the charts, the sections on the
evidence itself)."""
