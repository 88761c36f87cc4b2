"""Property tests of the HdrHistogram log reader: library histograms fold like `bin_values`; the LEB128 decoder
reads what Java's encoder writes; hostile lines never break the reader and never cost a good line its column."""

from __future__ import annotations

import numpy as np
from hdr_support import hand_payload, java_varint, library_histogram, start_time_line
from hypothesis import given
from hypothesis import strategies as st
from properties_support import QUICK, ROUNDTRIP, hostile_lines, intervals_of, read_bytes_checked, read_checked, totals

from latencymap.core.buckets import NSLOTS, bin_values
from latencymap.sources.hdrhistogram import HdrHistogramFormat
from latencymap.sources.hdrhistogram_codec import decode_payload, fold_payloads

START = 1_700_000_000.0
LOWEST = st.sampled_from([1, 2, 3, 1000, 1024, 10**6])


@ROUNDTRIP
@given(st.lists(st.integers(0, 10**12), max_size=150), st.integers(1, 5), LOWEST)
def test_library_histograms_fold_like_bin_values(values: list[int], digits: int, lowest: int) -> None:
    hist = library_histogram(values, digits, lowest, highest=10**13)
    decoded = decode_payload(hist.encode().decode())
    library = np.ctypeslib.as_array(hist.counts)[: hist.counts_len]
    assert decoded.index.tolist() == np.flatnonzero(library).tolist()
    assert decoded.counts.tolist() == library[library != 0].tolist()
    folded = fold_payloads([hist.encode().decode()])
    # A sub-bucket lies inside one power of two, so a count's slot is its value's slot: only the values below
    # 2**unit_magnitude share index 0 ([0, 2**u), median 2**(u-1)) and are all shown in slot u.
    u = lowest.bit_length() - 1
    v = np.array(values, dtype=np.int64)
    low = v < (1 << u) if u else np.zeros(len(v), dtype=bool)
    expected = bin_values(v[~low].astype(np.float64))[0]
    expected[u] += int(low.sum())
    assert folded.errors == [None] and folded.counts[0].tolist() == expected.tolist()
    assert folded.below_lowest[0] == int(low.sum()) and folded.straddling[0] == 0
    # Time spent: Σ the median of each value's sub-bucket, as the library states the sub-bucket's range.
    medians = np.zeros(NSLOTS)
    resolution = 2 ** -(decoded.settings.half_magnitude + 1)  # half a sub-bucket, relative to its values
    for value, is_low in zip(values, low, strict=True):
        first, last = hist.get_lowest_equivalent_value(value), hist.get_highest_equivalent_value(value)
        slot = u if is_low else int(bin_values(np.array([float(value)]))[0].argmax())
        medians[slot] += first + (last - first + 1) // 2
        assert abs(first + (last - first + 1) // 2 - value) <= max(value * resolution, 1 << u)
    np.testing.assert_allclose(folded.values[0], medians, rtol=1e-12)


WORDS = st.lists(st.one_of(st.integers(1, 2**63 - 1), st.sampled_from([2**55, 2**62, 2**63 - 1]), st.integers(1, 300),
                           st.just(0), st.integers(-1000, -1)), max_size=40)


@QUICK
@given(WORDS)
def test_decoder_reads_what_javas_encoder_writes(words: list[int]) -> None:
    payload = hand_payload(b"".join(java_varint(w) for w in words))
    hist = decode_payload(payload)
    index, expected = 0, {}
    for word in words:
        if word < 0:
            index -= word
        else:
            if word:
                expected[index] = word
            index += 1
    assert dict(zip(hist.index.tolist(), hist.counts.tolist(), strict=True)) == expected
    folded = fold_payloads([payload, payload])
    if sum(expected.values()) > 2**62:
        assert folded.errors == ["expected at most 4611686018427387904 events in one histogram"] * 2
    else:
        assert folded.errors == [None, None] and folded.counts.sum(axis=1).tolist() == [sum(expected.values())] * 2


GOOD = [library_histogram(vals).encode().decode() for vals in ([1, 5, 900], [2**20, 7], [])]
PAYLOADS = st.one_of(st.sampled_from(GOOD), st.sampled_from(GOOD).map(lambda p: p[:-4]),
                     st.sampled_from(GOOD).map(lambda p: p[:12] + "A" + p[13:]), st.text(max_size=30),
                     st.just(hand_payload(b"\x80")))
NUMBER = st.one_of(st.floats(allow_nan=True).map(repr), st.integers(-5, 10**10).map(str), st.sampled_from(
    ["1e308", "-0", "inf", "0.001", "1.000", "\u0661", "1_0", ""]))
DATA = st.builds(lambda tag, a, b, c, p: f"{tag}{a},{b},{c},{p}",
                 st.sampled_from(["", "Tag=a,", "Tag=,", "Tag=\x1b[2J,", "Tag=b c,"]), NUMBER, NUMBER, NUMBER,
                 PAYLOADS)
HEADERS = st.sampled_from([start_time_line(START).strip(), "#[BaseTime: 1600000000.000 (seconds since epoch)]",
                           "#[StartTime: nan ]", "#[BaseTime: 1e999 ]", "#[Histogram log format version 1.3]",
                           '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"'])


@QUICK
@given(hostile_lines(DATA, HEADERS, max_size=40))
def test_arbitrary_lines_never_break_the_reader(lines: list[str]) -> None:
    items = read_checked(HdrHistogramFormat, [line + "\n" for line in lines])
    columns = intervals_of(items)
    # a column a line; and a gap column where time jumped past a stream's last column, at most one a line more
    assert len([c for c in columns if not c.gap]) <= len(lines) and len(columns) <= 2 * len(lines)
    read_bytes_checked("\n".join(lines).encode("utf-8", "surrogatepass"), "hdrhistogram")


@QUICK
@given(st.lists(st.tuples(st.booleans(), st.sampled_from(range(len(GOOD)))), max_size=30))
def test_bad_lines_never_cost_a_good_line_its_column(plan: list[tuple[bool, int]]) -> None:
    lines = [start_time_line(START)]
    for k, (good, which) in enumerate(plan):
        payload = GOOD[which] if good else GOOD[which][:-8]
        lines.append(f"Tag=s,{k}.000,1.000,0.0,{payload}\n")
        if not good:
            lines.append(f"Tag=s,{k}.5,garbage\n")
    items = read_checked(HdrHistogramFormat, lines)
    cols = intervals_of(items)
    assert [c.start - START for c in cols] == [float(k) for k in range(len(plan))]
    assert [c.gap for c in cols] == [not good for good, _ in plan]
    expected = sum(len([1, 5, 900] if w == 0 else [2**20, 7] if w == 1 else []) for good, w in plan if good)
    assert int(totals(items).sum()) == expected
