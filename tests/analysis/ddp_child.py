"""One rank of a real gloo DDP job on CPU (a torch DataLoader, `timed_iter`, `timer("compute")` inside
`timer("step")`, an all_reduce in every step), timed twice: all phases under run `full`, the step alone under run
`steponly` (as the README's example times it). Env: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, LATENCYMAP_SINK,
SLOW_RANK (compute 250 ms instead of 50 ms in steps 8-15) and DATA_RANK (data wait 160 ms in steps 22-26), -1 for none.
"""

from __future__ import annotations

import os
import time

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset

from latencymap.instrument import Timings

STEPS = 70  # most steps ordinary, so a rank's usual (its median interval) is an ordinary one
BATCH = 4


class Data(Dataset):
    """Items that take 1 ms to load, 40 ms on the data rank in its slow steps."""

    def __init__(self, rank: int, data_rank: int) -> None:
        self.rank, self.data_rank = rank, data_rank

    def __len__(self) -> int:
        return STEPS * BATCH

    def __getitem__(self, i: int) -> torch.Tensor:
        time.sleep(0.040 if self.rank == self.data_rank and 22 <= i // BATCH <= 26 else 0.001)
        return torch.randn(8)


def main() -> None:
    """Train STEPS steps, then wait for every rank."""
    torch.set_num_threads(1)
    rank, slow_rank, data_rank = int(os.environ["RANK"]), int(os.environ["SLOW_RANK"]), int(os.environ["DATA_RANK"])
    dist.init_process_group("gloo", rank=rank, world_size=int(os.environ["WORLD_SIZE"]))
    sink = os.environ["LATENCYMAP_SINK"]
    with Timings(sink, run="full", rank=rank) as full, Timings(sink, run="steponly", rank=rank) as alone:
        step, compute, step_alone = full.timer("step"), full.timer("compute"), alone.timer("step")
        dist.barrier()
        for s, x in enumerate(full.timed_iter(DataLoader(Data(rank, data_rank), batch_size=BATCH))):
            with step_alone, step:
                with compute:
                    time.sleep(0.25 if rank == slow_rank and 8 <= s <= 15 else 0.05)
                    g = x.sum(0)
                dist.all_reduce(g)
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
