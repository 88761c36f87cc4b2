"""Per-call overhead of latencymap.instrument, in ns per call, against a bare loop measured in the same run.

`python bench/bench_instrument.py [--calls N] [--rounds R]`. Each case runs N calls R times; the median
of the rounds is reported, and the overhead is that median minus the bare baseline's. Flushes (binning
with NumPy) happen every 1 s as in real use and are included; the sink is a NullSink, so no I/O is
measured. Prints numbers only; asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from latencymap.instrument import Timings


def per_call_ns(body: Callable[[int], None], calls: int, rounds: int) -> float:
    """Median ns per call of `body(calls)` over `rounds` runs."""
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        body(calls)
        samples.append((time.perf_counter_ns() - t0) / calls)
    return statistics.median(samples)


def cases(timings: Timings) -> dict[str, tuple[Callable[[int], None], str]]:
    """Each instrumented case with the name of its bare baseline."""
    step = timings.timer("step")

    def work() -> None:
        pass

    timed_work = timings.timer("decorated")(work)

    def bare_iter(n: int) -> None:
        for _ in iter(range(n)):
            pass

    def timed_iter(n: int) -> None:
        for _ in timings.timed_iter(range(n), "data_wait"):
            pass

    def bare_call(n: int) -> None:
        for _ in range(n):
            work()

    def with_step(n: int) -> None:
        for _ in range(n):
            with step:
                work()

    def decorated(n: int) -> None:
        for _ in range(n):
            timed_work()

    return {"bare loop": (bare_iter, "bare loop"), "timed_iter": (timed_iter, "bare loop"),
            "bare call": (bare_call, "bare call"), "with timer": (with_step, "bare call"),
            "@timer": (decorated, "bare call")}


def main() -> None:
    """Print ns/call per case and the overhead over its baseline."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=200_000)
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args()
    timings = Timings("null", run="bench", rank=0, interval=1.0)
    results: dict[str, float] = {}
    for name, (body, _) in cases(timings).items():
        body(1000)  # warm up
        results[name] = per_call_ns(body, args.calls, args.rounds)
    clock = per_call_ns(lambda n: [time.perf_counter_ns() for _ in range(n)], args.calls, args.rounds)
    print(f"perf_counter_ns() itself: {clock:.1f} ns (a timing reads it twice)")
    print(f"{'case':<12} {'ns/call':>9} {'overhead ns':>12}   ({args.calls} calls x {args.rounds} rounds, median)")
    for name, (_, base) in cases(timings).items():
        extra = results[name] - results[base] if name != base else 0.0
        print(f"{name:<12} {results[name]:9.1f} {extra:12.1f}")
    timings.flush()  # bin what the cases left, so only the binning case is timed below
    binning = timings.values("binning")
    spent = 0
    for _ in range(args.rounds):
        binning.extend([1234] * args.calls)
        t0 = time.perf_counter_ns()
        timings.flush()
        spent += time.perf_counter_ns() - t0
    print(f"{'flush/value':<12} {spent / (args.rounds * args.calls):9.1f}  (NumPy binning at flush, per value)")
    timings.close()


if __name__ == "__main__":
    main()
