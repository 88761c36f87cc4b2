"""A zstd input cut inside a block (of a frame after its first) is said to be cut short, as gzip, bzip2 and xz inputs
are: the records before the cut are kept and the notes name the file; one that ends where a frame ends, or between
two blocks of a frame (a recording, a record a block, still written or whose recorder was killed), is a whole file."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from latencymap.flow.zstd_frames import ZstdFrames

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
READ_UP_TO_THERE = "the compressed data ends early (cut short or corrupt): read up to there"
NOTHING = "the compressed data ends early (cut short or corrupt): nothing could be decompressed"


def run(*args: str | Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "latencymap", *map(str, args)], capture_output=True, timeout=60,
                          input=stdin.decode("latin-1") if stdin is not None else None, text=True,
                          encoding="latin-1", env={**os.environ, "NO_COLOR": "1"})


def frame_ends(data: bytes) -> list[int]:
    """Where each zstd frame of `data` ends, as the zstd library decodes them one at a time."""
    ends, pos = [], 0
    while pos < len(data):
        one = zstandard.ZstdDecompressor().decompressobj()
        one.decompress(data[pos:])
        assert one.eof
        pos = len(data) - len(one.unused_data)
        ends.append(pos)
    return ends


def record_block_ends(data: bytes) -> list[int]:
    """Where the header's block and each record's block of a recording end (a block that holds a note of the recorded
    run, `# latencymap-note`, between them, and the empty block that ends a frame at close, are left out)."""
    cuts: list[int] = []
    ZstdFrames(0, cuts).feed(data)
    ends, start, dobj = [], 0, None
    for cut in cuts:
        dobj = dobj or zstandard.ZstdDecompressor().decompressobj()
        text = dobj.decompress(data[start:cut])
        if text and not text.startswith(b"# latencymap-note "):
            ends.append(cut)
        start = cut
        if dobj.eof:
            dobj = None
    return ends


def read_up_to(data: bytes) -> str:
    """The note of zstd `data` cut short: where its last whole block ends, and how many bytes follow it."""
    cuts: list[int] = []
    ZstdFrames(0, cuts).feed(data)
    whole = max((c for c in cuts if c <= len(data)), default=0)
    return (f"{READ_UP_TO_THERE} (byte {whole:,}, the end of its last whole zstd block; the {len(data) - whole:,} "
            f"bytes after it are no whole block)")


def _streamed(data: bytes, **params: int | bool) -> bytes:
    """One frame that does not say how much it holds (the `zstd` tool on a pipe writes such frames), a block for
    each 4 KB (as a writer that flushes as it goes)."""
    packer = zstandard.ZstdCompressor(**params).compressobj()  # type: ignore[arg-type]
    blocks = [packer.compress(data[i:i + 4096]) + packer.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
              for i in range(0, len(data), 4096)]
    return b"".join(blocks) + packer.flush()


def _skippable(payload: bytes) -> bytes:
    return (0x184D2A53).to_bytes(4, "little") + len(payload).to_bytes(4, "little") + payload


def _frames() -> list[bytes]:
    rng = random.Random(7)
    noise = bytes(rng.getrandbits(8) for _ in range(300_000))  # raw blocks, several of them
    text = b"".join(b"%d, %d\n" % (rng.randrange(64), rng.randrange(10**6)) for _ in range(30_000))
    return [
        zstandard.ZstdCompressor().compress(b"# header\n"),
        zstandard.ZstdCompressor(write_checksum=True).compress(text),  # compressed blocks and a checksum
        zstandard.ZstdCompressor().compress(b""),  # an empty frame
        _skippable(b"latencymap was here"),
        zstandard.ZstdCompressor(write_content_size=False).compress(b"\0" * 400_000),  # RLE blocks
        _streamed(noise, write_checksum=True),
        zstandard.ZstdCompressor(level=19).compress(text[:5000]),
        _streamed(b"<end record>\n"),
    ]


def test_the_frame_follower_is_between_frames_exactly_where_a_frame_ends() -> None:
    frames = _frames()
    data = b"".join(frames)
    ends = {0}
    for frame in frames:
        ends.add(max(ends) + len(frame))
    assert zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True).read()  # a valid stream
    follower = ZstdFrames()
    assert follower.between_frames
    for pos in range(len(data)):  # byte by byte: every cut
        follower.feed(data[pos:pos + 1])
        assert follower.between_frames == (pos + 1 in ends), pos + 1
    rng = random.Random(1)
    for _ in range(20):  # in pieces of any size, as a reader reads them
        follower, pos = ZstdFrames(), 0
        while pos < len(data):
            size = rng.choice([1, 2, 3, 7, 100, 4096, 131_075, 1_000_000])
            follower.feed(memoryview(data)[pos:pos + size])
            pos = min(pos + size, len(data))
            assert follower.between_frames == (pos in ends), pos


def test_bytes_that_are_no_zstd_frame_are_never_between_frames() -> None:
    follower = ZstdFrames()
    follower.feed(zstandard.ZstdCompressor().compress(b"ok\n") + b"garbage after the frame")
    assert not follower.between_frames
    reserved = ZstdFrames()  # a block of the reserved type
    reserved.feed(zstandard.ZstdCompressor().compress(b"x")[:6] + b"\x07\x00\x00")
    assert not reserved.between_frames


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A zstd recording that `latencymap --record` made of the PyLatencyMap sample."""
    rec = tmp_path_factory.mktemp("rec") / "rec.zst"
    done = run("--plain", "--once", "--record", rec, FIXTURES / "pylatencymap" / "example_latency_data.txt")
    assert done.returncode == 0, done.stderr
    return rec


def _report(path: Path | None = None, stdin: bytes | None = None) -> tuple[dict[str, object], str, int]:
    r = run("report", "--format", "json", *([path] if path else []), stdin=stdin)
    return json.loads(r.stdout), r.stderr, r.returncode


def test_a_recording_cut_inside_a_later_block_keeps_every_record_before_it_and_says_so(recording: Path,
                                                                                     tmp_path: Path) -> None:
    data = recording.read_bytes()
    ends = record_block_ends(data)  # the header line's block, then one block per record
    assert len(ends) > 20 and len(frame_ends(data)) > 1
    cut = tmp_path / "cut.zst"
    cut.write_bytes(data[:(ends[9] + ends[10]) // 2])  # inside the block of record 10: records 1..9 are whole
    said = read_up_to(cut.read_bytes())
    assert said.endswith(f"(byte {ends[9]:,}, the end of its last whole zstd block; the "
                         f"{(ends[10] - ends[9]) // 2:,} bytes after it are no whole block)")
    report, _, code = _report(cut)
    assert code == 0
    (stream,) = report["streams"]  # type: ignore[attr-defined]
    assert stream["columns"] == 9  # one interval per record
    assert f"{cut}: {said}" in report["errors"]["messages"]  # type: ignore[index]
    text = run("report", cut)
    assert text.returncode == 0 and f"   {cut}: {said}\n" in text.stdout.split("Notes:")[1]
    plain = run("--plain", "--once", cut)
    assert plain.returncode == 0 and f"latencymap: {cut}: {said}" in plain.stderr
    piped, _, code = _report(stdin=cut.read_bytes())
    assert code == 0 and f"<stdin>: {said}" in piped["errors"]["messages"]  # type: ignore[index]
    assert piped["streams"][0]["columns"] == stream["columns"]  # type: ignore[index]


def test_a_recording_cut_where_a_block_ends_is_a_whole_file(recording: Path, tmp_path: Path) -> None:
    """Where a record's block ends, inside a frame or where the frame ends: every record before it, no cut said."""
    data = recording.read_bytes()
    ends = record_block_ends(data)
    frames = set(frame_ends(data))
    assert not frames.isdisjoint(ends[1:-1])  # a frame ends after a record, before the last
    for records in (1, 10, *(i for i, end in enumerate(ends) if end in frames), len(ends) - 1):
        whole = tmp_path / f"first{records}.zst"
        whole.write_bytes(data[:ends[records]])
        report, _, code = _report(whole)
        assert code == 0
        assert [s["columns"] for s in report["streams"]] == [records]  # type: ignore[attr-defined]
        assert not any("ends early" in m for m in report["errors"]["messages"])  # type: ignore[index]
        piped, _, _ = _report(stdin=whole.read_bytes())  # a pipe read to its end
        assert piped["streams"] == report["streams"]
        assert not any("ends early" in m for m in piped["errors"]["messages"])  # type: ignore[index]
    header_only = tmp_path / "header.zst"
    header_only.write_bytes(data[:ends[0]])
    r = run("report", header_only)
    assert r.returncode == 0 and r.stdout.startswith("No data.") and "ends early" not in r.stdout + r.stderr


@pytest.mark.parametrize("cut_at", [4, 6, 20, 200])
def test_a_zstd_frame_that_does_not_say_its_size_cut_before_a_record_came_out_gave_nothing(
        example_data: Path, tmp_path: Path, cut_at: int) -> None:
    packed = _streamed(example_data.read_bytes())
    assert zstandard.get_frame_parameters(packed).content_size == zstandard.CONTENTSIZE_UNKNOWN
    cut = tmp_path / "streamed.zst"
    cut.write_bytes(packed[:cut_at])
    r = run("report", cut)
    assert r.returncode == 1, r.stderr
    assert r.stderr.strip().splitlines()[-1] == f"latencymap: {cut}: {NOTHING}"


def test_a_zstd_input_cut_after_records_came_out_of_its_only_frame_keeps_them(example_data: Path,
                                                                             tmp_path: Path) -> None:
    packed = _streamed(example_data.read_bytes())
    cut = tmp_path / "streamed.zst"
    cut.write_bytes(packed[:len(packed) // 2])
    report, _, code = _report(cut)
    assert code == 0 and report["streams"][0]["columns"] > 5  # type: ignore[index]
    assert f"{cut}: {read_up_to(cut.read_bytes())}" in report["errors"]["messages"]  # type: ignore[index]
