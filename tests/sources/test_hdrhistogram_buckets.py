"""HdrHistogram's sub-buckets kept as each column's source buckets: their layout, their resolution, and that columns of
any settings add up exactly (histograms written by the real library, PyPI `hdrhistogram`)."""

from __future__ import annotations

import numpy as np
from formats_support import intervals, read_items
from hdr_support import library_histogram, start_time_line

from latencymap.core.accumulator import accumulate
from latencymap.sources.hdrhistogram import HdrHistogramFormat
from latencymap.sources.hdrhistogram_buckets import CELL_BITS, MAX_BOUNDS, SPARSE
from latencymap.sources.hdrhistogram_codec import fold_payloads

START = 1_700_000_000.0


def _own(values: list[int], digits: int = 3, lowest: int = 1) -> tuple[list[float], list[int]]:
    """The source buckets of one library histogram holding `values`."""
    bounds, counts = fold_payloads([library_histogram(values, digits, lowest).encode().decode()]).own.of(0)
    return bounds.tolist(), counts.tolist()


def test_occupied_sub_buckets_listed_contiguously_as_the_library_reports_them() -> None:
    """3 digits: integers below 2048 are sub-buckets of their own, [4096, 8192) 4 wide. A sub-bucket of the integers
    [lo, hi) is the bucket (lo - 1, hi - 1], its top the library's highest equivalent value; an empty bucket bridges
    two that do not touch."""
    bounds, counts = _own([0, 1, 3, 1000, 1023, 1024, 5000])
    assert bounds == [0, 1, 2, 3, 999, 1000, 1022, 1023, 1024, 4999, 5003]
    assert counts == [1, 1, 0, 1, 0, 1, 0, 1, 1, 0, 1]
    lib = library_histogram([5000])
    assert lib.get_highest_equivalent_value(5000) == 5003 and lib.get_lowest_equivalent_value(5000) - 1 == 4999


def test_a_busy_power_of_two_is_merged_to_128_cells_a_sparse_one_keeps_the_librarys() -> None:
    """[2**20, 2**21) with 200 occupied sub-buckets (3 digits: 1,024 of 1,024 ns) becomes cells of 2**13 ns;
    [2**24, 2**25) with 3 keeps the library's 16,384 ns sub-buckets, and a 4-digit histogram's there are merged to
    those (3 digits at most)."""
    busy = [2**20 + 5_000 * i for i in range(200)]
    sparse = [2**24 + 100_000, 2**24 + 200_000, 2**24 + 5_000_000]
    assert len(busy) > SPARSE
    bounds, counts = _own(busy + sparse)
    cell = 1 << (20 - CELL_BITS)
    inside = [b for b in bounds if 2**20 <= b < 2**21]
    assert inside and all((b + 1) % cell == 0 for b in inside)
    lib = library_histogram(busy + sparse)
    tops = [b for b, c in zip(bounds, counts, strict=True) if c and b > 2**24]
    assert tops == [lib.get_highest_equivalent_value(v) for v in sparse]
    fine, _ = _own(sparse, digits=4)
    assert [b for b in fine if b > 2**24] == [b for b in bounds if b > 2**24]
    assert sum(counts) == len(busy) + len(sparse)


def test_columns_of_other_settings_and_resolutions_add_up_exactly() -> None:
    """Columns of 2, 3 and 4 digits, lowest discernible values 1 and 1000, busy and sparse in the same powers of two:
    the stream's totals are not mixed, and each of their buckets holds exactly the values recorded inside it."""
    rng = np.random.default_rng(4)
    columns = [(rng.integers(100_000, 400_000, 3_000).tolist(), 3, 1),  # busy
               (rng.integers(100_000, 400_000, 20).tolist(), 3, 1),  # sparse, finer where the first is busy
               (rng.integers(50_000, 5_000_000, 2_000).tolist(), 2, 1),
               (rng.integers(0, 400_000, 50).tolist(), 4, 1000),  # [0, 512) below the lowest discernible value
               (rng.integers(100_000, 400_000, 40).tolist(), 3, 1)]
    lines = ["#[Histogram log format version 1.3]\n", start_time_line(START),
             '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"\n']
    for k, (values, digits, lowest) in enumerate(columns):
        payload = library_histogram(values, digits, lowest).encode().decode()
        lines.append(f"{k}.000,1.000,0.0,{payload}\n")
    acc = accumulate(iter(intervals(read_items(HdrHistogramFormat, "".join(lines), "m.hlog"))))
    (hist,) = acc.streams.values()
    source = acc.sources[hist.stream]
    everything = np.sort(np.concatenate([np.array(values) for values, _, _ in columns]))
    assert not source.mixed and source.events == int(hist.totals().events) == len(everything)
    highs = np.array(source.bounds)
    lows = np.concatenate(([0.0 if highs[0] > 0 else -np.inf], highs[:-1]))
    held = source.counts > 0
    # (low, high] holds the integers low + 1 .. high, and [0, 512) below the lowest discernible value is (0, 511]
    inside = np.searchsorted(everything, highs, side="right") - np.searchsorted(everything, lows, side="right")
    inside[0] += int((everything == 0).sum()) if highs[0] > 0 else 0
    assert (inside[held] == source.counts[held]).all()
    assert held.sum() > 500 and source.counts.sum() == len(everything)


def test_a_column_busy_over_many_powers_of_two_is_halved_until_its_line_fits_a_record() -> None:
    """200 sub-buckets in each of 25 powers of two: 128 cells each would be 3,200 bounds, a `sourcebuckets` line past
    the record reader's 64 KiB at long numbers; halved to 64 cells each, it fits, and every value is counted."""
    values = np.unique(np.rint(np.geomspace(2**12, 2**37, 25 * 200))).astype(np.int64).tolist()
    bounds, counts = _own(values)
    assert len(bounds) <= MAX_BOUNDS < 25 * 128 and sum(counts) == len(values)
    widths = np.diff(bounds)[np.array(counts[1:]) > 0] / np.array(bounds[1:])[np.array(counts[1:]) > 0]
    assert widths.max() <= 1 / 32  # 64 cells a power of two: 1/64 to 1/32 of their values wide
    line = "sourcebuckets, " + ", ".join(repr(float(b) * 1e5) for b in bounds)  # as long as the numbers get
    assert len(line) < 64 * 1024
