"""HdrHistogram interval logs: against the real library's reader, a hand-checked tagged log, bad input, detection."""

from __future__ import annotations

import base64
import itertools
import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from formats_support import FIXTURES, intervals, notices, read_items, registry
from hdr_support import (
    Logged,
    fixed_payload,
    hand_payload,
    java_varint,
    library_decode,
    library_histogram,
    library_index_counts,
    library_read,
    library_slots,
    start_time_line,
    write_library_log,
)

from latencymap.core.buckets import NSLOTS, bin_values
from latencymap.core.model import Notice, StreamId
from latencymap.flow.inputs import SNIFF_LINES, choose_format
from latencymap.flow.pipeline import input_flow
from latencymap.sources.hdrhistogram import HdrHistogramFormat
from latencymap.sources.hdrhistogram_buckets import CELL_BITS
from latencymap.sources.hdrhistogram_codec import PayloadError, decode_payload, fold_payloads

HLOG = FIXTURES / "hdrhistogram"
START = 1_700_000_000.0
HEADER = ["#[Histogram log format version 1.3]\n", start_time_line(START),
          '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"\n']


def payloads(path: Path) -> list[str]:
    """The base64 payload of every data line."""
    return [line.rsplit(",", 1)[1].strip() for line in path.read_text().splitlines()
            if line and not line.startswith(("#", '"'))]


def vector(slots: dict[int, int]) -> np.ndarray:
    out = np.zeros(NSLOTS, dtype=np.int64)
    for slot, count in slots.items():
        out[slot] = count
    return out


@pytest.mark.slow
@pytest.mark.parametrize("base_time", [START - 100.0, None], ids=["relative-to-BaseTime", "absolute"])
def test_library_log_counts_match_the_library_reader(tmp_path: Path, base_time: float | None) -> None:
    rng = np.random.default_rng(5)
    logged = [Logged(tag, START + k, 1.0, np.rint(rng.lognormal(np.log(2e5), 1.5, 700)).astype(np.int64).tolist())
              for k in range(6) for tag in (None, "gc")]
    path = write_library_log(tmp_path / "run.hlog", logged, START, base_time)
    items = read_items(HdrHistogramFormat, path.read_text(), str(path))
    assert notices(items) == []
    cols = intervals(items)
    library = library_read(path)
    assert len(cols) == len(library) == len(logged)
    for col, lib, item, payload in zip(cols, library, logged, payloads(path), strict=True):
        assert col.stream.label == (item.tag or "run.hlog") and col.stream.unit == "nanosec"
        assert col.start == pytest.approx(lib.get_start_time_stamp() / 1000, abs=1e-6) == pytest.approx(item.start)
        assert col.end == pytest.approx(lib.get_end_time_stamp() / 1000, abs=1e-6)
        decoded = decode_payload(payload)
        assert dict(zip(decoded.index.tolist(), decoded.counts.tolist(), strict=True)) == library_index_counts(lib)
        assert col.counts.tolist() == library_slots(lib).tolist() == bin_values(np.array(item.values))[0].tolist()
        assert float(col.time.sum()) == pytest.approx(lib.get_mean_value() * lib.get_total_count() * 1e-9, rel=1e-12)
    values = np.concatenate([np.array(i.values, dtype=np.float64) for i in logged])
    spent = sum(float(c.time.sum()) for c in cols)
    assert spent == pytest.approx(values.sum() * 1e-9, rel=0.005)
    # 3 digits: a sub-bucket is at most 1/1024 of its values wide, its median within half of that of each value.
    assert abs(spent - values.sum() * 1e-9) <= values.sum() * 1e-9 / 2048


def test_hand_checked_tagged_log_in_the_java_layout() -> None:
    path = HLOG / "tagged_java_layout.hlog"
    items = read_items(HdrHistogramFormat, path.read_text(), str(path))
    assert notices(items) == []
    cols = {(c.stream.label, round(c.start - START)): c for c in intervals(items)}
    # StartTime 1700000000 and no BaseTime line: the first timestamp (0.000) is more than a year before the start
    # time, so timestamps are relative to it (Java's HistogramLogReader rule).
    assert sorted(cols) == [("read", 0), ("read", 1), ("write", 0), ("write", 1)]
    assert all(c.end - c.start == 1.0 and c.stream.datasource == "hdrhistogram" for c in cols.values())
    # 3 significant digits: 2048 sub-buckets, so every integer below 2048 is its own sub-bucket (its own median);
    # [2048, 4096) has sub-buckets 2 wide, [4096, 8192) 4 wide, [2**19, 2**20) 512 wide. Slot s holds
    # [2**(s-1), 2**s): 0 → 0; 1 → 1; 3 → 2; 100 → 7; 150 → 8; 1000, 1023 → 10; 1024, 2047 → 11;
    # 2048, 2049, 4095 → 12; 5000 → 13; 1_000_000 → 20.
    expected = {
        ("read", 0): ({1: 1, 2: 1, 10: 2, 11: 1, 13: 1},
                      {1: 1, 2: 3, 10: 1000 + 1023, 11: 1024, 13: 5002}),  # 5000 in [5000, 5004): median 5002
        ("write", 0): ({7: 2, 8: 1, 20: 1},
                       {7: 200, 8: 150, 20: 1_000_192}),  # 1_000_000 in [999_936, 1_000_448): median 1_000_192
        ("read", 1): ({0: 1, 11: 1, 12: 3},
                      {0: 0, 11: 2047, 12: 2049 + 2049 + 4095}),  # 2048, 2049 in [2048, 2050); 4095 in [4094, 4096)
        ("write", 1): ({}, {}),
    }
    for key, (counts, medians) in expected.items():
        assert cols[key].counts.tolist() == vector(counts).tolist(), key
        times = np.zeros(NSLOTS)
        for slot, ns in medians.items():
            times[slot] = ns * 1e-9
        np.testing.assert_allclose(cols[key].time, times, rtol=1e-12, err_msg=str(key))


def test_decoder_on_hand_made_bytes_zero_runs_and_a_nine_byte_count() -> None:
    words = bytes([
        0x09,  # ZigZag 9 → -5: five zero counts (indexes 0-4)
        0x06,  # 3 at index 5
        0x00,  # 0 at index 6 (Java writes a lone zero as 0, not as a run)
        0x02,  # 1 at index 7
        *[0x80] * 8, 0x20,  # nine bytes: 0x20 << 56 = 2**61, ZigZag → 2**60 at index 8 (9th byte holds 8 bits)
        0xCB, 0x0F,  # 0x4B + 0x0F << 7 = 1995 → -998: indexes 9-1006 are zero
        0x04,  # 2 at index 1007
    ])
    hist = decode_payload(hand_payload(words))
    assert (hist.settings.digits, hist.settings.lowest, hist.settings.ratio) == (3, 1, 1.0)
    assert hist.index.tolist() == [5, 7, 8, 1007] and hist.counts.tolist() == [3, 1, 2**60, 2]
    folded = fold_payloads([hand_payload(words)])  # below 2048 an index is its value: 5, 7 → 3; 8 → 4; 1007 → 10
    assert folded.errors == [None]
    assert folded.counts[0].tolist() == vector({3: 4, 4: 2**60, 10: 2}).tolist()
    assert folded.values[0, 3] == 5 * 3 + 7 and folded.values[0, 10] == 2 * 1007
    assert (folded.below_lowest[0], folded.straddling[0]) == (0, 0)
    # Long.MAX_VALUE: ZigZag 2**64 - 2, whose 9th byte (0xFF) has its top bit set and is no continuation.
    top = hand_payload(bytes([0xFE, *[0xFF] * 8, 0x02]))
    assert decode_payload(top).index.tolist() == [0, 1] and decode_payload(top).counts.tolist() == [2**63 - 1, 1]
    folded = fold_payloads([top, hand_payload(words)])
    assert folded.errors == ["expected at most 4611686018427387904 events in one histogram", None]
    assert folded.counts[0].tolist() == [0] * NSLOTS and folded.counts[1, 4] == 2**60


def _java_columns(path: Path) -> list[tuple[float, float, float, str]]:
    """(start, length, max ms, payload) of each data line, as jHiccup wrote them."""
    rows = []
    for line in path.read_text().splitlines():
        if line and not line.startswith(("#", '"')):
            start, length, top, payload = line.split(",")
            rows.append((float(start), float(length), float(top), payload))
    return rows


def _top_slot(counts: np.ndarray) -> int:
    return int(np.flatnonzero(counts)[-1])


def _slots_of_logged_max(ms: float) -> set[int]:
    """The slots a max logged as `%.3f` ms may lie in: it is rounded to the microsecond (0.131 may be 131072 ns)."""
    ns = np.array([ms * 1e6 - 500, ms * 1e6 + 499])
    return set(range(*(int(np.flatnonzero(bin_values(v[None])[0])[0]) + k for v, k in zip(ns, (0, 1), strict=True))))


def test_jhiccup_v0_log_of_2014_reads_as_java_wrote_it() -> None:
    """HdrHistogram's own sample from jHiccup 2.0.3 (log format 1.01, V0 payloads of 8-byte counts, whose header
    keeps the total count); checked against what Java wrote beside the counts: that total and the interval max."""
    path = HLOG / "hiccup.140623.1028.10646.hlog"
    items = read_items(HdrHistogramFormat, path.read_text(), str(path))
    cols, rows = intervals(items), _java_columns(path)
    assert len(cols) == len(rows) == 11
    for col, (start, length, top_ms, payload) in zip(cols, rows, strict=True):
        raw = base64.b64decode(payload)
        assert struct.unpack_from(">I", raw)[0] == 0x1C849389  # V0, compressed, 8-byte words
        cookie, digits, lowest, _highest, total = struct.unpack_from(">Iiqqq", zlib.decompress(raw[8:]))
        assert (cookie, digits, lowest) == (0x1C849388, 2, 20000)
        assert int(col.counts.sum()) == total
        assert _top_slot(col.counts) in _slots_of_logged_max(top_ms)
        assert col.start == pytest.approx(1403476110.183 + start) and col.end - col.start == pytest.approx(length)
        assert col.stream.unit == "nanosec" and not col.gap
    assert sum(int(c.counts.sum()) for c in cols) == 51715
    # Index 0 of a histogram whose lowest discernible value is 20000 ns is [0, 16384): said once, shown at 8192.
    assert [m.split(": ", 2)[2] for m in notices(items)[1:]] == [
        "890 value(s) here (and any on later lines) below the histogram's lowest discernible value 20000 "
        "(HdrHistogram keeps [0, 16384) as one count) are shown at 8192"]


def test_v1_and_v0_words_of_every_size_give_what_the_v0_log_gives() -> None:
    """The V0 sample's counts, re-encoded as V1 (2-, 4- and 8-byte words) and as V0 (2 and 4 bytes)."""
    originals = [p for *_, p in _java_columns(HLOG / "hiccup.140623.1028.10646.hlog")]
    words = [np.frombuffer(zlib.decompress(base64.b64decode(p)[8:])[32:], dtype=">i8").tolist() for p in originals]
    want = fold_payloads(originals)
    assert want.errors == [None] * len(originals)
    for version, word in [(1, 2), (1, 4), (1, 8), (0, 2), (0, 4)]:
        again = fold_payloads([fixed_payload(w, word=word, version=version) for w in words])
        assert again.errors == want.errors, (version, word)
        assert again.counts.tolist() == want.counts.tolist() and again.values.tolist() == want.values.tolist()
        assert again.below_lowest.tolist() == want.below_lowest.tolist()


def test_hdrhistogram_c_v1_payloads_hold_its_standard_test_histograms() -> None:
    """V1 payloads written by HdrHistogram's C library (kept in its Python library's tests): its load_histogram()
    records 10,000 values of 1000 and one of 100,000,000 (3 digits); the corrected histogram adds what an expected
    interval of 10,000 implies below the big one: 100,000,000 - k x 10,000 for k = 1..9,999. Its encoder counted the
    40-byte header in the payload length; the zlib stream is whole, and the Python library's interop test reads them."""
    named = dict(line.split(" ", 1) for line in (HLOG / "hdrhistogram_c_v1.payloads").read_text().splitlines())
    raw = np.array([1000] * 10_000 + [100_000_000], dtype=np.float64)
    corrected = np.concatenate([raw, 100_000_000 - 10_000 * np.arange(1, 10_000)])
    folded = fold_payloads([named["raw"], named["corrected"], named["wrk2"]])
    assert folded.errors == [None, None, None]
    assert folded.counts[0].tolist() == bin_values(raw)[0].tolist()
    assert folded.counts[1].tolist() == bin_values(corrected)[0].tolist()
    assert [s.digits for s in folded.settings if s] == [3, 3, 2] and int(folded.counts[2].sum()) == 300
    # Time spent: each value at its sub-bucket's median, within half a sub-bucket (1/2048 at 3 digits).
    assert folded.values[1].sum() == pytest.approx(corrected.sum(), rel=1 / 4096)
    truncated = named["raw"][:-12]  # the same quirk does not excuse a stream that is cut short
    assert fold_payloads([truncated]).errors[0] is not None


def test_a_v1_log_with_absolute_timestamps_before_its_start_time() -> None:
    """raphael.hlog (the Python library's tests, logged in 2021): one 63 s interval, a V1 payload of 8-byte counts at
    2 digits; its timestamp is absolute and 63 s before StartTime (not a year: Java's rule keeps it absolute)."""
    path = HLOG / "raphael.hlog"
    items = read_items(HdrHistogramFormat, path.read_text(), str(path))
    (col,), ((start, length, top_ms, payload),) = intervals(items), _java_columns(path)
    assert struct.unpack_from(">I", base64.b64decode(payload))[0] & ~0xF0 == 0x1C849302  # compressed V1
    assert col.start == pytest.approx(start) == pytest.approx(1629447418.475) and col.end - col.start == \
        pytest.approx(length)
    assert _top_slot(col.counts) in _slots_of_logged_max(top_ms) and int(col.counts.sum()) > 100_000
    assert [m for m in notices(items) if "expected" in m] == []


@pytest.mark.slow
def test_jhiccup_v2_log_of_2015_matches_the_library_and_the_logged_max() -> None:
    """HdrHistogram's sample from jHiccup 2.0.7 (Java-written V2): every payload's counts are the Python
    library's, and each interval's highest slot holds the max Java logged beside it."""
    path = HLOG / "jHiccup-2.0.7S.logV2.hlog"
    items = read_items(HdrHistogramFormat, path.read_text(), str(path))
    cols, rows = intervals(items), _java_columns(path)
    assert len(cols) == len(rows) == 38
    for col, (start, _length, top_ms, payload) in zip(cols, rows, strict=True):
        lib = library_decode(payload)
        decoded = decode_payload(payload)
        assert dict(zip(decoded.index.tolist(), decoded.counts.tolist(), strict=True)) == library_index_counts(lib)
        assert int(col.counts.sum()) == lib.get_total_count()
        assert _top_slot(col.counts) in _slots_of_logged_max(top_ms)
        assert col.start == pytest.approx(1441753532.570 + start)


@pytest.mark.parametrize(("digits", "lowest"), [(0, 1), (1, 1), (2, 1), (3, 1), (2, 1000), (3, 3), (1, 2**20)])
def test_no_sub_bucket_crosses_a_power_of_two(digits: int, lowest: int) -> None:
    """Every index of a whole counts array (values past 2**63), with exact integers: a sub-bucket's lowest and
    highest value have the same bit length (so one slot), except index 0 when lowest > 1 ([0, 2**u))."""
    u = lowest.bit_length() - 1
    half_mag = max((2 * 10**digits - 1).bit_length() - 1, 0)  # ceil(log2(2 * 10**digits)) - 1
    half = 1 << half_mag
    length = (64 - u - half_mag + 1) << half_mag
    expected = []
    for index in range(length):
        bucket = (index >> half_mag) - 1
        sub = index if bucket < 0 else (index & (half - 1)) + half
        shift = max(bucket, 0) + u
        low, high = sub << shift, ((sub + 1) << shift) - 1
        if index == 0 and u:
            assert low.bit_length() != high.bit_length()
        else:
            assert low.bit_length() == high.bit_length(), (index, low, high)
        expected.append(min(high.bit_length(), NSLOTS - 1) if index or not u else u)
    # The codec puts a count at every index into exactly that slot.
    folded = fold_payloads([hand_payload(b"\x02" * length, digits=digits, lowest=lowest)])
    assert folded.errors == [None]
    assert folded.counts[0].tolist() == np.bincount(expected, minlength=NSLOTS).tolist()


@pytest.mark.parametrize(("ratio", "slot", "crossing"), [(0.5, 11, 0), (2.0**-20, 0, 0), (1.5, 13, 1)])
def test_conversion_ratio_scales_values_and_a_range_across_a_power_of_two_is_said(ratio: float, slot: int,
                                                                                 crossing: int) -> None:
    # 3 digits: index 2389 is bucket 1 (width 2), sub-bucket 1365: the integers [2730, 2732), median 2731.
    # x 1.5 that is [4095, 4098): it crosses 4096, and the median 4096.5 puts it in slot 13.
    payload = hand_payload(java_varint(-2389) + java_varint(1), ratio=ratio)
    folded = fold_payloads([payload])
    assert folded.counts[0].tolist() == vector({slot: 1}).tolist() and folded.straddling[0] == crossing
    assert folded.values[0, slot] == 2731 * ratio
    items = read_items(HdrHistogramFormat, "".join(HEADER) + f"0.0,1.0,0.0,{payload}\n", "r.hlog")
    assert [m.startswith("r.hlog: line 4: the conversion ratio 1.5 is not a power of two: 1 count(s)")
            for m in notices(items)] == ([True] if crossing else [])


def _double(inner: bytes, cookie: int = 0x0C72124F, digits: int = 3, ratio: int = 2) -> str:
    """A DoubleHistogram payload around the integer histogram payload `inner` (raw bytes)."""
    return base64.b64encode(struct.pack(">Iiq", cookie, digits, ratio) + inner).decode()


@pytest.mark.parametrize(("payload", "expected"), [
    ("HIST!!!!", "not valid base64"),
    (hand_payload(b"\x02", outer=0x1C849305), "expected a compressed V2, V1 or V0 histogram (cookie 0x1c849304, "
                                              "0x1c849302 or 0x1c849309) or DoubleHistogram (0x0c72124f), got "
                                              "cookie 0x1c849305"),
    (_double(b""), "expected a DoubleHistogram of at least 24 bytes (its header and an integer histogram's), got 16"),
    (_double(base64.b64decode(hand_payload(b"\x02")), cookie=0x0C72124E), "got the uncompressed encoding 0x0c72124e"),
    (_double(base64.b64decode(hand_payload(b"\x02")), ratio=1), "a value ratio of 2 or more, got 3 digits and ratio 1"),
    (_double(base64.b64decode(hand_payload(b"\x02", outer=0x0C72124F))), "or DoubleHistogram (0x0c72124f), got "
                                                                         "cookie 0x0c72124f"),  # not nested twice
    (hand_payload(b"\x02", outer=0x1C849382), "expected a V1 encoding cookie 0x1c849301 inside, got 0x1c849313"),
    (fixed_payload([1, 2], word_bits=3), "expected counts of 2, 4 or 8 bytes (cookie bits 4-7), got 3"),
    (fixed_payload([1, 2], word_bits=3, version=0), "expected counts of 2, 4 or 8 bytes (cookie bits 4-7), got 3"),
    (fixed_payload([1, -2]), "expected counts of 0 or more, got -2"),
    (fixed_payload([1, 2], size=24), "zlib stream truncated: expected 24 bytes of counts, got 16"),
    (fixed_payload([1, 2, 3], size=8), "expected 8 bytes of counts (the header's payload length), the stream holds"),
    (fixed_payload([1, 2, 3], word=4, word_bits=8, version=0), "expected counts of 8 bytes each, got 12 bytes"),
    (hand_payload(b"\x02", cookie=0x0C72124E), "expected a V2 encoding cookie"),
    (hand_payload(b"\x02", digits=7), "expected 0 to 5 significant digits, got 7"),
    (hand_payload(b"\x80"), "the counts end inside one"),
    (hand_payload(b"\x01" * 4)[:-8], "payload truncated: its header says"),
    (hand_payload(b"\x02\x02", size=1), "expected 1 bytes of counts (the header's payload length), the stream holds"),
    (hand_payload(b"\x02", ratio=0.0), "expected a positive integer-to-double conversion ratio, got 0.0"),
    (hand_payload(b"\x02", lowest=0), "expected 1 <= lowest discernible value <= highest trackable / 2, got 0"),
    (hand_payload(java_varint(-(2**31))), "expected runs of at most 2147483647 zero counts, got 2147483648"),
    (hand_payload(java_varint(-(2**31 - 1)) + b"\x02"), "expected at most 56320 counts (values up to 2**63), got"),
])
def test_payload_errors_say_what_was_expected(payload: str, expected: str) -> None:
    with pytest.raises(PayloadError) as err:
        decode_payload(payload)
    assert expected in str(err.value)
    good = payloads(HLOG / "tagged_java_layout.hlog")[0]
    folded = fold_payloads([good, payload, good])  # one bad payload in a batch costs only its own row
    assert folded.errors[0] is None and expected in str(folded.errors[1]) and folded.errors[2] is None
    assert folded.counts.sum(axis=1).tolist() == [6, 0, 6] and folded.values[1].sum() == 0


def _truncated_zlib(payload: str) -> str:
    """The payload with its zlib stream cut short (and the outer length fixed to match)."""
    raw = base64.b64decode(payload)
    packed = raw[8:-10]
    return base64.b64encode(raw[:4] + struct.pack(">i", len(packed)) + packed).decode()


def _bad_checksum(payload: str) -> str:
    raw = bytearray(base64.b64decode(payload))
    raw[-1] ^= 0xFF  # the last byte of zlib's adler32
    return base64.b64encode(bytes(raw)).decode()


def test_bad_lines_are_reported_with_their_line_number_and_reading_goes_on(tmp_path: Path) -> None:
    good = payloads(HLOG / "tagged_java_layout.hlog")[0]  # read: 6 events
    data = [
        f"Tag=read,0.000,1.000,0.005,{good}",
        "Tag=read,1.000,1.000,0.005,HIST!!!notbase64",
        f"Tag=read,2.000,1.000,0.005,{_truncated_zlib(good)}",
        f"Tag=read,3.000,1.000,0.005,{_bad_checksum(good)}",
        f"Tag=read,4.000,1.000,0.005,{good[:-8]}",
        f"Tag=read,5.000,1.000,0.005,{hand_payload(b'', outer=0x0C72124F)}",
        f"Tag=read,abc,1.000,0.005,{good}",
        "garbage, not a histogram",
        f"Tag=read,6.000,-1,0.005,{good}",
        f"Tag=read,6.000,0,0.005,{good}",
        f"Tag=read,7.000,1.000,0.005,{good}",
    ]
    path = tmp_path / "bad.hlog"
    path.write_text("".join(HEADER) + "\n".join(data) + "\n")
    items = read_items(HdrHistogramFormat, path.read_text(), "bad.hlog")
    msgs = notices(items)
    first = len(HEADER) + 1
    expected = [
        (first + 1, "read: expected a base64 histogram payload; it is not valid base64"),
        (first + 2, "zlib stream truncated"),
        (first + 3, "corrupt zlib stream"),
        (first + 4, "payload truncated: its header says"),
        (first + 5, "expected a DoubleHistogram of 0 to 5 significant digits"),
        (first + 6, "expected '[Tag=NAME,]<start s>,<length s>,<max>,<base64 histogram>', got"),
        (first + 7, "expected '[Tag=NAME,]<start s>,<length s>,<max>,<base64 histogram>', got"),
        (first + 8, "expected an interval length of 0 or more, got -1; line skipped"),
        (first + 9, "read: an interval of length 0 s (shorter than the log's resolution, 1 s): its events join the "
                    f"stream's next interval (line {first + 10}), whose column starts at 6.000"),
    ]
    assert len(msgs) == len(expected)
    for msg, (line, text) in zip(msgs, expected, strict=True):
        assert msg.startswith(f"bad.hlog: line {line}: ") and text in msg, msg
    cols = intervals(items)
    assert [round(c.start - START) for c in cols] == [0, 1, 2, 3, 4, 5, 6]
    assert [c.gap for c in cols] == [False, True, True, True, True, True, False]
    assert [int(c.counts.sum()) for c in cols] == [6, 0, 0, 0, 0, 0, 12]  # the 0 s long interval's 6 are not lost


def test_intervals_too_short_for_a_column_keep_their_events() -> None:
    """A 0 s interval whose stream goes on joins its next interval; one whose log ends (or a new log starts) gets half
    the resolution its digits say; one too short for float precision at its time, the least length there."""
    good = payloads(HLOG / "tagged_java_layout.hlog")[0]  # 6 events
    lines = [start_time_line(START), f"0.000,1.000,0,{good}\n", f"1.0,0,0,{good}\n",  # log 1 ends: 0.5 s (res 1 s)
             start_time_line(START + 100), f"0.000,0.000,0,{good}\n", f"0.000,1.000,0,{good}\n",  # joined
             f"Tag=far,1e16,0.001,0,{good}\n", f"Tag=far,1e16,0.000,0,{good}\n"]  # both held, then 1 ulp
    items = read_items(HdrHistogramFormat, "".join(lines), "t.hlog")
    live = list(HdrHistogramFormat().read_text(["".join(lines[:6]), "".join(lines[6:])], "t.hlog"))
    for got in (items, live):
        cols = [(c.stream.label, c.start, c.end, int(c.counts.sum())) for c in intervals(got) if not c.gap]
        assert cols == [("t.hlog", START, START + 1, 6), ("t.hlog", START + 1, START + 1.5, 6),
                        ("t.hlog", START + 100, START + 101, 12),
                        ("far", START + 100 + 1e16, np.nextafter(START + 100 + 1e16, np.inf), 12)]
        assert notices(got) == [
            "t.hlog: line 3: an interval of length 0 s (shorter than the log's resolution, 1 s), and no later interval "
            "of its stream follows: its column starts at 1.000 and lasts 0.5 s (half the log's resolution)",
            "t.hlog: line 4: a new log starts here (StartTime 1700000100.000); its times count from it",
            "t.hlog: line 5: an interval of length 0.000 s (shorter than the log's resolution, 0.001 s): its events "
            "join the stream's next interval (line 6), whose column starts at 0.000",
            "t.hlog: lines 7, 8: far: intervals of length 0.001/0.000 s, too short for float precision at "
            f"{START + 100 + 1e16:g} s, and no later interval of its stream follows: its column starts at "
            "10000000000000000.000 and lasts 2 s (the least length float precision allows there)"]


def test_time_rules_of_the_java_reader() -> None:
    good = payloads(HLOG / "tagged_java_layout.hlog")[0]

    def starts(lines: list[str]) -> list[float]:
        return [c.start for c in intervals(read_items(HdrHistogramFormat, "".join(lines), "t.hlog"))]

    # No StartTime, no BaseTime: the first timestamp is the start time; nothing is a year before it → absolute.
    assert starts([f"12.5,1.0,0.0,{good}\n", f"13.5,1.0,0.0,{good}\n"]) == [12.5, 13.5]
    # StartTime, no BaseTime, absolute timestamps (not a year before the start time).
    assert starts([start_time_line(START), f"{START + 3:.3f},1.0,0.0,{good}\n"]) == [START + 3]
    assert starts([start_time_line(START), f"{START - 100:.3f},1.0,0.0,{good}\n"]) == [START - 100]
    # BaseTime wins over the StartTime rule.
    assert starts([start_time_line(START), "#[BaseTime: 1600000000.000 (seconds since epoch)]\n",
                   f"2.0,1.0,0.0,{good}\n"]) == [1_600_000_002.0]
    # Java rounds times to ms: a 1 ms overlap moves the start up silently; going back in time is said once.
    items = read_items(HdrHistogramFormat, "".join([f"10.000,1.001,0.0,{good}\n", f"11.000,1.000,0.0,{good}\n",
                                                    f"5.000,1.000,0.0,{good}\n"]), "t.hlog")
    assert [(c.start, c.end) for c in intervals(items)] == [(10.0, 11.001), (11.001, 12.0), (12.0, 13.0)]
    (msg,) = notices(items)
    assert msg.startswith("t.hlog: line 3: the interval starts at 5.000, before the previous one ends")


def test_values_below_the_lowest_discernible_value_are_said_and_counted(tmp_path: Path) -> None:
    hist = library_histogram([0, 100, 511, 512, 600, 5000], lowest=1000)  # unit magnitude 9: [0, 512) is index 0
    payload = hist.encode().decode()
    items = read_items(HdrHistogramFormat, "".join(HEADER) + f"0.0,1.0,0.0,{payload}\n", "low.hlog")
    (msg,) = notices(items)
    assert "3 value(s) here (and any on later lines) below the histogram's lowest discernible value 1000" in msg
    assert "shown at 256" in msg
    (col,) = intervals(items)
    assert col.counts.tolist() == vector({9: 3, 10: 2, 13: 1}).tolist()


def _head(path: Path) -> list[str]:
    with path.open() as fh:
        return list(itertools.islice(fh, SNIFF_LINES))


@pytest.mark.parametrize("name", ["service_ns.hlog", "tagged_java_layout.hlog"])
def test_detected_from_the_header(name: str) -> None:
    assert choose_format(registry(), _head(HLOG / name), name, None).name == "hdrhistogram"
    assert choose_format(registry(), _head(HLOG / name)[-1:], name, None).name == "hdrhistogram"  # a data line alone


@pytest.mark.slow
def test_report_detects_the_log_and_gives_every_interval_and_count() -> None:
    from latencymap.cli import main as cli

    path = HLOG / "service_ns.hlog"
    result = CliRunner().invoke(cli.main, ["report", "--format", "json", str(path)])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    (stream,) = doc["streams"]
    library = library_read(path)
    assert stream["stream"] == {"label": "service_ns.hlog", "datasource": "hdrhistogram", "unit": "nanosec"}
    assert stream["columns"] == len(library) == 12 and stream["start"] == START and stream["end"] == START + 12
    assert stream["intensity_exact"] and doc["errors"]["messages"] == []
    lows = [b["low"] for b in stream["buckets"]]
    first = int(np.log2(lows[0] * 1e9)) + 1  # slot of the first bucket shown (ns)
    for row, lib in zip(stream["frequency"], library, strict=True):  # one-second columns: events/s = events
        counts = library_slots(lib)
        assert [round(f) for f in row] == counts[first:first + len(row)].tolist()
        assert counts.sum() == counts[first:first + len(row)].sum()
    assert stream["total"]["events"] == sum(lib.get_total_count() for lib in library)
    library_time = sum(lib.get_mean_value() * lib.get_total_count() for lib in library) * 1e-9
    assert stream["total"]["time_s"] == pytest.approx(library_time, rel=1e-12)


def test_unit_option_scales_time_and_names_the_unit() -> None:
    path = HLOG / "tagged_java_layout.hlog"
    ns = intervals(read_items(HdrHistogramFormat, path.read_text(), "t.hlog"))
    us = intervals(read_items(HdrHistogramFormat, path.read_text(), "t.hlog", unit="microsec"))
    assert {c.stream.unit for c in us} == {"microsec"}
    assert [c.counts.tolist() for c in us] == [c.counts.tolist() for c in ns]
    np.testing.assert_allclose([c.time.sum() for c in us], [c.time.sum() * 1000 for c in ns], rtol=1e-12)



def _latencymap(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "latencymap", *args], input=stdin, capture_output=True, timeout=120,
                          env={**os.environ, "NO_COLOR": "1"})


def _counts_and_time(report: bytes) -> list[tuple[str, int, float, list[list[float]]]]:
    return [(s["stream"]["label"], s["total"]["events"], s["total"]["time_s"], s["frequency"])
            for s in json.loads(report)["streams"]]


@pytest.mark.slow
def test_every_cli_path_reads_the_log(tmp_path: Path) -> None:
    path = HLOG / "tagged_java_layout.hlog"
    direct = _latencymap("report", "--format", "json", str(path))
    assert direct.returncode == 0, direct.stderr
    expected = _counts_and_time(direct.stdout)
    assert [(label, events) for label, events, _, _ in expected] == [("read", 11), ("write", 4)]

    plain = _latencymap("--plain", "--once", str(path))
    assert plain.returncode == 0, plain.stderr
    assert b"Label: write  datasource: hdrhistogram  unit: nanosec" in plain.stdout

    emitted = _latencymap("--emit", str(path))
    assert emitted.returncode == 0 and emitted.stdout.count(b"<begin record>") == 4
    (tmp_path / "emitted.txt").write_bytes(emitted.stdout)
    rec = tmp_path / "rec.txt"
    recorded = _latencymap("--plain", "--once", "--record", str(rec), str(path))
    assert recorded.returncode == 0, recorded.stderr
    piped = _latencymap("report", "--format", "json", "-", stdin=path.read_bytes())
    for other in (_latencymap("report", "--format", "json", str(tmp_path / "emitted.txt")),
                  _latencymap("report", "--format", "json", str(rec)), piped):
        assert other.returncode == 0, other.stderr
        got = _counts_and_time(other.stdout)
        assert [(label, events, freq) for label, events, _, freq in got] == \
               [(label, events, freq) for label, events, _, freq in expected]
        assert [t for *_, t, _ in got] == pytest.approx([t for *_, t, _ in expected], rel=1e-9)
    replay = _latencymap("replay", "--max", "--plain", "--once", str(rec))
    assert replay.returncode == 0 and b"Label: write" in replay.stdout


def wide_log(tmp_path: Path) -> tuple[Path, list[Logged]]:
    """A library log whose first interval (4 significant digits, values over seven decades) encodes to ~120 KB."""
    rng = np.random.default_rng(9)
    wide = np.exp(rng.uniform(np.log(1e3), np.log(1e10), 300_000)).astype(np.int64).tolist()
    logged = [Logged(None, START, 1.0, wide), Logged(None, START + 1, 1.0, [1000, 2000, 3000])]
    return write_library_log(tmp_path / "wide.hlog", logged, START, digits=4), logged


def test_lines_of_a_hundred_kilobytes_are_read_whole_from_a_file_and_from_stdin(tmp_path: Path) -> None:
    from latencymap.cli import main as cli

    path, logged = wide_log(tmp_path)
    longest = max(len(line) for line in path.read_text().splitlines())
    assert longest > 100_000  # past the 64 KiB other formats' lines are cut at
    want = sum(len(item.values) for item in logged)
    library = library_read(path)
    assert sum(h.get_total_count() for h in library) == want
    for args, stdin in ((["report", "--format", "json", str(path)], None),
                        (["report", "--format", "json"], path.read_text())):
        result = CliRunner().invoke(cli.main, args, input=stdin)
        assert result.exit_code == 0, result.output
        doc = json.loads(result.output)
        (stream,) = doc["streams"]
        assert stream["total"]["events"] == want and doc["errors"]["messages"] == []
        assert stream["gaps"] == []


def test_a_line_past_the_format_limit_is_cut_said_and_its_column_left_empty(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from latencymap.cli import main as cli
    from latencymap.sources import hdrhistogram

    path, logged = wide_log(tmp_path)
    monkeypatch.setattr(hdrhistogram, "MAX_HLOG_LINE", 50_000)
    monkeypatch.setattr(HdrHistogramFormat, "max_line", 50_000)
    result = CliRunner().invoke(cli.main, ["report", "--format", "json", str(path)])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    (stream,) = doc["streams"]
    assert stream["total"]["events"] == len(logged[1].values) and stream["gaps"] == [0]
    (message,) = doc["errors"]["messages"]
    assert "line 5" in message and "(the line was cut at 50000 characters)" in message and "gap" in message


def test_a_log_of_which_no_payload_could_be_decoded_is_nothing_readable(tmp_path: Path) -> None:
    """Every payload corrupt: its columns are empty gaps, no data; report, the plain view and a `--fail-if` gate
    fail (exit 1) naming the file, as for an input of which no record could be read (they exited 0, and the gate
    passed). One good payload among them is a report (exit 0) with its notes."""
    from latencymap.cli import main as cli

    bad = tmp_path / "bad.hlog"
    bad.write_text("".join([*HEADER, "0.000,1.000,0.1,garbage\n", "1.000,1.000,0.1,HIST!!!!\n"]))
    for args in (["report"], ["--plain", "--once"], ["report", "--fail-if", "p99 > 1s"]):
        result = CliRunner().invoke(cli.main, [*args, str(bad)])
        assert result.exit_code == 1, (args, result.output)
        assert f"{bad}: no record could be read (2 skipped); the first: {bad}: line 4: expected a base64 histogram " \
               "payload" in result.output, (args, result.output)
    good = tmp_path / "good.hlog"
    good.write_text("".join([*HEADER, "0.000,1.000,0.1,garbage\n", f"1.000,1.000,0.1,{_payload(100_000, 10)}\n"]))
    result = CliRunner().invoke(cli.main, ["report", str(good)])
    assert result.exit_code == 0, result.output
    assert "Skipped records: 1" in result.output and "line 4: expected a base64 histogram payload" in result.output


def _payload(value: int, count: int) -> str:
    hist = library_histogram([])
    hist.record_value(value, count)
    return hist.encode().decode()


def test_tags_whose_names_clash_are_kept_apart_and_said() -> None:
    """Untagged lines of a file named `svc` and `Tag=svc` lines, and two long tags equal but in their middle (which
    the cut to 200 characters drops), are four streams, not two merged ones."""
    fast, slow = _payload(100_000, 1000), _payload(5_000_000, 10)
    lines = [*HEADER]
    for i in range(3):
        lines += [f"{i}.000,1.000,0.0,{fast}\n", f"Tag=svc,{i}.000,1.000,0.0,{slow}\n",
                  f"Tag=svc.{'x' * 100}.read.{'x' * 200},{i}.000,1.000,0.0,{fast}\n",
                  f"Tag=svc.{'x' * 100}.write.{'x' * 200},{i}.000,1.000,0.0,{slow}\n"]
    items = read_items(HdrHistogramFormat, "".join(lines), "svc")
    cols = intervals(items)
    by_label: dict[str, list[int]] = {}
    for c in cols:
        by_label.setdefault(c.stream.label, []).append(int(c.counts.sum()))
    assert len(by_label) == 4 and sorted(map(tuple, by_label.values())) == [(10, 10, 10)] * 2 + [(1000,) * 3] * 2
    assert by_label["svc"] == [1000] * 3 and by_label["svc (2)"] == [10] * 3
    said = [n for n in notices(items) if "shown as" in n]
    assert len(said) == 2 and "tag 'svc' shown as 'svc (2)'" in said[0]
    cut = [label for label in by_label if len(label) > 10]  # cut in the middle, where the two differ
    assert cut == [f"svc.{'x' * 75}…{'x' * 120}", f"svc.{'x' * 74}…{'x' * 117} (2)"]
    assert not [n for n in notices(items) if "placed after" in n]


def test_tags_alike_for_their_first_200_characters_stay_apart_cut_in_the_middle() -> None:
    """Three tags that differ only past 200 characters: three streams, each with its own counts, named by the tag's
    start and end (cut in the middle, no `(2)`, nothing to say)."""
    long = "cassandra.stress.write." + "x" * 200
    tags = [f"{long}.node1", f"{long}.node2", f"{long}.node3"]
    lines = [*HEADER]
    for i in range(3):
        lines += [f"Tag={tag},{i}.000,1.000,0.0,{_payload(100_000 * (k + 1), 10 * (k + 1))}\n"
                  for k, tag in enumerate(tags)]
    items = read_items(HdrHistogramFormat, "".join(lines), "stress.hlog")
    by_label: dict[str, list[int]] = {}
    for c in intervals(items):
        by_label.setdefault(c.stream.label, []).append(int(c.counts.sum()))
    assert sorted(by_label.values()) == [[10] * 3, [20] * 3, [30] * 3]
    for label, counts in by_label.items():
        assert len(label) == 200 and label.count("…") == 1 and label.startswith("cassandra.stress.write.xx")
        assert label.endswith(f"x.node{counts[0] // 10}")
    assert not [n for n in notices(items) if "shown as" in n]


def test_logs_written_one_after_another_keep_their_own_times_and_a_hole_is_a_gap() -> None:
    """Two jHiccup runs an hour apart in one file: the second run's StartTime counts, said once. Within a run, a
    recorder stopped for 6 s leaves a gap column, so rates are per second observed."""
    payload = _payload(200_000, 1000)

    def run(start: float, stamps: list[int]) -> str:
        return "".join([HEADER[0], start_time_line(start), HEADER[2],
                        *(f"{t}.000,1.000,0.200,{payload}\n" for t in stamps)])

    items = read_items(HdrHistogramFormat, run(START, [0, 1, 2, 3, 10, 11]) + run(START + 3600, [0, 1, 2]), "x")
    cols = intervals(items)
    assert [(c.start - START, c.end - START, c.gap) for c in cols] == [
        (0, 1, False), (1, 2, False), (2, 3, False), (3, 4, False), (4, 10, True), (10, 11, False), (11, 12, False),
        (12, 3600, True), (3600, 3601, False), (3601, 3602, False), (3602, 3603, False)]
    assert [n for n in notices(items) if "a new log starts here (StartTime 1700003600.000)" in n]
    assert not [n for n in notices(items) if "placed after" in n]


def _payloads(values: np.ndarray) -> str:
    """The payload of a library histogram of some values (rounded to whole ns)."""
    return library_histogram([round(v) for v in values]).encode().decode()


def _log(header: list[str], stamps: list[int], payload: str, tag: str = "") -> str:
    """A log: its header lines, then one 1 s interval at each of `stamps` (relative to its StartTime/BaseTime)."""
    return "".join([*header, *(f"{tag}{t}.000,1.000,0.200,{payload}\n" for t in stamps)])


def test_a_joined_log_that_goes_back_in_time_is_another_run_and_one_that_follows_goes_on() -> None:
    """Four logs in one file: the second an hour later (the recorder restarted) goes on in the stream; the third,
    5 minutes after the first's start, goes back into time already read: it was moved to follow the second (3,300 s
    late), and is now a run apart with its own times, `LABEL [INPUT, from line N]`; the fourth follows the third and
    goes on in its run. Read at once or as it arrives, in two chunks that split a header."""
    payload = _payload(200_000, 1000)
    logs = [_log([HEADER[0], start_time_line(START + at), HEADER[2]], [0, 1, 2], payload)
            for at in (0, 3600, 300, 310)]
    text = "".join(logs)
    third = 1 + sum(log.count("\n") for log in logs[:2])
    apart = f"x.hlog [x.hlog, from line {third}]"
    cut = text.index("\n", len(logs[0]) + len(HEADER[0])) + 1  # within the second log's header
    for got in (read_items(HdrHistogramFormat, text, "x.hlog"),
                list(HdrHistogramFormat().read_text([text[:cut], text[cut:]], "x.hlog"))):
        cols = [(c.stream.label, c.start - START, c.end - START, c.gap) for c in intervals(got)]
        assert cols == [("x.hlog", 0, 1, False), ("x.hlog", 1, 2, False), ("x.hlog", 2, 3, False),
                        ("x.hlog", 3, 3600, True), ("x.hlog", 3600, 3601, False), ("x.hlog", 3601, 3602, False),
                        ("x.hlog", 3602, 3603, False), (apart, 300, 301, False), (apart, 301, 302, False),
                        (apart, 302, 303, False), (apart, 303, 310, True), (apart, 310, 311, False),
                        (apart, 311, 312, False), (apart, 312, 313, False)]
        said = notices(got)
        assert not [n for n in said if "placed after" in n]
        assert [n for n in said if "goes back" in n] == [
            f"x.hlog: line {third + 3}: 'x.hlog' goes back into the time of its earlier intervals (the log that "
            f"starts at line {third} has it start at {START + 300:.3f}, before its last one ends, {START + 3603:.3f}): "
            f"another run (logs joined with cat?), shown apart, as '{apart}'"]


def test_any_log_header_after_intervals_starts_another_log() -> None:
    """Logs without a StartTime line (a BaseTime line, or only the legend) joined to themselves: the second copy is a
    run apart, per tag, from its first line (a comment written before its header counts). A comment alone between
    intervals is no header: an interval that goes back after it is placed after the previous one, as before."""
    payload = _payload(200_000, 1000)
    base = ["#[Histogram log format version 1.3]\n", f"#[BaseTime: {START:.3f} (seconds since epoch)]\n", HEADER[2]]
    absolute = [int(START), int(START) + 1]  # no StartTime, no BaseTime: absolute timestamps
    for header, stamps in ((base, [0, 1]), (["#[Logged by a test]\n", *base], [0, 1]), ([HEADER[2]], absolute)):
        one = _log(header, stamps, payload) + _log([], stamps, payload, "Tag=t,")
        cols = intervals(read_items(HdrHistogramFormat, one + one, "x.hlog"))
        second = one.count("\n") + 1
        labels = [c.stream.label for c in cols]
        half = len(labels) // 2
        assert labels[half:] == [f"{label} [x.hlog, from line {second}]" for label in labels[:half]], header
        assert [c.start for c in cols[half:]] == [c.start for c in cols[:half]] and cols[0].start == START, header
    cols_said = read_items(HdrHistogramFormat, _log(HEADER, [0, 1], payload) + "#[a comment]\n" +
                           _log([], [0], payload), "x.hlog")
    assert {c.stream.label for c in intervals(cols_said)} == {"x.hlog"}
    assert [n for n in notices(cols_said) if "placed after the previous one" in n]


def test_past_the_most_runs_a_joined_log_that_goes_back_is_skipped_and_counted() -> None:
    from latencymap.core.deltas import MAX_RUNS

    one = _log(HEADER, [0, 1], _payload(200_000, 1000))
    items = read_items(HdrHistogramFormat, one * (MAX_RUNS + 2), "x.hlog")
    assert len({c.stream.label for c in intervals(items)}) == MAX_RUNS
    skipped = [n for n in items if isinstance(n, Notice) and n.skipped]
    assert len(skipped) == 4 and all("runs of it are shown apart already; line skipped" in n.message for n in skipped)


def test_a_jhiccup_log_joined_to_itself_measures_hiccups_in_both_runs() -> None:
    """The run shown apart is of a jHiccup log too: its findings are worded for hiccups, as the first run's are."""
    text = (HLOG / "jHiccup-2.0.7S.logV2.hlog").read_text()
    items = read_items(HdrHistogramFormat, text + text, "j.hlog")
    second = text.count("\n") + 1
    measures = {n.measures[0].label: n.measures[1] for n in items if isinstance(n, Notice) and n.measures}
    assert measures == {"j.hlog": "jhiccup", f"j.hlog [j.hlog, from line {second}]": "jhiccup"}


def test_two_hosts_logs_joined_with_cat_report_two_runs_over_the_same_minute(tmp_path: Path) -> None:
    """A log of 1,000/s at 200 µs and one of 1,000/s at 400 µs over the same 60 s, joined with `cat`: the report
    showed one stream of 120 intervals over 2 min and found a "shift at col 60" (a deploy, a failover) where the
    second was moved to follow the first; now two runs of 60 intervals over one minute each, no shift."""
    from latencymap.cli import main as cli

    path = tmp_path / "two_hosts.hlog"
    rng = np.random.default_rng(7)
    lines = []
    for median in (200_000, 400_000):  # each second's 1,000 values lognormal around the median
        lines += [*HEADER, *(f"{t}.000,1.000,0.0,{_payloads(rng.lognormal(np.log(median), 0.3, 1000))}\n"
                             for t in range(60))]
    path.write_text("".join(lines))
    result = CliRunner().invoke(cli.main, ["report", str(path)])
    assert result.exit_code == 0, result.output
    assert "shift at col" not in result.output
    assert result.output.count("   60 intervals over 1min: 60,000 events (1k/s)") == 2
    assert f"== two_hosts.hlog [{path}, from line {len(HEADER) + 61}]  [hdrhistogram, nanosec]" in result.output


def test_the_report_counts_a_holes_gap_column_apart_from_the_logs_intervals(tmp_path: Path) -> None:
    """5 interval lines around a 7.5 s hole: `5 intervals and 1 gap` (it said `6 intervals`); the rate is per second
    observed (13.1 s), as before."""
    from latencymap.cli import main as cli

    payload = _payload(1_000_000, 100)
    path = tmp_path / "holes.hlog"
    path.write_text("".join([*HEADER, *(f"{start},{length},1.000,{payload}\n" for start, length in
                                        (("0.000", "1.000"), ("1.500", "1.000"), ("10.000", "1.000"),
                                         ("11.000", "10.000"), ("21.000", "0.100")))]))
    result = CliRunner().invoke(cli.main, ["report", str(path)])
    assert result.exit_code == 0, result.output
    assert "   5 intervals and 1 gap over 21.1s: 500 events (38.2/s), 500ms waited (exact)\n" in result.output
    assert "gap (data missing from the column): column 2\n" in result.output


def test_a_second_log_whose_base_time_comes_before_its_start_time_keeps_it(tmp_path: Path) -> None:
    """Two library logs in one file, the second's header writing BaseTime before StartTime (the order is the
    writer's): its times count from its own BaseTime, as Java's HistogramLogReader reads them, not its StartTime."""
    first = write_library_log(tmp_path / "a.hlog", [Logged(None, START + k, 1.0, [1000]) for k in range(2)], START,
                              base_time=START)
    later, base = START + 3600, START + 3700
    second = write_library_log(tmp_path / "b.hlog", [Logged(None, base + k, 1.0, [2000]) for k in range(2)], later,
                               base_time=base).read_text().splitlines(keepends=True)
    at = [i for i, line in enumerate(second) if line.startswith(("#[StartTime", "#[BaseTime"))]
    assert len(at) == 2 and second[at[0]].startswith("#[StartTime")
    second[at[0]], second[at[1]] = second[at[1]], second[at[0]]
    path = tmp_path / "both.hlog"
    path.write_text(first.read_text() + "".join(second))
    items = read_items(HdrHistogramFormat, path.read_text(), str(path))
    cols = [c for c in intervals(items) if not c.gap]
    library = [h.get_start_time_stamp() / 1000 for h in library_read(path)]
    assert [c.start - START for c in cols] == pytest.approx([0, 1, 3700, 3701])
    assert [c.start for c in cols] == pytest.approx(library)
    assert [n for n in notices(items) if "a new log starts here" in n and f"count from its BaseTime {base:.3f}" in n]


def test_percentiles_stay_within_the_equivalence_range_of_the_occupied_sub_buckets(tmp_path: Path) -> None:
    """98% at 150 µs, 1% at 40 ms, 1% at 2 s (a real .hlog by the library): p99 is 40 ms within HdrHistogram's
    equivalence range of 40 ms, not up the 33.6-67.1 ms row; p999 within that of 2 s."""
    values = [150_000] * 98 + [40_000_000, 2_000_000_000]
    logged = [Logged(None, START + i, 1.0, values * 200) for i in range(3)]
    path = write_library_log(tmp_path / "tri.hlog", logged, START)
    r = subprocess.run([sys.executable, "-m", "latencymap", "report", "--format", "json", str(path)],
                       capture_output=True, text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"})
    assert r.returncode == 0, r.stderr
    (stream,) = json.loads(r.stdout)["streams"]
    total = stream["total"]
    hist = library_histogram(values)
    for key, value in (("p50_s", 150_000), ("p90_s", 150_000), ("p99_s", 40_000_000), ("p999_s", 2_000_000_000)):
        low, high = hist.get_lowest_equivalent_value(value), hist.get_highest_equivalent_value(value)
        assert low * 1e-9 <= total[key] <= high * 1e-9, (key, total[key], low, high)
    seen = [(b["min_s"], b["max_s"]) for b in stream["buckets"] if "min_s" in b]
    assert len(seen) == 3 and seen[1][0] <= 0.04 <= seen[1][1] and seen[1][1] - seen[1][0] < 0.04 / 1000


def _spread(values: list[int], intervals: int, seed: int) -> list[list[int]]:
    """`values` shuffled into `intervals` columns of equal size."""
    shuffled = np.random.default_rng(seed).permutation(np.array(values, dtype=np.int64))
    return [part.tolist() for part in np.array_split(shuffled, intervals)]


def _distribution(name: str) -> tuple[list[int], int, int]:
    """(values in ns, significant digits, lowest discernible value) of a test distribution, 10,000 values."""
    rng = np.random.default_rng(7)
    if name == "bimodal within one row":  # the finding: both modes in the 131-262 µs row
        return [140_000] * 9_800 + [250_000] * 200, 3, 1
    if name == "bimodal, jittered":
        return (rng.integers(138_000, 142_000, 9_800).tolist() + rng.integers(248_000, 252_000, 200).tolist(), 3, 1)
    if name == "uniform":
        return rng.integers(100_000, 10_000_000, 10_000).tolist(), 3, 1
    if name == "uniform, 2 digits":
        return rng.integers(100_000, 10_000_000, 10_000).tolist(), 2, 1
    if name == "long tail":
        body = np.rint(rng.lognormal(np.log(300_000), 0.5, 9_900))
        tail = np.rint(2_000_000 * (1 + rng.pareto(1.2, 100)))
        return np.minimum(np.concatenate([body, tail]), 3_000_000_000).astype(np.int64).tolist(), 3, 1
    assert name == "jHiccup, below the lowest discernible value"  # jHiccup: lowest 20,000 ns, 2 digits
    return rng.integers(0, 16_000, 9_000).tolist() + rng.integers(20_000, 5_000_000, 1_000).tolist(), 2, 20_000


#: Distributions where every power of two of every column has at most 128 occupied sub-buckets, or is split by the
#: library no finer than that (2 digits): the report keeps the library's sub-buckets and agrees with it within one;
#: elsewhere within the 1/128 of a power of two that a busy one is merged to (`hdrhistogram_buckets`).
LIBRARY_PRECISION = {"bimodal within one row", "bimodal, jittered", "uniform, 2 digits",
                     "jHiccup, below the lowest discernible value"}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bimodal within one row", "bimodal, jittered", "uniform", "uniform, 2 digits",
                                  "long tail", "jHiccup, below the lowest discernible value"])
def test_overall_percentiles_agree_with_the_librarys_own(tmp_path: Path, name: str) -> None:
    """A log written by the library, its values spread over 4 intervals: the report's overall p50 ... p999 are the
    library's `get_value_at_percentile` of all its values within one sub-bucket (the library's, or the report's
    coarser cell where it merges a busy power of two)."""
    from latencymap.cli import main as cli

    values, digits, lowest = _distribution(name)
    logged = [Logged(None, START + i, 1.0, part) for i, part in enumerate(_spread(values, 4, seed=3))]
    path = write_library_log(tmp_path / "d.hlog", logged, START, digits=digits, lowest=lowest)
    result = CliRunner().invoke(cli.main, ["report", "--format", "json", str(path)])
    assert result.exit_code == 0, result.output
    (stream,) = json.loads(result.output)["streams"]
    lib = library_histogram(values, digits, lowest)
    for q, key in ((50, "p50_s"), (90, "p90_s"), (99, "p99_s"), (99.9, "p999_s")):
        want = lib.get_value_at_percentile(q)
        width = lib.get_highest_equivalent_value(want) - lib.get_lowest_equivalent_value(want) + 1
        if name not in LIBRARY_PRECISION:
            width = max(width, 1 << max(int(want).bit_length() - 1 - CELL_BITS, 0))
        got = stream["total"][key] * 1e9
        assert abs(got - want) <= width, (key, got, want, width)
    assert stream["source_buckets"]["rebinned"] is False and stream["source_buckets"]["whole_stream"]


@pytest.mark.slow
def test_a_gate_on_p99_sees_a_mode_that_shares_its_row(tmp_path: Path) -> None:
    """98% at 140 µs and 2% at 250 µs, both in the 131-262 µs row: the library says p99 = 250 µs, and so do the
    report and the gates (the row alone read ~150 µs, and `p99 > 200us` passed)."""
    values, digits, lowest = _distribution("bimodal within one row")
    logged = [Logged(None, START + i, 1.0, part) for i, part in enumerate(_spread(values, 4, seed=3))]
    path = write_library_log(tmp_path / "bimodal.hlog", logged, START, digits=digits, lowest=lowest)
    assert library_histogram(values).get_value_at_percentile(99) == 250_111
    failed = _latencymap("report", "--fail-if", "p99 > 200us", str(path))
    assert failed.returncode == 1, failed.stderr
    assert b"gate failed: 'p99 > 200us' on stream 'bimodal.hlog': p99 = 250\xc2\xb5s" in failed.stderr
    text = failed.stdout.decode()
    assert "p99 250µs" in text and "waited (exact)" in text
    assert "finer buckets: the source's own 4 (2 holding events) are kept beside the rows below; percentiles come " \
           "from the source's buckets (linear inside each)" in text
    assert _latencymap("report", "--fail-if", "p99 > 300us", str(path)).returncode == 0


def test_a_slots_values_seen_lie_inside_the_slot() -> None:
    """A count whose range crosses a power of two is counted in its median's slot, and says only the part of its
    range inside it: [0, 512) below the lowest discernible value 1000 (slot 9, [256, 512)) gives 256 to 511, not
    0 to 511; with a conversion ratio of 1.5, [2730, 2732) is [4095, 4098) in slot 13, whose values seen start at
    4096; jHiccup's 2015 log (lowest 20,000 ns: [0, 16384) counted in [8192, 16384)) keeps every column's inside
    its slots."""
    below = fold_payloads([library_histogram([0, 100, 511, 600], lowest=1000).encode().decode()])
    assert below.extremes[0, :, 9].tolist() == [256.0, 511.0] and below.extremes[0, :, 10].tolist() == [512.0, 1023.0]
    ratio = fold_payloads([hand_payload(java_varint(-2389) + java_varint(1), ratio=1.5)])
    assert ratio.extremes[0, :, 13].tolist() == [4096.0, 2731 * 1.5]
    folded = fold_payloads(payloads(HLOG / "jHiccup-2.0.7S.logV2.hlog"))
    slots = np.arange(NSLOTS)
    low, high = np.where(slots > 0, 2.0 ** (slots - 1), 0.0), 2.0 ** slots
    seen = ~np.isnan(folded.extremes[:, 0])
    assert seen.any() and (folded.counts[seen] > 0).all()
    assert (folded.extremes[:, 0] >= low)[seen].all() and (folded.extremes[:, 1] < high)[seen].all()
    assert folded.below_lowest.sum() > 0 and (folded.extremes[:, 0, 14][folded.below_lowest > 0] == 8192).all()



def test_a_bad_payload_names_the_file_once_and_a_tag_by_its_name(tmp_path: Path) -> None:
    """`h.hlog: line 11: h.hlog: payload truncated`: the untagged lines' stream is named after the file, which the
    message names already; a tag's stream is still named."""
    from latencymap.core.model import Notice
    from latencymap.flow.pipeline import input_flow

    def cut(source: Path, target: Path, line: int) -> None:
        lines = source.read_text().splitlines(keepends=True)
        at = lines[line - 1].index(",HIST") + 1
        lines[line - 1] = lines[line - 1][:at + 32] + "\n"  # its payload's first 24 bytes
        target.write_text("".join(lines))

    untagged, tagged = tmp_path / "h.hlog", tmp_path / "t.hlog"
    cut(HLOG / "service_ns.hlog", untagged, 11)
    cut(HLOG / "tagged_java_layout.hlog", tagged, 7)
    said = [i.message for i in input_flow([str(untagged), str(tagged)], registry())
            if isinstance(i, Notice) and i.skipped]
    assert [m.split(": payload truncated")[0] for m in said] == [f"{untagged}: line 11", f"{tagged}: line 7: read"]


@pytest.mark.parametrize("odd", list("\f\v\x1c\x1d\x1e\x85\u2028\u2029"))
def test_a_tag_holding_what_splitlines_takes_for_a_line_end_keeps_its_stream(odd: str, tmp_path: Path) -> None:
    """`Tag=w\\fx`: `str.splitlines` cut the line at the `\\f`, and the tag's intervals were lost as two bad lines."""
    path = tmp_path / "odd.hlog"
    text = (HLOG / "tagged_java_layout.hlog").read_text().replace("Tag=write,", f"Tag=wr{odd}ite,") + "Tag=read,x\n"
    path.write_text(text, encoding="utf-8")
    items = list(input_flow([str(path)], registry()))
    want = intervals(read_items(HdrHistogramFormat, (HLOG / "tagged_java_layout.hlog").read_text()))
    got = intervals(items)
    assert [(c.stream.label, c.start, c.counts.tolist()) for c in got] == [
        (c.stream.label.replace("write", "wr?ite"), c.start, c.counts.tolist()) for c in want]
    assert [m.split(": expected")[0] for m in notices(items)] == [f"{path}: line {text.count(chr(10))}"]


@pytest.mark.parametrize(("name", "version"), [("hiccup.140623.1028.10646.hlog", "2.0.3-SNAPSHOT"),
                                               ("jHiccup-2.0.7S.logV2.hlog", "2.0.7-SNAPSHOT")])
def test_a_jhiccup_log_says_its_values_are_the_platform_s_hiccups(name: str, version: str) -> None:
    """`#[Logged with jHiccup version ...]`: its values are how late a thread that only sleeps woke, not requests'
    latencies. The note says so and tells what its stream measures (`Notice.measures`), which words its findings;
    the stream keeps its name and datasource."""
    path = HLOG / name
    items = read_items(HdrHistogramFormat, path.read_text(), str(path))
    said = [i for i in items if isinstance(i, Notice) and i.measures is not None]
    (stream,) = {c.stream for c in intervals(items)}
    assert stream == StreamId(name, "hdrhistogram", "nanosec")
    assert [n.measures for n in said] == [(stream, "jhiccup")] and said[0].skipped == 0
    assert said[0].message == (f"{path}: logged by jHiccup {version}: its values are the platform's hiccups (how late "
                               "a thread that only sleeps woke), not requests' latencies")
    assert items.index(said[0]) < items.index(intervals(items)[0])  # before its stream's first column


def test_a_tagged_log_s_note_names_each_tag_and_a_log_of_another_tool_has_none() -> None:
    fast = _payload(100_000, 1000)
    lines = ["#[Logged with jHiccup version 2.0.10]\n", *HEADER,
             f"0.000,1.000,0.0,{fast}\n", f"Tag=c,0.000,1.000,0.0,{fast}\n"]
    said = [i for i in read_items(HdrHistogramFormat, "".join(lines), "h.hlog") if isinstance(i, Notice)]
    assert [(n.measures[0].label, n.measures[1]) for n in said if n.measures] == [("h.hlog", "jhiccup"),
                                                                                 ("c", "jhiccup")]
    assert said[1].message.startswith("h.hlog: c: logged by jHiccup 2.0.10: ")
    unversioned = read_items(HdrHistogramFormat, "#[Logged with jHiccup version]\n" + "".join(lines[1:]), "h.hlog")
    assert next(n.message for n in unversioned if isinstance(n, Notice)).startswith("h.hlog: logged by jHiccup: ")
    other = read_items(HdrHistogramFormat, "".join(lines[1:]), "h.hlog")
    assert not [i for i in other if isinstance(i, Notice)]
