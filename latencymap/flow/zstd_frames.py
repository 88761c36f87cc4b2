"""Decode a zstd input frame by frame, each frame given once its checksum is checked, and go on past damage.

What the damage hid is skipped, said where (the bytes of the input), and counted: a recording writes a record a
block, RECORDS_PER_FRAME blocks a frame. The layout of the frames and blocks, followed as the bytes are read, is
zstd_layout.py's.
"""

from __future__ import annotations

import bisect
import io
import itertools
from collections import deque
from dataclasses import dataclass
from typing import IO, Any

from latencymap.flow.zstd_layout import (
    SEARCHED,
    ZSTD_MAGIC,
    ZstdFrames,
    blocks_lost,
    ends_a_frame,
    magic_damaged,
    no_frame,
)

#: A frame per record (as until 2026-11-27) gave every record a frame of its own to compress in, 4.7x the size;
#: the records of a frame share its window, and 64 of them take most of the gain: on 162,192 records of 200 streams,
#: 64 a frame gave 6.24 MB, 256 gave 5.82 MB (7% less), a frame each 29.0 MB. What a frame holds is what a damaged
#: checksum loses (which of its blocks is bad is not known), and what is checked only at its end: 64 keeps that small.
RECORDS_PER_FRAME = 64
#: The header of an empty last block: how a frame written block by block ends when finished between two blocks.
_EMPTY_LAST = b"\x01\x00\x00"
#: The bytes of a recording's frame header (its magic number, a descriptor with a checksum and no size, a window).
_FRAME_HEADER = 6


@dataclass(slots=True)
class Damage:
    """A stretch of a zstd input that could not be decoded: from `at` (a byte offset of the compressed input: where
    its frame starts, or where the first bad block of a frame starts when what the frame held before it was kept) to
    the next frame, at `resumed` (`last`: no frame comes after it, and the input ends at `resumed`); `lines`: the
    lines of decoded text before it; `frame`: where its frame starts (None: at `at`); `blocks`: the blocks lost, from
    `at` to the end of its frame, that hold something (a recording writes a record a block), as the frame's layout
    tells (or, where bytes inserted hide part of it, the frames of the same input before it, which a recording writes
    alike); None where neither tells. `junk`: bytes that are no zstd data, between two frames (none lost)."""

    at: int
    resumed: int
    lines: int
    frame: int | None = None
    blocks: int | None = None
    last: bool = False
    junk: bool = False


#: Blocks decoded at once at most (each decodes to at most 128 KiB); also the blocks of a frame held back until its
#: checksum is read: past them (a frame of more, no recording's), what it holds is given unchecked as it comes.
BULK_BLOCKS = 256


class FrameDecoder(io.RawIOBase):
    """The decoded bytes of a zstd input, frame by frame, each frame given once its checksum is checked.

    A frame is decoded once it is whole (and its checksum checked, when it has one); where the input ends inside a
    frame (a recording still written, or whose recorder was killed), its whole blocks are given at the end, unchecked.
    A frame that cannot be decoded (corrupt) loses what it holds from its first bad block on: what it gave before that
    block is kept (a recording: the records before it in the frame), one whose checksum fails is lost whole (which of
    its blocks is bad is not known). Decoding goes on at the next frame, found by its magic number, and `damage`
    lists each such stretch; a read returns short where one was skipped, so what comes after it comes in a later
    read. `truncated`: the input ends inside a block (cut short), `cut` then says where the whole blocks end and
    where the input ends; `stray`: the input ends with bytes after its last frame that are no zstd data (offset,
    length), none of them lost.
    """

    def __init__(self, raw: IO[bytes], chunk: int = 512 * 1024) -> None:
        import zstandard

        self._raw, self._chunk = raw, chunk
        self._dctx = zstandard.ZstdDecompressor()
        self._error = zstandard.ZstdError
        self._data = b""  # compressed bytes read; those from `_pos` on are not decoded yet
        self._pos = 0
        self._at = 0  # the offset of `_data[0]` in the input
        self._cuts: deque[int] = deque()  # offsets where the blocks (and frames) ahead end, in order
        self._ends: deque[int] = deque()  # offsets where the frames ahead end
        self._frames = ZstdFrames(0, self._cuts, self._ends)
        self._bulk: Any = None  # the decoder across frames (as many blocks at once as are held); None: a new one
        self._frame_start = 0  # where the frame under way, as far as the blocks passed tell, starts
        self._in_frame = 0  # the blocks of it passed that hold something (0: between frames)
        self._cut = 0  # where the last block passed ends
        self._whole = 0  # the blocks of the last whole frame passed (a recording's frames hold RECORDS_PER_FRAME)
        self._careful = -1  # up to this offset, a frame at a time (a frame there cannot be decoded)
        self._dobj: Any = None  # the decoder of the frame under way, a frame at a time; None: between frames
        self._frame_at = 0  # where that frame starts
        self._frame_check = 0  # the bytes of its checksum
        self._held: list[bytes] = []  # what its blocks decoded to, held until its checksum is checked
        self._held_ends: list[int] = []  # where the block that gave each of them ends
        self._held_at = 0  # where the first block held starts
        self._out = b""  # decoded bytes, given up to `_given`
        self._given = 0
        self._out_after = 0  # the stretches of `damage` before the text of `_out`
        self._lines = 0  # newlines decoded so far
        self._ended = False  # the input gave everything
        self._rest = b""  # what the input gave after its last whole block (see `_end`)
        self._astray = False  # a frame starts after the last whole block the layout walked: it went astray
        self.damage: list[Damage] = []
        self._said = 0  # stretches of `damage` before the text given so far
        self.truncated = False
        self.cut: tuple[int, int] | None = None
        self.stray: tuple[int, int] | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        size, got = len(buffer), 0
        view = memoryview(buffer).cast("B")
        while got < size:
            if self._given < len(self._out):
                if self._out_after > self._said:
                    if got:
                        break  # what follows a damaged stretch comes in the next read
                    self._said = self._out_after
                take = min(size - got, len(self._out) - self._given)
                view[got:got + take] = memoryview(self._out)[self._given:self._given + take]
                self._given += take
                got += take
            elif self._pos < len(self._data) and self._decode():
                continue
            elif self._astray:
                self._went_astray()
            elif self._ended and self._held:
                self._give(b"".join(self._held))  # the end, inside a frame: its whole blocks, unchecked
                self._held.clear()
                self._held_ends.clear()
            elif got or self._ended or self.truncated:
                break  # what is here goes out now: a live pipe is not waited on with data in hand
            else:
                self._read()
        return got

    def _give(self, out: bytes) -> None:
        if out:
            self._out, self._given, self._out_after = out, 0, len(self.damage)
            self._lines += out.count(b"\n")

    def _more(self) -> bytes:
        """The next bytes of the input (those after the last whole block, put back by `_end`, first)."""
        rest, self._rest = self._rest, b""
        return rest or self._raw.read(self._chunk)

    def _read(self) -> None:
        data = self._more()
        if not data:
            self._ended = True
            self._end()
            return
        self._frames.feed(data)
        keep = self._pos  # bytes decoded are let go, but those of a frame decoded a block at a time (see `_one_block`)
        if self._dobj is not None:
            keep = min(keep, max(self._frame_at - self._at, keep - SEARCHED, 0))
        held = self._data[keep:]  # from the start of a block, which is decoded whole
        self._at += keep
        self._data, self._pos = held + data if held else data, self._pos - keep

    def _end(self) -> None:
        """At the end of the input: whether it ends inside a block (cut short, the whole blocks before it decoded) or
        with a few bytes that start no frame; said again after damage found later (the layout walked up to the end
        went astray there), as the layout walked from the next frame tells."""
        frames = self._frames
        self.truncated, self.cut, self.stray, self._astray = False, None, None, False
        if frames.between_frames or frames.between_blocks:
            return
        cuts, limit = self._cuts, self._at + len(self._data)
        whole = cuts[-1] if cuts and cuts[-1] <= limit else cuts[-2] if len(cuts) > 1 else 0
        keep = max(whole - self._at, self._pos)
        self._data, self._rest = self._data[:keep], self._data[keep:]  # looked at again if damage comes before
        if frames.stray:  # a few bytes after the last frame that start none: nothing is lost
            self.stray = (limit - frames.stray, frames.stray)
        elif self._rest.find(ZSTD_MAGIC, 1) >= 0 or ends_a_frame(self._rest):  # a frame starts after, or whole
            # blocks end one there: no cut, the walk went astray (in bytes inserted, a block not decoded yet, or one
            # decoded without a word: see `_went_astray`)
            self._astray = True
        else:  # the end, inside a block: the whole blocks before it are decoded, not it
            self.truncated, self.cut = True, (self._at + len(self._data), limit)

    def _went_astray(self) -> None:
        """Every whole block that the layout walked is decoded, and a frame starts (or ends) after the last: the walk
        went astray before (a block header read where bytes were inserted) without a block failing to decode. The rest
        of the frame under way is lost, from here; decoding goes on at that frame."""
        self._astray, at = False, self._at + self._pos
        self._passed(at)
        if self._dobj is None:  # decoded across frames: where this one starts, the blocks passed tell
            self._frame_at, self._frame_check = self._frame_start, -1
        self._bad_block(at)

    def _bad_block(self, at: int) -> None:
        """The block of the frame under way at offset `at` cannot be decoded: what the frame gave before it is kept,
        but blocks that run past the next frame's magic number (bytes inserted made a block header of what was none:
        a raw block, which decodes whatever it holds, may take in many frames), and decoding goes on at that frame."""
        held, held_ends = self._held, self._held_ends
        self._held, self._held_ends, self._dobj = [], [], None
        after = self._data.find(ZSTD_MAGIC, max(self._frame_at + 1 - self._at, 0), self._pos) if held else -1
        if after >= 0:
            kept = bisect.bisect_right(held_ends, self._at + after)
            dropped = held_ends[kept - 1] if kept else self._held_at  # where the first block dropped starts
            if dropped >= self._at:  # its bytes are still here: read on from there
                held, at, self._pos, self._in_frame = held[:kept], dropped, dropped - self._at, kept
        self._give(b"".join(held))
        self._resync(at, at + 1 if at == self._frame_at else at)

    def _decode(self) -> bool:
        """Decode the compressed bytes held up to the last whole frame (at the end of the input: block), across
        frames at once; where that fails, again a block at a time, each frame on its own, to keep every frame before
        the bad one and find where it starts. False: no whole frame is held (nothing was done)."""
        cuts, ends, data, pos = self._cuts, self._ends, self._data, self._pos
        at = self._at + pos
        self._passed(at)
        if at < self._careful or self._dobj is not None:
            self._one_block(at)
            return True
        limit = self._at + len(data)
        end = limit  # bytes that are no frame: the decoder says where
        if not self._frames.lost:
            last = len(cuts) - 1 if cuts and cuts[-1] <= limit else len(cuts) - 2
            if last < 0:
                return False  # not one whole block held: read more first
            end = cuts[min(last, BULK_BLOCKS - 1)]  # a bomb of RLE blocks stays small
            if not self._ended:  # up to the end of a frame: each frame given once its checksum is checked
                frame_end = 0
                for e in ends:
                    if e > end:
                        break
                    frame_end = e
                if frame_end:
                    end = frame_end
                elif last < BULK_BLOCKS - 1:
                    return False  # the frame goes on past what is held: read more first
        if self._bulk is None:
            self._bulk = self._dctx.decompressobj(read_across_frames=True)
        try:
            out = self._bulk.decompress(memoryview(data)[pos:end - self._at])
        except self._error:
            self._bulk = None
            if not self._in_frame:  # between frames: again, a frame at a time
                self._careful = end
            else:  # inside a frame begun before: what it gave before is kept
                self._frame_at, self._frame_check = self._frame_start, -1
                self._resync(at, at)
            return True
        self._pos = end - self._at
        self._give(out)
        return True

    def _passed(self, at: int) -> None:
        """Let go of the layout up to offset `at`, counting the blocks passed by frame (where a frame ends, a block
        ends too)."""
        cuts, ends = self._cuts, self._ends
        while cuts and cuts[0] <= at:
            cut = cuts.popleft()  # an empty block holds nothing: a block header alone (the first, after its frame's)
            self._in_frame += cut - self._cut > (3 + _FRAME_HEADER if self._cut == self._frame_start else 3)
            self._cut = cut
            if ends and ends[0] == cut:
                ends.popleft()
                self._whole, self._in_frame, self._frame_start = self._in_frame, 0, cut
        while ends and ends[0] <= at:
            ends.popleft()

    def _one_block(self, at: int) -> None:
        """Decode up to the end of the next block, its frame on its own; what it gives is held until the frame's
        checksum is checked."""
        cuts, data, pos = self._cuts, self._data, self._pos
        end = min(cuts[0] - self._at, len(data)) if cuts else len(data)
        if self._dobj is None:
            self._dobj, self._frame_at, self._held_at = self._dctx.decompressobj(), at, at
            descriptor = data[pos + 4] if len(data) > pos + 4 and data[pos:pos + 4] == ZSTD_MAGIC else 0
            self._frame_check = 4 if descriptor & 0x04 else 0
        try:
            out = self._dobj.decompress(memoryview(data)[pos:end])
        except self._error as err:
            if "checksum" in str(err):  # every block decoded, and what they gave is wrong somewhere: all of it lost
                blocks = len(self._held) + (data[pos:pos + 3] != _EMPTY_LAST)  # a finished recording's ends empty
                self._held, self._held_ends = [], []
                after = data.find(ZSTD_MAGIC, max(self._frame_at + 1 - self._at, 0), end)
                if after >= 0:  # it ran past the next frame's start, astray in bytes inserted: it ends there
                    self._pos, end = after, after
                self._resync(self._held_at, self._at + end, blocks)
            else:
                self._bad_block(at)
            return
        if self._dobj.eof:
            end -= len(self._dobj.unused_data)
            self._dobj = None
            if self._held:
                out = b"".join([*self._held, out])
                self._held.clear()
                self._held_ends.clear()
            self._give(out)
        elif out:
            self._held.append(out)
            self._held_ends.append(self._at + end)
            if len(self._held) >= BULK_BLOCKS:  # a frame of many blocks (no recording's): given as it comes
                self._give(b"".join(self._held))
                self._held.clear()
                self._held_ends.clear()
                self._held_at = self._at + end
        self._pos = end

    def _resync(self, bad: int, start: int, blocks: int | None = None) -> None:
        """After a block that cannot be decoded, at offset `bad`: go on at the next frame magic number from offset
        `start`, counting the blocks passed over as far as the layout tells; `blocks`: those of a frame whose checksum
        failed, lost whole to that magic number (a frame whose own magic number is damaged after its end, at `start`,
        is counted apart). The end of the input there: its last frame damaged, or bytes after it that are no frame."""
        frame, kept, self._dobj = self._frame_at, self._in_frame, None
        origin = bad if blocks is None else start  # where the stretch whose blocks are counted here starts
        data, skip = self._data[self._pos:], self._at + self._pos  # `data` starts at offset `skip`, at `bad`
        whole, last = origin >= skip, False  # the stretch held whole (to be searched for blocks); no frame after it
        looked = max(start - skip, 0)
        while (found := data.find(ZSTD_MAGIC, looked)) < 0:
            more = self._more()
            if not more:  # no frame after it: the input ends damaged
                found, last, self._ended = len(data), True, True
                break
            if whole and len(data) + len(more) > origin - skip + SEARCHED:
                whole = False
            if not whole:  # a magic number is looked for in what was read last only (it may be cut between reads)
                keep = min(len(data), len(ZSTD_MAGIC) - 1)
                skip += len(data) - keep
                data = data[len(data) - keep:]
            looked = max(len(data) - (len(ZSTD_MAGIC) - 1), start - skip, 0)
            data += more
        resumed = skip + found
        stretch = data[origin - skip:found] if whole else None
        data, self._rest = data + self._rest, b""  # the layout is walked again from here to the end
        self._data, self._pos, self._at = data, found, skip
        self._cuts.clear()
        self._ends.clear()
        self._bulk, self._in_frame, self._frame_start, self._cut = None, 0, resumed, resumed
        self._frames = ZstdFrames(resumed, self._cuts, self._ends)
        self._frames.feed(memoryview(data)[found:])
        alike = 0 if last else self._whole or self._next_frame()
        stray = None
        if blocks is not None:  # its checksum failed: lost whole, to the next frame (where its walk ended, astray in
            # bytes inserted, may be before); a frame of a recording holds `alike` blocks, whatever that walk found
            blocks = alike if alike and bad == frame else blocks
            if start < resumed and stretch is not None and magic_damaged(stretch, last):  # and then a frame whose
                # magic number is damaged too (bytes written over both): lost, counted apart
                self.damage.append(Damage(bad, start, self._lines, frame, blocks))
                bad = frame = start
                blocks = alike or blocks_lost(stretch, None, 0, 0, open_end=last)
            self.damage.append(Damage(bad, resumed, self._lines, frame, blocks, last))
        elif bad == frame and stretch is not None and no_frame(stretch, open_end=last):
            if last:  # bytes after the last frame: ignored
                stray = (bad, resumed - bad)
            else:
                self.damage.append(Damage(bad, resumed, self._lines, frame, 0, junk=True))
        else:
            if stretch is not None:
                blocks = blocks_lost(stretch, None if bad == frame else self._frame_check, kept, alike,
                                     open_end=last)
            self.damage.append(Damage(bad, resumed, self._lines, frame, blocks, last))
        if self._ended:  # the end of the input, as the layout walked from here tells
            self._end()
            self.stray = stray or self.stray

    def _next_frame(self) -> int:
        """The blocks of the frame that the input goes on with, when it holds RECORDS_PER_FRAME (a recording's)."""
        ends = self._ends
        held = sum(1 for _ in itertools.takewhile(lambda cut: cut <= ends[0], self._cuts)) if ends else 0
        return held if held == RECORDS_PER_FRAME else 0

    def close(self) -> None:
        self._raw.close()
        super().close()
