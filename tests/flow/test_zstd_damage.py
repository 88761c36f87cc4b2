"""A corrupt frame in a zstd input (a record of a recording of a frame per record, as written until 2026-11-27) is
skipped with a note naming the file and where; every record before it and after it is read (recordings of a block
per record: test_recording_blocks.py)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from latencymap.flow.zstd_frames import ZSTD_MAGIC, FrameDecoder

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "latencymap", *map(str, args)], capture_output=True, timeout=60,
                          text=True, env={**os.environ, "NO_COLOR": "1"})


def records() -> list[bytes]:
    text = (FIXTURES / "pylatencymap" / "example_latency_data.txt").read_bytes()
    parts = text.split(b"<begin record>")
    return [parts[0]] + [b"<begin record>" + p for p in parts[1:]]


def frames(checksum: bool = True) -> list[bytes]:
    """One frame per record, as a recording has them (with checksums: a flipped bit is always found)."""
    packer = zstandard.ZstdCompressor(write_checksum=checksum)
    return [packer.compress(r) for r in records()]


def damaged(parts: list[bytes], k: int, how: str) -> bytes:
    frame = bytearray(parts[k])
    if how == "content":
        frame[len(frame) // 2] ^= 0x08
    elif how == "magic":
        frame[1] ^= 0xFF
    else:  # a block header of the reserved type: the frame layout itself is lost
        descriptor = frame[4]
        header = 5 + (0 if descriptor & 0x20 else 1) + (0, 1, 2, 4)[descriptor & 3] \
            + ((0, 2, 4, 8)[descriptor >> 6] or (1 if descriptor & 0x20 else 0))
        frame[header] |= 0x06
    return b"".join(parts[:k]) + bytes(frame) + b"".join(parts[k + 1:])


def decoded(data: bytes, chunk: int = 512 * 1024) -> tuple[bytes, FrameDecoder]:
    decoder = FrameDecoder(io.BytesIO(data), chunk)
    return io.BufferedReader(decoder).read(), decoder


@pytest.mark.parametrize("how", ["content", "magic", "block"])
@pytest.mark.parametrize("chunk", [7, 100, 512 * 1024])
def test_the_frames_around_a_bad_one_are_decoded_whole(how: str, chunk: int) -> None:
    parts, texts = frames(), records()
    k = 20
    out, decoder = decoded(damaged(parts, k, how), chunk)
    assert out == b"".join(texts[:k] + texts[k + 1:])
    (stretch,) = decoder.damage
    assert stretch.at == sum(map(len, parts[:k])) and stretch.resumed == sum(map(len, parts[:k + 1]))
    assert stretch.lines == b"".join(texts[:k]).count(b"\n")
    assert not decoder.truncated


def test_a_read_ends_where_a_frame_was_skipped() -> None:
    parts, texts = frames(), records()
    decoder = FrameDecoder(io.BytesIO(damaged(parts, 5, "content")))
    buffer = bytearray(1 << 20)
    first = decoder.readinto(buffer)
    assert bytes(buffer[:first]) == b"".join(texts[:5])  # the text up to the bad frame, then the rest


def test_a_bad_last_frame_is_skipped_and_counted_and_a_tail_of_no_frame_is_ignored() -> None:
    """Neither is a cut: the last frame's record is lost (counted), the tail after the last frame holds none."""
    parts, texts = frames(), records()
    whole = sum(map(len, parts))
    out, decoder = decoded(damaged(parts, len(parts) - 1, "content"))
    assert out == b"".join(texts[:-1]) and not decoder.truncated
    (stretch,) = decoder.damage
    assert (stretch.at, stretch.resumed, stretch.blocks, stretch.last) == (whole - len(parts[-1]), whole, 1, True)
    for tail in (b"not a frame" + ZSTD_MAGIC[:3], b"\n", bytes(1000)):
        out, decoder = decoded(b"".join(parts) + tail)
        assert out == b"".join(texts) and not decoder.truncated and not decoder.damage
        assert decoder.stray == (whole, len(tail))


def test_undamaged_frames_decode_as_the_zstd_library_does() -> None:
    data = b"".join(frames(checksum=False)) + zstandard.ZstdCompressor(level=19).compress(b"x\n" * 300_000)
    out, decoder = decoded(data, 4096)
    assert out == zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True).read()
    assert not decoder.damage and not decoder.truncated


def test_a_corrupt_frame_of_a_recording_loses_its_record_only(tmp_path: Path) -> None:
    whole, bad = tmp_path / "whole.zst", tmp_path / "bad.zst"
    parts = frames()
    whole.write_bytes(b"".join(parts))
    bad.write_bytes(damaged(parts, 20, "content"))
    r = run("report", "--format", "json", whole)
    columns = json.loads(r.stdout)["streams"][0]["columns"]
    r = run("report", "--format", "json", bad)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["streams"][0]["columns"] == columns - 1  # cumulative records: record 20 is diffed over
    assert report["errors"]["skipped_records"] == 1
    at, resumed = sum(map(len, parts[:20])), sum(map(len, parts[:21]))
    (said,) = [m for m in report["errors"]["messages"] if "zstd" in m]
    assert said.startswith(f"{bad}: a zstd frame that cannot be decoded (corrupt) at byte {at:,}, after line ")
    assert said.endswith(f"read on from the next frame, at byte {resumed:,}")
    assert "ends early" not in r.stdout and "nothing could be decompressed" not in r.stderr
    strict = run("report", "--strict", bad)
    assert strict.returncode == 2 and f"at byte {at:,}" in strict.stderr


def test_every_frame_corrupt_is_nothing_decompressed(tmp_path: Path) -> None:
    bad = tmp_path / "bad.zst"
    parts = frames()
    for k in range(len(parts)):
        parts = [*parts[:k], damaged(parts, k, "content")[sum(map(len, parts[:k])):][:len(parts[k])],
                 *parts[k + 1:]]
    bad.write_bytes(b"".join(parts))
    r = run("report", bad)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1].endswith("nothing could be decompressed")
