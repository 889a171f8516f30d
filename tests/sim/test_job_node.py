"""sim/job_node.py: a job_node call read as its node's part of the job, and the ranks of a
part that could not start."""

from __future__ import annotations

import base64

import pytest

from pytest_cluster.sim.job_node import NodePart, failed_ranks, read_node_call, whereami

PROGRAM = "print('hé')\n"
CALL = ["--master-addr", "n1", "--master-port", "29500", "--node-rank", "1", "--nnodes", "3",
        "--ranks-per-node", "2", "--init-timeout", "30", "--wall-timeout", "60",
        "--program", base64.b64encode(PROGRAM.encode()).decode()]


def test_a_call_is_read_as_its_part_with_its_rail_and_the_programs_arguments() -> None:
    part = read_node_call([*CALL, "--env", "NCCL_IB_HCA=mlx5_3", "--", "--sizes", "8"])
    assert part == NodePart("n1", 29500, 1, 3, 2, 30.0, 60.0, PROGRAM, ("--sizes", "8"),
                            (("NCCL_IB_HCA", "mlx5_3"),))
    assert part.job == ("n1", 29500)
    assert read_node_call(["--whereami"]) is None
    assert whereami("n7") == {"addresses": ["n7"], "hostname": "n7"}


@pytest.mark.parametrize(("args", "says"), [
    (CALL[:-2], "job_node needs --program"),
    ([*CALL, "--colour"], "not job_node's arguments: "),
    ([*CALL[:-1], "%%%"], "the program is not base64 of a text: "),
    ([*CALL[:5], "3", *CALL[6:]], "node rank 3 of 3 node(s), 2 rank(s) each"),
    ([*CALL[:9], "0", *CALL[10:]], "node rank 1 of 3 node(s), 0 rank(s) each"),
])
def test_a_wrong_call_says_what_is_wrong(args: list[str], says: str) -> None:
    with pytest.raises(ValueError) as info:
        read_node_call(args)
    assert str(info.value).startswith(says)


def test_a_part_that_could_not_start_fails_each_of_its_ranks_saying_why() -> None:
    part = read_node_call(CALL)
    assert part is not None
    assert failed_ranks(part, "timed out") == [
        {"rank": rank, "local_rank": local, "exit_code": 1, "ended_at": None, "data": None,
         "stderr_tail": "timed out"} for local, rank in enumerate((2, 3))]
