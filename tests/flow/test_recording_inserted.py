"""Bytes inserted in a zstd recording, between its frames or after its last one (a copy gone wrong, a log line
appended): what they hide is lost, no more, and counted exactly; bytes that hide nothing are said to be ignored, not
a cut. Recordings made by latencymap's Recorder (a block per record, RECORDS_PER_FRAME blocks a frame), damaged as
at scale (1,000 zero or random bytes)."""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from zstd_support import blocks, layout

from latencymap.core.model import Interval, StreamId
from latencymap.flow.recording import RECORDS_PER_FRAME, Recorder
from latencymap.flow.zstd_frames import FrameDecoder

RECORDS = 620  # ten frames (the first holds the header line and 63 records, the last 45 and the empty block)
CUT_SHORT = "the compressed data ends early (cut short or corrupt)"


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "latencymap", *map(str, args)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "NO_COLOR": "1"})


def report(path: Path, *options: str) -> tuple[dict, int]:
    done = cli("report", *options, "--format", "json", path)
    return json.loads(done.stdout), done.returncode


def columns(doc: dict) -> int:
    return sum(s["columns"] for s in doc["streams"])


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A recording of four streams, RECORDS intervals (the frames after the first are the same from run to run)."""
    path = tmp_path_factory.mktemp("rec") / "r.zst"
    rec = Recorder(str(path))
    rng = np.random.default_rng(5)
    lam = np.where(np.arange(64) < 20, 40.0, 0.0)
    for i in range(RECORDS):
        rec.write(Interval(StreamId(f"host{i % 4}", "bpf", "microsec"), 100.0 + i // 4, 101.0 + i // 4,
                           rng.poisson(lam)))
    rec.close()
    return path.read_bytes()


def decoded(data: bytes, chunk: int) -> tuple[bytes, FrameDecoder]:
    decoder = FrameDecoder(io.BytesIO(data), chunk)
    return io.BufferedReader(decoder).read(), decoder


def lost_from(parts: list[tuple[int, int, bytes]], k: int) -> list[int]:
    """The blocks lost when block `k` is damaged: it and the rest of its frame."""
    return list(range(k, (k // RECORDS_PER_FRAME + 1) * RECORDS_PER_FRAME))


@pytest.mark.parametrize("chunk", [4096, 512 * 1024])
@pytest.mark.parametrize(("inserted", "frame", "block"), [("zero", 5, 36), ("random", 3, 0), ("random", 7, 24)])
def test_bytes_inserted_in_a_block_lose_the_rest_of_its_frame_counted_exactly(recorded: bytes, tmp_path: Path,
                                                                              inserted: str, frame: int, block: int,
                                                                              chunk: int) -> None:
    """Until 2026-11-28 one record was counted (the walk of the frame's layout lost), and in a recording read at
    once the walk ran on to the end of the input: every record after the bytes was lost as a cut."""
    parts = blocks(recorded)
    _, ends = layout(recorded)
    k = frame * RECORDS_PER_FRAME + block
    at = (parts[k][0] + parts[k][1]) // 2  # inside the block
    junk = bytes(1000) if inserted == "zero" else random.Random(k).randbytes(1000)
    data = recorded[:at] + junk + recorded[at:]
    lost = lost_from(parts, k)
    out, decoder = decoded(data, chunk)
    assert out == b"".join(t for i, (_, _, t) in enumerate(parts) if i not in lost)
    (stretch,) = decoder.damage
    assert (stretch.at, stretch.resumed, stretch.blocks) == (parts[k][0], ends[frame] + len(junk), len(lost))
    assert stretch.frame == ends[frame - 1] and not decoder.truncated and decoder.stray is None
    path = tmp_path / "inserted.zst"
    path.write_bytes(data)
    doc, code = report(path)
    assert code == 0 and columns(doc) == RECORDS - len(lost) and doc["errors"]["skipped_records"] == len(lost)
    (said,) = doc["errors"]["messages"]
    held = ("what it held" if block == 0 else "the rest of its frame") + f" (in a recording, up to {len(lost)} records"
    assert said.startswith(f"{path}: a zstd {'frame' if block == 0 else 'block'} that cannot be decoded (corrupt) "
                           f"at byte {parts[k][0]:,}, after line ")
    assert f"skipped, with {held}" in said and said.endswith(f"read on from the next frame, at byte "
                                                             f"{ends[frame] + len(junk):,}")


def test_a_block_header_inserted_that_takes_in_later_frames_loses_none_of_them(recorded: bytes) -> None:
    """A raw block's header inserted between two blocks: that block decodes (a raw block is any bytes) and runs on
    over three frames; what it gave is no text of the recording, and those frames are read."""
    parts = blocks(recorded)
    _, ends = layout(recorded)
    k = 2 * RECORDS_PER_FRAME + 10
    at = parts[k][0]
    header = ((ends[5] - at) << 3).to_bytes(3, "little")  # raw, not the last, to the end of the sixth frame
    out, decoder = decoded(recorded[:at] + header + recorded[at:], 512 * 1024)
    lost = lost_from(parts, k)
    assert out == b"".join(t for i, (_, _, t) in enumerate(parts) if i not in lost)
    (stretch,) = decoder.damage
    assert (stretch.at, stretch.resumed, stretch.blocks) == (at, ends[2] + 3, len(lost))


def test_bytes_inserted_in_the_last_frame_lose_the_rest_of_it_counted(recorded: bytes, tmp_path: Path) -> None:
    parts = blocks(recorded)
    _, ends = layout(recorded)
    k = len(parts) - 20  # the last frame holds the last 45 records, then an empty block that ends it
    at = parts[k][0] + 7
    data = recorded[:at] + random.Random(1).randbytes(1000) + recorded[at:]
    out, decoder = decoded(data, 512 * 1024)
    assert out == b"".join(t for _, _, t in parts[:k])
    (stretch,) = decoder.damage
    assert (stretch.at, stretch.resumed, stretch.last, stretch.blocks) == (parts[k][0], len(data), True, 19)
    path = tmp_path / "last.zst"
    path.write_bytes(data)
    doc, code = report(path)
    assert code == 0 and columns(doc) == RECORDS - 19 and doc["errors"]["skipped_records"] == 19
    (said,) = doc["errors"]["messages"]
    assert "(in a recording, up to 19 records; what the frame held before it, from byte " \
           f"{ends[-2]:,}, is kept); no frame after it: the input ends at byte {len(data):,}" in said


@pytest.mark.parametrize("tail", [b"oops a log line\n", b"\n", bytes(1000), random.Random(2).randbytes(1000)],
                         ids=["line", "newline", "zero", "random"])
def test_bytes_after_the_last_frame_are_ignored_and_said_so_not_a_cut(recorded: bytes, tmp_path: Path,
                                                                     tail: bytes) -> None:
    """Until 2026-11-28 they read as a cut ("the compressed data ends early"), saying nowhere where."""
    path = tmp_path / "tail.zst"
    path.write_bytes(recorded + tail)
    size = f"{len(tail):,} byte{'s' if len(tail) > 1 else ''}"
    note = (f"{path}: the {size} after its last zstd frame, from byte {len(recorded):,} to the end, are not zstd "
            "data: ignored")
    for strict in ((), ("--strict",)):  # nothing is skipped: --strict goes on
        doc, code = report(path, *strict)
        assert code == 0 and columns(doc) == RECORDS
        assert doc["errors"] == {"skipped_records": 0, "messages": [note]}
    plain = cli("--plain", "--once", path)
    assert plain.returncode == 0 and f"latencymap: {note}" in plain.stderr and CUT_SHORT not in plain.stderr
    path.write_bytes(recorded[:-3])  # a cut, inside the last frame's checksum: still said to be one, and where
    doc, code = report(path)
    whole = layout(recorded)[0][-2]  # where the last block of records ends
    assert code == 0 and doc["errors"]["messages"] == [
        f"{path}: {CUT_SHORT}: read up to there (byte {whole:,}, the end of its last whole zstd block; the "
        f"{len(recorded) - 3 - whole:,} bytes after it are no whole block)"]


def test_bytes_inserted_between_two_frames_hide_nothing(recorded: bytes, tmp_path: Path) -> None:
    _, ends = layout(recorded)
    data = recorded[:ends[3]] + bytes(1000) + recorded[ends[3]:]
    out, decoder = decoded(data, 512 * 1024)
    assert out == decoded(recorded, 512 * 1024)[0]
    (stretch,) = decoder.damage
    assert (stretch.at, stretch.resumed, stretch.blocks, stretch.junk) == (ends[3], ends[3] + 1000, 0, True)
    path = tmp_path / "between.zst"
    path.write_bytes(data)
    doc, code = report(path, "--strict")
    assert code == 0 and columns(doc) == RECORDS and doc["errors"] == {"skipped_records": 0, "messages": [
        f"{path}: 1,000 bytes at byte {ends[3]:,}, between two zstd frames, are not zstd data: skipped; read on "
        f"from the next frame, at byte {ends[3] + 1000:,}"]}


@pytest.mark.parametrize(("before", "size"), [(100, 300), (40, 60)])
def test_bytes_written_over_the_end_of_a_frame_lose_it_and_the_next_both_counted(recorded: bytes, before: int,
                                                                               size: int) -> None:
    """The next frame's magic number is gone: reading goes on at the one after, and the blocks after the damage, more
    than its own frame holds, tell that the frame before was damaged too."""
    parts = blocks(recorded)
    _, ends = layout(recorded)
    at = ends[3] - before
    data = recorded[:at] + random.Random(size).randbytes(size) + recorded[at + size:]
    out, decoder = decoded(data, 512 * 1024)
    k = next(i for i, (_, end, _) in enumerate(parts) if end > at)
    lost = list(range(k, 5 * RECORDS_PER_FRAME))
    assert out == b"".join(t for i, (_, _, t) in enumerate(parts) if i not in lost)
    (stretch,) = decoder.damage
    assert (stretch.at, stretch.frame, stretch.resumed, stretch.blocks) == (parts[k][0], ends[2], ends[4], len(lost))
