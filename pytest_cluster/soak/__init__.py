"""A soak: the selected suite repeated in rounds, its availability and SLA credit, the
counters that must not grow, and its part of the report."""
