"""Coverage-guided fuzzing (atheris, libFuzzer) of every input path: bytes → `read_input` → differ → accumulator.

The path is the CLI's own (`input_flow`: read_input with snapshot runs, then the differ).

The first byte of a fuzz input picks the format (auto-detection, or one registered text format forced)
and a set of format options; the rest is the input, read as a pipe. A reader may skip what it cannot
read (Notices), but it must not raise, and every interval it yields must be sound: int64 counts of the
right shape, none negative, finite times, end after start, text without control characters.

    .venv/bin/python fuzz/fuzz_inputs.py --seeds fuzz/seeds          # seed corpus from fixtures/
    .venv/bin/python fuzz/fuzz_inputs.py fuzz/corpus fuzz/seeds -rss_limit_mb=2048 -timeout=20 -max_total_time=3600

Arguments other than `--seeds DIR` go to libFuzzer (`-help=1` lists them); new inputs land in the first
corpus directory, a failing one in `crash-<sha1>` (replay it: `fuzz/fuzz_inputs.py crash-<sha1>`).
"""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import atheris
import numpy as np

#: NumPy-only modules stay uninstrumented: atheris 3.0's comparison hook leaks every array a `<`/`>=` returns
#: (about 120 bytes a comparison, gigabytes over an hour), and their branches say nothing about parsing.
NUMERIC = ["latencymap.core.accumulator", "latencymap.core.buckets", "latencymap.core.deltas",
           "latencymap.core.percentiles", "latencymap.sources.raw_values", "latencymap.sources.spark.binning",
           "latencymap.sources.bpf.collect", "latencymap.sources.hdrhistogram_codec",
           "latencymap.sources.hdrhistogram_buckets"]

with atheris.instrument_imports(include=["latencymap"], exclude=NUMERIC):
    from latencymap.core.accumulator import Accumulator
    from latencymap.core.buckets import NSLOTS
    from latencymap.core.errors import InputError, NothingReadable
    from latencymap.core.model import Interval, Notice
    from latencymap.flow.pipeline import input_flow
    from latencymap.plugins import load_registry

    REGISTRY = load_registry()

FORMATS: list[str | None] = [None, *sorted(REGISTRY.formats)]
OPTION_SETS: list[dict[str, object]] = [
    {},
    {"cumulative": True, "interval": 1.0},
    {"cumulative": False, "interval": 0.001, "unit": "nanosec", "time_unit": "millisec"},
    {"interval": 3600.0, "event": ("all",), "unit": "sec"},
]
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SEED_BYTES = 3000


def choice(selector: int) -> tuple[str | None, dict[str, object]]:
    """The format (None: auto-detect) and options a selector byte stands for."""
    return FORMATS[selector % len(FORMATS)], OPTION_SETS[(selector // len(FORMATS)) % len(OPTION_SETS)]


def selector_of(fmt: str | None, options: int = 0) -> int:
    """The selector byte for a format name (None: auto-detect) and an option set index."""
    return FORMATS.index(fmt) + options * len(FORMATS)


def check(item: object) -> None:
    """Assert that one item of a diffed flow is sound."""
    assert isinstance(item, (Interval, Notice)), type(item)
    if isinstance(item, Notice):
        assert not CONTROL.search(item.message), item.message
        assert item.skipped >= 0
        return
    assert item.counts.shape == (NSLOTS,) and item.counts.dtype == np.int64, item.counts
    assert (item.counts >= 0).all(), item.counts
    assert np.isfinite(item.start) and np.isfinite(item.end) and item.end > item.start, (item.start, item.end)
    assert item.time is None or (np.isfinite(item.time).all() and (item.time >= 0).all()), item.time
    assert not CONTROL.search(item.stream.label + item.stream.datasource + item.date), item.stream


def test_one_input(data: bytes) -> None:
    """One fuzz input: read it, diff it, accumulate it, check every item."""
    if not data:
        return
    fmt, options = choice(data[0])
    flow: list[Interval | Notice] = []
    try:
        flow.extend(input_flow(["-"], REGISTRY, fmt, dict(options), stdin=io.BytesIO(data[1:])))
    except InputError:
        return  # no format claims the input: a clean refusal
    except NothingReadable:
        pass  # every record was skipped: a clean failure (exit code 1); what the flow gave is still checked
    for item in flow:
        check(item)
    acc = Accumulator(cap=1000)
    acc.add(flow)
    for hist in acc.streams.values():
        totals = hist.totals(slice(0, hist.n))
        assert totals.events >= 0 and np.isfinite(totals.time_s)


def write_seeds(directory: Path) -> int:
    """A seed per fixture (its head), auto-detected and under each format; returns how many were written."""
    directory.mkdir(parents=True, exist_ok=True)
    count = 0
    for path in sorted(FIXTURES.rglob("*")):
        suffixes = (".txt", ".json", ".jsonl", ".trc", ".hlog")
        if not path.is_file() or path.suffix not in suffixes or path.parent.name == "spark":
            continue
        head = path.read_bytes()[:SEED_BYTES]
        for fmt in FORMATS:
            name = f"{path.stem}-{fmt or 'auto'}"
            (directory / name).write_bytes(bytes([selector_of(fmt)]) + head)
            count += 1
    return count


def main(argv: list[str]) -> None:
    """`--seeds DIR`, else run libFuzzer with `argv`."""
    if len(argv) == 3 and argv[1] == "--seeds":
        print(f"{write_seeds(Path(argv[2]))} seeds in {argv[2]}")
        return
    atheris.Setup(argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
