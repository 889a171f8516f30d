"""The simulated cluster: a description in the spec, answered as real nodes would."""
