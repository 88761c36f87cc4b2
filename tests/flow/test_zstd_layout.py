"""The whole blocks that end a damaged zstd frame, found from every offset at once: in a frame of a recording (a
record a block), with bytes inserted in one of its blocks, they are exactly the blocks after that one."""

from __future__ import annotations

import random

import numpy as np
import pytest
import zstandard
from zstd_support import blocks, layout

from latencymap.core.model import Interval, StreamId
from latencymap.flow.recording import RECORDS_PER_FRAME, Recorder
from latencymap.flow.zstd_layout import SEARCHED, Tail, blocks_lost, frame_header_size, no_frame, whole_tail


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = tmp_path_factory.mktemp("rec") / "r.zst"
    rec = Recorder(str(path))
    rng = np.random.default_rng(7)
    for i in range(3 * RECORDS_PER_FRAME):
        rec.write(Interval(StreamId("io", "bpf", "microsec"), 10.0 + i, 11.0 + i, rng.poisson(np.full(64, 4.0))))
    rec.close()
    return path.read_bytes()


@pytest.mark.parametrize("inserted", ["zero", "random"])
@pytest.mark.parametrize("k", [0, 1, 17, RECORDS_PER_FRAME - 2, RECORDS_PER_FRAME - 1])
def test_the_blocks_after_bytes_inserted_in_a_block_are_found_and_counted(recorded: bytes, k: int,
                                                                          inserted: str) -> None:
    parts = blocks(recorded)
    _, ends = layout(recorded)
    block = RECORDS_PER_FRAME + k  # of the second frame, from ends[0] to ends[1]
    start, end, _ = parts[block]
    junk = bytes(1000) if inserted == "zero" else random.Random(k).randbytes(1000)
    at = (start + end) // 2
    frame = recorded[start:at] + junk + recorded[at:ends[1]]  # from the damaged block to the frame's end
    tail = whole_tail(frame, 4)
    if k == RECORDS_PER_FRAME - 1:  # the last block is damaged: none after it
        assert tail is None and blocks_lost(frame, 4, k, 0) is None
    else:
        assert tail == Tail(parts[block + 1][0] - start + len(junk), RECORDS_PER_FRAME - 1 - k)
        assert blocks_lost(frame, 4, k, 0) == RECORDS_PER_FRAME - k  # the damaged one, then those
    assert blocks_lost(frame, 4, k, RECORDS_PER_FRAME) == RECORDS_PER_FRAME - k  # the frame before holds 64


def test_blocks_inserted_between_two_blocks_are_not_counted_where_the_frame_before_tells(recorded: bytes) -> None:
    parts = blocks(recorded)
    _, ends = layout(recorded)
    start = parts[RECORDS_PER_FRAME + 30][0]
    stretch = random.Random(1).randbytes(500) + recorded[start:ends[1]]
    assert whole_tail(stretch, 4) == Tail(500, RECORDS_PER_FRAME - 30)
    assert blocks_lost(stretch, 4, 30, RECORDS_PER_FRAME) == RECORDS_PER_FRAME - 30
    assert blocks_lost(stretch, 4, 30, 0) == RECORDS_PER_FRAME - 30 + 1  # one for the stretch: it may be a block


def test_a_frame_whose_blocks_are_whole_is_counted_from_its_header(recorded: bytes) -> None:
    """A frame that cannot be decoded though its layout is whole (a byte of a block changed): all its blocks."""
    _, ends = layout(recorded)
    frame = recorded[ends[0]:ends[1]]
    assert whole_tail(frame, 4) == Tail(frame_header_size(frame[4]), RECORDS_PER_FRAME)
    assert blocks_lost(frame, None, 0, 0) == blocks_lost(frame, None, 0, 17) == RECORDS_PER_FRAME


def test_the_end_of_a_frame_not_finished_is_found_with_an_open_end(recorded: bytes) -> None:
    parts = blocks(recorded)
    start, stop = parts[RECORDS_PER_FRAME + 3][0], parts[RECORDS_PER_FRAME + 40][1]  # a recorder killed there
    assert whole_tail(recorded[start:stop], 4) is None
    assert whole_tail(recorded[start:stop], 4, open_end=True) == Tail(0, 38)


def test_bytes_that_are_no_zstd_data_are_told_from_a_frame_whose_magic_number_is_damaged(recorded: bytes) -> None:
    _, ends = layout(recorded)
    for junk in (bytes(1000), random.Random(3).randbytes(1000), b"oops a log line\n", b"x" * 5000):
        assert no_frame(junk) and no_frame(junk, open_end=True)
        assert whole_tail(junk, 4) is None
    frame = bytearray(recorded[ends[0]:ends[1]])
    assert not no_frame(bytes(frame))
    frame[1] ^= 0xFF  # its magic number
    assert not no_frame(bytes(frame)) and blocks_lost(bytes(frame), None, 0, 0) == RECORDS_PER_FRAME
    one = zstandard.ZstdCompressor(write_checksum=True).compress(b"a short line\n")  # a frame of one block
    assert not no_frame(b"\x00" + one[1:])


def test_a_stretch_too_long_is_not_searched() -> None:
    assert whole_tail(bytes(SEARCHED + 1), 0) is None
