"""A zstd recording is frames of up to RECORDS_PER_FRAME records, each record a block flushed whole as it is written:
a file that ends between two blocks (its recorder killed, or still writing) reads every record and is not cut short;
a cut inside a block loses that block only; a corrupt block loses the rest of its frame, not what the frame held
before it; a frame whose checksum fails is lost whole; recordings of a frame per record read as before."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import zstandard
from zstd_support import blocks, layout

from latencymap.core.model import Interval, StreamId
from latencymap.flow import recording as recording_module
from latencymap.flow.recording import RECORDS_PER_FRAME, Recorder
from latencymap.flow.zstd_frames import FrameDecoder, ZstdFrames

A = StreamId("a", "bpf", "microsec")
CUT_SHORT = "the compressed data ends early (cut short or corrupt): read up to there"


def cut_short(path: Path, whole: int, size: int) -> str:
    """The note of a zstd input of `size` bytes cut short, whose last whole block ends at byte `whole`."""
    return (f"{path}: {CUT_SHORT} (byte {whole:,}, the end of its last whole zstd block; the {size - whole:,} bytes "
            f"after it are no whole block)")


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "latencymap", *map(str, args)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "NO_COLOR": "1"})


def report(path: Path) -> dict:
    done = cli("report", "--format", "json", path)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def record(path: Path, n: int, *, close: bool = True, seed: int = 5) -> Recorder:
    """A recording of `n` similar intervals (a stream's counts from one day to the next: alike, never the same)."""
    rec = Recorder(str(path))
    rng = np.random.default_rng(seed)
    lam = np.where(np.arange(64) < 20, 40.0, 0.0)
    for i in range(n):
        rec.write(Interval(A, 100.0 + i, 101.0 + i, rng.poisson(lam)))
    if close:
        rec.close()
    return rec


def written(path: Path, n: int) -> bytes:
    record(path, n)
    return path.read_bytes()




def one_frame_each(texts: list[bytes], checksum: bool = True) -> bytes:
    """The layout of recordings written until 2026-11-27: a frame per record (and per header or note line)."""
    packer = zstandard.ZstdCompressor(level=3, write_checksum=checksum)
    return b"".join(packer.compress(t) for t in texts if t)


def decoded(data: bytes, chunk: int = 512 * 1024) -> tuple[bytes, FrameDecoder]:
    decoder = FrameDecoder(io.BytesIO(data), chunk)
    return io.BufferedReader(decoder).read(), decoder


def test_a_recording_is_frames_of_records_each_a_block_with_a_checksum(tmp_path: Path) -> None:
    data = written(tmp_path / "r.zst", 200)
    parts = blocks(data)
    texts = [t for _, _, t in parts]
    assert texts[0].startswith(b"# latencymap-recording ") and texts[0].count(b"\n") == 1
    assert all(t.startswith(b"<begin record>") and t.endswith(b"<end record>\n") and t.count(b"<begin") == 1
               for t in texts[1:201])
    assert texts[201:] == [b""]  # closed: the last frame ends with an empty block and its checksum
    _, ends = layout(data)
    assert len(ends) == 4  # 201 blocks, 64 a frame, then the last 9 and the empty one
    starts = [0, *ends[:-1]]
    for start, end in zip(starts, ends, strict=True):
        params = zstandard.get_frame_parameters(data[start:end])
        assert params.has_checksum
        assert sum(start <= s < end for s, _, _ in parts) == (RECORDS_PER_FRAME if end != ends[-1] else 10)
    whole = zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True).read()
    assert decoded(data)[0] == whole == b"".join(texts)


def test_a_recording_is_a_fraction_of_the_size_of_a_frame_per_record(tmp_path: Path) -> None:
    """What a frame per record cost: each record compressed alone, without the records before it (ratio of sizes)."""
    data = written(tmp_path / "r.zst", 1000)
    old = one_frame_each([t for _, _, t in blocks(data)])
    assert len(data) <= 0.4 * len(old), (len(data), len(old))


@pytest.mark.parametrize("chunk", [7, 100, 512 * 1024])
def test_a_recording_whose_frame_is_not_finished_reads_every_record_and_is_not_cut_short(tmp_path: Path,
                                                                                          chunk: int) -> None:
    """A recorder killed (or still writing) leaves a frame without its end: every block of it is read."""
    path = tmp_path / "live.zst"
    rec = record(path, 100, close=False)  # 101 blocks: a frame of 64, then 37 of a frame not finished
    data = path.read_bytes()
    assert len(layout(data)[1]) == 1 and len(blocks(data)) == 101
    out, decoder = decoded(data, chunk)
    assert out.count(b"<end record>") == 100 and not decoder.truncated and not decoder.damage
    doc = report(path)  # as `report` reads a recording still written
    assert doc["streams"][0]["columns"] == 100 and not doc["errors"]["messages"]
    rec.close()
    assert report(path)["streams"][0]["columns"] == 100


def test_a_frame_written_block_by_block_and_not_finished_is_no_cut() -> None:
    packer = zstandard.ZstdCompressor(write_checksum=True).compressobj()
    lines = [b"%d, %d\n" % (i, i * i) for i in range(50)]
    data = b"".join(packer.compress(line) + packer.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK) for line in lines)
    follower = ZstdFrames()
    follower.feed(data)
    assert follower.between_blocks and not follower.between_frames
    out, decoder = decoded(data)
    assert out == b"".join(lines) and not decoder.truncated
    follower.feed(data[:1])  # and one byte more: inside a block
    assert not follower.between_blocks


def test_a_cut_at_every_byte_loses_the_block_cut_and_no_more(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recording_module, "RECORDS_PER_FRAME", 8)  # small frames: many frame ends among the cuts
    path = tmp_path / "r.zst"
    rec = Recorder(str(path))
    rng = np.random.default_rng(1)
    for i in range(20):
        rec.write(Interval(A, 100.0 + i, 101.0 + i, rng.poisson(np.full(64, 3.0))))
        if i == 11:
            rec.annotate("note", json.dumps({"message": "a note between records", "skipped": 0}))
    rec.close()
    data = path.read_bytes()
    parts = blocks(data)
    assert len(parts) == 23 and len(layout(data)[1]) == 3
    whole_at = {0} | {end for _, end, _ in parts}
    for cut in range(len(data) + 1):
        for chunk in (7, 512 * 1024):  # read in pieces, or at once
            out, decoder = decoded(data[:cut], chunk)
            assert out == b"".join(t for _, end, t in parts if end <= cut), (cut, chunk)
            assert decoder.truncated == (cut not in whole_at), (cut, chunk)
            assert decoder.cut == (None if cut in whole_at else (max(w for w in whole_at if w < cut), cut))
            assert not decoder.damage and decoder.stray is None
    for cut, short in ((parts[10][1], False), (parts[10][1] - 1, True), (parts[8][0] + 5, True)):
        path.write_bytes(data[:cut])
        doc = report(path)
        assert doc["streams"][0]["columns"] == sum(t.count(b"<end record>") for _, end, t in parts if end <= cut)
        said = [m for m in doc["errors"]["messages"] if CUT_SHORT in m]
        assert said == ([cut_short(path, max(w for w in whole_at if w < cut), cut)] if short else [])


def bad_block(data: bytes, start: int, end: int) -> bytes:
    """`data` with a byte of its block at [start, end) changed so that decoding the block fails (not only the frame's
    checksum): the first such change found, deterministic for given data."""
    frame_start = max(e for e in [0, *layout(data)[1]] if e <= start)
    for pos in range(start + 3, end):  # past the block header: the frame's layout stays
        damaged = bytearray(data)
        damaged[pos] ^= 0x5A
        dobj = zstandard.ZstdDecompressor().decompressobj()
        try:
            dobj.decompress(bytes(damaged[frame_start:end]))
        except zstandard.ZstdError as err:
            if "checksum" not in str(err):
                return bytes(damaged)
    raise AssertionError("no change of that block fails its decoding")


@pytest.mark.parametrize("chunk", [7, 100, 512 * 1024])
def test_a_corrupt_block_loses_the_rest_of_its_frame_and_keeps_what_came_before(tmp_path: Path, chunk: int) -> None:
    path = tmp_path / "r.zst"
    data = written(path, 200)
    parts = blocks(data)
    _, ends = layout(data)
    k = RECORDS_PER_FRAME + 20  # record 84, in the second frame, which starts at ends[0] with record 64
    bad = bad_block(data, parts[k][0], parts[k][1])
    out, decoder = decoded(bad, chunk)
    kept = [t for i, (_, _, t) in enumerate(parts) if not k <= i < 2 * RECORDS_PER_FRAME]
    assert out == b"".join(kept)
    (stretch,) = decoder.damage
    assert (stretch.at, stretch.frame, stretch.resumed) == (parts[k][0], ends[0], ends[1])
    assert stretch.blocks == RECORDS_PER_FRAME - 20
    assert stretch.lines == b"".join(t for _, _, t in parts[:k]).count(b"\n")
    assert not decoder.truncated
    path.write_bytes(bad)
    doc = report(path)
    assert doc["streams"][0]["columns"] == 200 - 44 and doc["errors"]["skipped_records"] == 44
    (said,) = doc["errors"]["messages"]
    assert said == (f"{path}: a zstd block that cannot be decoded (corrupt) at byte {parts[k][0]:,}, after line "
                    f"{stretch.lines:,} of the text: skipped, with the rest of its frame (in a recording, up to 44 "
                    f"records; what the frame held before it, from byte {ends[0]:,}, is kept); read on from the next "
                    f"frame, at byte {ends[1]:,}")


def test_a_frame_whose_checksum_fails_is_lost_whole_and_nothing_else(tmp_path: Path) -> None:
    """Every block of it decodes: the checksum alone tells that one of them is wrong, not which one."""
    path = tmp_path / "r.zst"
    data = written(path, 200)
    parts = blocks(data)
    _, ends = layout(data)
    flipped = bytearray(data)
    flipped[ends[1] - 2] ^= 0x01  # in the second frame's checksum
    out, decoder = decoded(bytes(flipped))
    assert out == b"".join(t for i, (_, _, t) in enumerate(parts) if not RECORDS_PER_FRAME <= i < 2 * RECORDS_PER_FRAME)
    (stretch,) = decoder.damage
    assert (stretch.at, stretch.resumed, stretch.blocks) == (ends[0], ends[1], RECORDS_PER_FRAME)
    path.write_bytes(bytes(flipped))
    doc = report(path)
    assert doc["streams"][0]["columns"] == 200 - RECORDS_PER_FRAME
    (said,) = doc["errors"]["messages"]
    assert said.startswith(f"{path}: a zstd frame that cannot be decoded (corrupt) at byte {ends[0]:,}, after line ")
    assert f"skipped, with what it held (in a recording, up to {RECORDS_PER_FRAME} records); read on from the next " \
           f"frame, at byte {ends[1]:,}" in said


@pytest.mark.parametrize("checksum", [True, False])
def test_a_recording_of_a_frame_per_record_reads_as_before(tmp_path: Path, checksum: bool) -> None:
    new = tmp_path / "new.zst"
    texts = [t for _, _, t in blocks(written(new, 100))]
    old = tmp_path / "old.zst"
    old.write_bytes(one_frame_each(texts, checksum))
    assert len(layout(old.read_bytes())[1]) == 101
    assert report(old) == report(new)
    data = old.read_bytes()
    _, ends = layout(data)
    old.write_bytes(data[:(ends[40] + ends[41]) // 2])  # inside the frame of record 41
    doc = report(old)
    said = cut_short(old, ends[40], (ends[40] + ends[41]) // 2)
    assert doc["streams"][0]["columns"] == 40 and said in doc["errors"]["messages"]


def test_a_block_header_damaged_loses_the_rest_of_its_frame_counted_by_the_headers_after_it(tmp_path: Path) -> None:
    """The walk of the frame's layout stops at the damaged header; the blocks after it, found by their own headers
    from the frame's end back, are counted (until 2026-11-28 one record was counted, whatever the loss)."""
    path = tmp_path / "r.zst"
    data = written(path, 200)
    parts = blocks(data)
    _, ends = layout(data)
    k = RECORDS_PER_FRAME + 20
    damaged = bytearray(data)
    damaged[parts[k][0]] |= 0x06  # a block of the reserved type: the frame's layout is lost from there
    out, decoder = decoded(bytes(damaged))
    assert out == b"".join(t for i, (_, _, t) in enumerate(parts) if not k <= i < 2 * RECORDS_PER_FRAME)
    (stretch,) = decoder.damage
    assert (stretch.at, stretch.frame, stretch.resumed, stretch.blocks) == (parts[k][0], ends[0], ends[1], 44)
    path.write_bytes(bytes(damaged))
    doc = report(path)
    (said,) = doc["errors"]["messages"]
    assert "(in a recording, up to 44 records; what the frame held before it" in said
    assert doc["errors"]["skipped_records"] == 44 and doc["streams"][0]["columns"] == 200 - 44
