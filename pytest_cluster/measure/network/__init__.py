"""What is measured of the network: the collectives' benchmark jobs (`collectives`,
`benchmark`, nccl-tests' output and NCCL's log), the slow-node search (`node_search`) and each
rail's (`rails`, `perftest`), the latency between node pairs (`latency`, `placement`) and the
NIC ports a fabric clause counts (`fabric`)."""
