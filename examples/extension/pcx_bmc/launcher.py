"""The `here` launcher: every node is this machine, its probes run by the local launcher
(a site's own launcher would reach its nodes its own way: docker exec, kubectl exec)."""

from __future__ import annotations

from pytest_cluster.launchers.local import LocalLauncher


class HereLauncher(LocalLauncher):
    name = "here"
