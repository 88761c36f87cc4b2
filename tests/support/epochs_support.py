"""Recordings of a real DataLoader loop timed by `timed_iter` (torch on CPU), with workers persistent or not."""

from __future__ import annotations

import time
from pathlib import Path

from latencymap.instrument import Timings

#: The phases `timed_iter` records of one loop.
PHASES = ("data_wait.epoch_start", "data_wait", "data_wait.epoch_end")


class Reads:
    """A map-style Dataset of ints whose every item takes `read_s` to read (0: none)."""

    def __init__(self, n: int, read_s: float = 0.0) -> None:
        self.n, self.read_s = n, read_s

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> int:
        if self.read_s:
            time.sleep(self.read_s)
        return i


def record_loop(path: Path, *, persistent: bool, workers: int = 2, epochs: int = 5, batches: int = 40,
                read_s: float = 0.0, step_s: float = 0.002, stop_at: int | None = None,
                interval: float = 60.0) -> dict[str, list[int]]:
    """Record `epochs` epochs of `batches` batches of 2 items through a DataLoader (`workers`, `persistent`) to the
    recording `path`, each step `step_s` long (`stop_at`: the loop leaves each epoch after that many batches), in
    columns of `interval` s (by default one per phase); the truth: each phase's waits (ns) as the instrument timed
    them, where no column was flushed before the end (by default)."""
    from torch.utils.data import DataLoader

    timings = Timings(f"file:{path}", run="dl", rank=0, interval=interval)
    options = {"num_workers": workers, "persistent_workers": persistent} if workers else {}
    data = timings.timed_iter(DataLoader(Reads(2 * batches, read_s), batch_size=2, **options))  # type: ignore[arg-type]
    for _epoch in range(epochs):
        for i, _batch in enumerate(data):
            time.sleep(step_s)
            if stop_at is not None and i + 1 == stop_at:
                break
    truth = {phase: list(timings.values(phase)) for phase in PHASES}
    timings.close()
    return truth
