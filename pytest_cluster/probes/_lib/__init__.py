"""Helpers several programs of this folder share (a probe's, a job program's).

A program imports one relatively (`from ._lib.age import ago`; from a probe that is a
package, `from .._lib.age import ago`) and carries it when it is shipped: only the modules
it imports (probes/_shipping.py). Standard library only, as every program here.
"""
