"""The CUDA path of latencymap.instrument on a real GPU, against CUDA events read directly in the same run.

Run where torch sees a GPU: `.venv/bin/python bench/bench_cuda_timer.py [--steps 300] [--size 2048] [--record FILE]`.

1. One GPU step (a chain of matrix products) timed four ways: CUDA event pairs read directly (the reference), and
   through `Timings.timer` with `cuda=False` (the CPU clock: only the launch), `cuda=True` (events, read at flush)
   and `cuda="sync"` (synchronize around the step). Prints each one's mean step time against the reference, and
   what each costs the loop's wall time against the loop untimed.
2. The example training loop (fixtures/training/train_example.py: a DataLoader with worker processes, the first
   epoch slow to read) on the GPU: steps and data waits as latencymap saw them; `--record FILE` also writes them
   as a recording to read back with `latencymap report FILE`.

Prints numbers only; asserts nothing. Without a GPU it says so and exits 0 (`--cpu` runs part 2 on the CPU).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from latencymap.instrument import Timings
from latencymap.sinks import MemorySink

ROOT = Path(__file__).resolve().parent.parent


def phase_mean(sink: MemorySink, phase: str) -> tuple[int, float]:
    """(events, mean seconds) of `phase` in what the sink received."""
    events = sum(int(iv.counts.sum()) for iv in sink.intervals if iv.stream.label.endswith("/" + phase))
    spent = sum(float(iv.time.sum()) for iv in sink.intervals
                if iv.stream.label.endswith("/" + phase) and iv.time is not None)
    return events, spent / events if events else float("nan")


def gpu_step_modes(torch: Any, steps: int, size: int) -> None:
    """Part 1: the four ways of timing one GPU step."""
    x = torch.randn(size, size, device="cuda")

    def work() -> None:
        y = x
        for _ in range(4):
            y = y @ x
        y.sum()

    for _ in range(20):  # warm-up: cuBLAS handles, clocks
        work()
    torch.cuda.synchronize()
    pairs = []
    t0 = time.perf_counter()
    for _ in range(steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        work()
        end.record()
        pairs.append((start, end))
    torch.cuda.synchronize()
    bare_wall = time.perf_counter() - t0
    reference = statistics.fmean(a.elapsed_time(b) for a, b in pairs) / 1e3
    print(f"GPU step ({size}x{size}, 4 products): {reference * 1e3:.3f} ms by CUDA events read directly; "
          f"loop untimed (events only) {bare_wall:.3f} s for {steps} steps")
    for label, mode in (("cuda=False (CPU clock)", False), ("cuda=True (events)", True), ('cuda="sync"', "sync")):
        sink = MemorySink()
        timings = Timings(sink, run="bench", rank=0, interval=0.5)
        step = timings.timer("step", cuda=mode)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(steps):
            with step:
                work()
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
        timings.close()
        events, mean = phase_mean(sink, "step")
        print(f"  {label:24s} {type(step).__name__:9s} {events} steps, mean {mean * 1e3:8.3f} ms "
              f"({mean / reference:6.3f}x the events read directly); loop {wall:.3f} s "
              f"({wall / bare_wall:.3f}x untimed); dropped {timings.cuda_dropped}")


def training_loop(device: str, epochs: int, record: str | None) -> None:
    """Part 2: the example DataLoader training loop."""
    spec = importlib.util.spec_from_file_location("train_example", ROOT / "fixtures" / "training" / "train_example.py")
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    sinks: list[Any] = [MemorySink()] + ([record] if record else [])
    for sink in sinks:
        timings = Timings(sink, run="example", rank=0, interval=0.5)
        t0 = time.perf_counter()
        steps = example.train(timings, epochs=epochs, items=256, batch_size=8, workers=2, read_s=0.02, device=device)
        wall = time.perf_counter() - t0
        timings.close()
        if isinstance(sink, MemorySink):
            waits, wait_mean = phase_mean(sink, "data_wait")
            timed, step_mean = phase_mean(sink, "step")
            print(f"training loop on {device}: {steps} steps in {wall:.2f} s; latencymap saw {timed} steps "
                  f"(mean {step_mean * 1e3:.3f} ms) and {waits} data waits (mean {wait_mean * 1e3:.3f} ms) in "
                  f"{len(sink.intervals)} intervals; CUDA pairs dropped {timings.cuda_dropped}")
        else:
            print(f"recorded the same loop to {sink} ({steps} steps, {wall:.2f} s): read it with latencymap report")


def main() -> None:
    """Command line."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--record", default=None, metavar="FILE")
    ap.add_argument("--cpu", action="store_true", help="without a GPU, run the training loop on the CPU")
    ns = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        print(f"torch {torch.__version__}: no GPU here (torch.cuda.is_available() is False)")
        if ns.cpu:
            training_loop("cpu", ns.epochs, ns.record)
        return
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, Python {sys.version.split()[0]}")
    gpu_step_modes(torch, ns.steps, ns.size)
    training_loop("cuda", ns.epochs, ns.record)


if __name__ == "__main__":
    main()
