"""False-alarm and miss rates of the diagnosis on synthetic streams with known findings (printed, never asserted).

Usage: `python bench/bench_diagnosis.py [--seeds N] [--events N] [--width S]`

Streams (latencymap/analysis/synthetic.py), each over N seeds:
- unimodal: one lognormal (spread 0.2-1.0 in natural-log units); any band finding, bimodal, tail finding,
  episode, stall or drift is a false alarm;
- bimodal: 3-20% of events 4-6 octaves slower; missing "bimodal" is a miss (with --hard only where the
  planted band holds >= 3% of the events or >= 10% of the time, the documented rule); an episode, stall
  or drift is a false alarm;
- drifting: the median doubles twice over the stream; no drift finding is a miss; bimodal, a stall or a
  band finding is a false alarm;
- stalled: one to three ~1.5 s waits at one moment; no stall episode covering them is a miss; another
  stall, a drift or a shape episode elsewhere is a false alarm;
- shifted: the median jumps 1.5 octaves halfway; no shift finding is a miss; a drift, a stall or a band
  is a false alarm.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from collections.abc import Callable

import numpy as np
from bench_common import machine

from latencymap.analysis import synthetic
from latencymap.analysis.diagnosis import Diagnosis, diagnose


def kinds(d: Diagnosis) -> Counter[str]:
    """How many findings of each kind."""
    return Counter(f.kind for f in d.findings)


def covers(d: Diagnosis, start: float, end: float) -> bool:
    """True when a stall episode overlaps [start, end]."""
    return any(e.start <= end and start <= e.end for e in d.stalls)


def judge(name: str, s: synthetic.Stream, d: Diagnosis) -> tuple[list[str], list[str]]:
    """(false alarms, misses) of one diagnosis, by finding kind."""
    k = kinds(d)
    alarms: list[str] = []
    misses: list[str] = []
    if name == "unimodal":
        alarms += [kind for kind in k]
        alarms += ["bimodal"] if d.bimodal else []
    elif name == "bimodal":  # a planted band under the documented shares is no miss when not found
        misses += [] if d.bimodal or not s.bimodal else ["bimodal"]
        alarms += [kind for kind in k if kind not in ("band", "tail")]
    elif name == "drifting":
        misses += [] if k["drift"] else ["drift"]
        alarms += [kind for kind in k if kind not in ("drift", "move", "appear", "disappear", "reshape")]
        alarms += ["bimodal"] if d.bimodal else []
    elif name == "stalled":
        misses += [] if all(covers(d, a, b) for a, b in s.stalls) else ["stall"]
        alarms += ["stall"] * max(0, k["stall"] - len(s.stalls))
        alarms += [kind for kind in k if kind not in ("stall", "band", "tail")]
    elif name == "shifted":
        misses += [] if k["shift"] else ["shift"]
        alarms += [kind for kind in k if kind not in ("shift", "move", "appear", "disappear", "reshape")]
    return alarms, misses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--width", type=float, default=1.0, help="column width in seconds")
    parser.add_argument("--hard", action="store_true",
                        help="wider unimodal spreads (0.2-1.5), 1-3%% slow bands 2.5-4 octaves away, 1.2-octave drift")
    args = parser.parse_args()
    print(machine())
    rng = np.random.default_rng(0)
    makers: dict[str, Callable[[int], synthetic.Stream]] = {
        "unimodal": lambda seed: synthetic.unimodal(seed, args.events,
                                                    sigma=float(rng.uniform(0.2, 1.5)) if args.hard else None),
        "bimodal": lambda seed: synthetic.bimodal(seed, args.events, shares=(0.01, 0.03), octaves=(2.5, 4.0))
        if args.hard else synthetic.bimodal(seed, args.events),
        "drifting": lambda seed: synthetic.drifting(seed, args.events, octaves=1.2 if args.hard else 2.0),
        "stalled": lambda seed: synthetic.stalled(seed, args.events),
        "shifted": lambda seed: synthetic.shifted(seed, args.events, octaves=1.5),
    }
    print(f"{args.seeds} seeds x {args.events} events per stream, columns of {args.width:g} s"
          + (", hard" if args.hard else ""))
    print(f"{'stream':<10} {'false alarm':>12} {'miss':>8}   by kind")
    for name, make in makers.items():
        alarmed = missed = 0
        by_kind: Counter[str] = Counter()
        t0 = time.perf_counter()
        for seed in range(args.seeds):
            s = make(seed)
            counts, spent, starts, ends = synthetic.columns(s, args.width)
            d = diagnose(counts, spent, synthetic.LOW_S, synthetic.HIGH_S, starts, ends)
            alarms, misses = judge(name, s, d)
            alarmed += bool(alarms)
            missed += bool(misses)
            by_kind.update(f"alarm:{a}" for a in set(alarms))
            by_kind.update(f"miss:{m}" for m in set(misses))
        took = time.perf_counter() - t0
        detail = ", ".join(f"{k} {v}" for k, v in sorted(by_kind.items())) or "-"
        print(f"{name:<10} {alarmed / args.seeds:>11.1%} {missed / args.seeds:>8.1%}   {detail}  "
              f"({took / args.seeds * 1e3:.0f} ms per stream)")


if __name__ == "__main__":
    main()
