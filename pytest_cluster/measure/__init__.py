"""What is measured on the cluster: the `cluster` fixture's object and its probe cache, the
collective benchmark and the slow-node search, the training job and who held it up, the
inventory, the GPU facts read from probes, the published reference figures."""
