"""Helpers for the HdrHistogram log tests: logs written and read by the real library (PyPI `hdrhistogram`)."""

from __future__ import annotations

import base64
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from skips_support import need_module

from latencymap.core.buckets import NSLOTS
from latencymap.sources.hdrhistogram_codec import slots_of

#: The real library (PyPI `hdrhistogram`, in the dev extra); a module importing this one skips without it.
hdrh_histogram = need_module("hdrh.histogram")
hdrh_log = need_module("hdrh.log")
HIGHEST = 3_600_000_000_000


@dataclass
class Logged:
    """One interval as written: its tag, absolute start and length (s), and the recorded values."""

    tag: str | None
    start: float
    length: float
    values: Sequence[int]


def start_time_line(epoch_s: float) -> str:
    """The `#[StartTime: ...]` line (the library's own `output_start_time` raises)."""
    text = datetime.fromtimestamp(epoch_s, UTC).strftime("%a %b %d %H:%M:%S UTC %Y")
    return f"#[StartTime: {epoch_s:.3f} (seconds since epoch), {text}]\n"


def library_histogram(values: Sequence[int], digits: int = 3, lowest: int = 1, highest: int = HIGHEST):
    """A library histogram holding `values` (every one must be recordable)."""
    hist = hdrh_histogram.HdrHistogram(lowest, highest, digits)
    for v in values:
        assert hist.record_value(int(v)), v
    return hist


def write_library_log(path: Path, logged: Sequence[Logged], start_time: float, base_time: float | None = None,
                      digits: int = 3, lowest: int = 1) -> Path:
    """A log written by the library's HistogramLogWriter: relative to `base_time` when given, else absolute."""
    with path.open("w") as fh:
        writer = hdrh_log.HistogramLogWriter(fh)
        writer.output_comment("[Logged by the latencymap tests with hdrhistogram (PyPI)]")
        writer.output_log_format_version()
        fh.write(start_time_line(start_time))
        if base_time is not None:
            writer.output_base_time(base_time * 1000)
            writer.base_time = base_time * 1000
        writer.output_legend()
        for item in logged:
            hist = library_histogram(item.values, digits, lowest)
            hist.set_start_time_stamp(item.start * 1000)
            hist.set_end_time_stamp((item.start + item.length) * 1000)
            if item.tag is not None:
                fh.write(f"Tag={item.tag},")
            writer.output_interval_histogram(hist)
    return path


def library_read(path: Path) -> list:
    """Every interval histogram of a log, as the library's own HistogramLogReader decodes it."""
    reader = hdrh_log.HistogramLogReader(str(path), hdrh_histogram.HdrHistogram(1, HIGHEST, 3))
    out = []
    while (hist := reader.get_next_interval_histogram()) is not None:
        out.append(hist)
    reader.close()
    return out


def library_decode(payload: str):
    """One base64 payload as the library decodes it."""
    return hdrh_histogram.HdrHistogram.decode(payload)


def library_index_counts(hist) -> dict[int, int]:
    """{counts-array index: count} of the non-zero entries of a library histogram."""
    nonzero = np.flatnonzero(np.ctypeslib.as_array(hist.counts)[: hist.counts_len])
    out = {int(i): int(hist.get_count_at_index(int(i))) for i in nonzero}
    assert sum(out.values()) == hist.get_total_count()
    return out


def library_slots(hist) -> np.ndarray:
    """The library's recorded values (each index's highest equivalent value, with its count) on log2 slots."""
    values, counts = [], []
    for item in hist.get_recorded_iterator():
        values.append(float(item.value_iterated_to))
        counts.append(int(item.count_at_value_iterated_to))
    out = np.zeros(NSLOTS, dtype=np.int64)
    np.add.at(out, slots_of(np.array(values, dtype=np.float64)), np.array(counts, dtype=np.int64))
    return out


def hand_payload(words: bytes, digits: int = 3, lowest: int = 1, cookie: int = 0x1C849313,
                 outer: int = 0x1C849314, ratio: float = 1.0, size: int | None = None) -> str:
    """A compressed V2 payload built from the spec: header (payload length `size`, default the true one), then the
    given LEB128 bytes."""
    size = len(words) if size is None else size
    inner = struct.pack(">Iiiiqqd", cookie, size, 0, digits, lowest, HIGHEST, ratio) + words
    packed = zlib.compress(inner)
    return base64.b64encode(struct.pack(">Ii", outer, len(packed)) + packed).decode()


def fixed_payload(counts: Sequence[int], word: int = 8, version: int = 1, digits: int = 2, lowest: int = 20000,
                  size: int | None = None, word_bits: int | None = None) -> str:
    """A compressed V1 or V0 payload built from Java's decoder: every count a big-endian signed `word`-byte
    integer (the cookie's bits 4-7 say the size, `word_bits` overrides them); V1 has V2's 40-byte header, V0 a
    32-byte one (cookie, digits, lowest, highest, total count) and no payload length."""
    data = b"".join(int(c).to_bytes(word, "big", signed=True) for c in counts)
    bits = (word if word_bits is None else word_bits) << 4
    if version == 1:
        size = len(data) if size is None else size
        inner = struct.pack(">Iiiiqqd", 0x1C849301 | bits, size, 0, digits, lowest, HIGHEST, 1.0) + data
        outer = 0x1C849302 | bits
    else:
        inner = struct.pack(">Iiqqq", 0x1C849308 | bits, digits, lowest, HIGHEST, sum(counts)) + data
        outer = 0x1C849309 | bits
    packed = zlib.compress(inner)
    return base64.b64encode(struct.pack(">Ii", outer, len(packed)) + packed).decode()


def java_varint(word: int) -> bytes:
    """Java's ZigZagEncoding.putLong: LEB128 of the ZigZag value, the 9th byte holding the last 8 bits."""
    v = ((word << 1) ^ (word >> 63)) & (2**64 - 1)
    out = bytearray()
    for _ in range(8):
        if v >> 7 == 0:
            out.append(v)
            return bytes(out)
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)
