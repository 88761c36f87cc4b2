"""Follow the frames of a zstd stream as its compressed bytes go by, to tell whether it ends between two frames.

The zstd library reads across frames and, at the end of its input, says nothing of a frame left unfinished: the
records of a recording cut in a later frame are lost without a word. Following the frame layout (RFC 8878: frame
headers, block headers, checksums, skippable frames) costs a few steps per block (about 0.5 µs), and tells a cut
inside a block (or a tail that is no frame) from a file that ends where a frame ends, or between two whole blocks of
a frame its writer has not finished yet (a recording, whose every record is a block flushed as it is written, read
while it is written or after its recorder was killed).
"""

from __future__ import annotations

import io
from collections import deque
from collections.abc import MutableSequence
from dataclasses import dataclass
from typing import IO, Any

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
#: A frame per record (as until 2026-11-27) gave every record a frame of its own to compress in, 4.7x the size;
#: the records of a frame share its window, and 64 of them take most of the gain: on 162,192 records of 200 streams,
#: 64 a frame gave 6.24 MB, 256 gave 5.82 MB (7% less), a frame each 29.0 MB. What a frame holds is what a damaged
#: checksum loses (which of its blocks is bad is not known), and what is checked only at its end: 64 keeps that small.
RECORDS_PER_FRAME = 64
#: Skippable frames: magic 0x184D2A50 to 0x184D2A5F, little-endian, then a 4-byte size and that many bytes.
_SKIPPABLE_TAIL = b"\x2a\x4d\x18"
#: Bytes of the frame content size field for each Frame_Content_Size_flag (flag 0: 1 byte if single segment).
_FCS_SIZE = (0, 2, 4, 8)
_DICT_ID_SIZE = (0, 1, 2, 4)
#: What comes next: a frame's magic number (between frames), a block header, or bytes that are no zstd frame.
_FRAME, _BLOCK, _NOT_A_FRAME = range(3)


class ZstdFrames:
    """The frame layout of the bytes fed so far: `between_frames` when they end where a frame ends (or are none)."""

    def __init__(self, start: int = 0, cuts: MutableSequence[int] | None = None,
                 ends: MutableSequence[int] | None = None, *, checksum: int | None = None) -> None:
        self._state = _FRAME
        self._carry = b""  # the start of a header that the bytes fed so far end in
        self._skip = 0  # bytes to pass over (content) before the next header
        self._checksum = 0  # the bytes of the current frame's checksum, after its last block
        self._started = False  # a whole block of the current frame was passed (its header only is no block)
        if checksum is not None:  # the bytes fed start at a block header inside a frame (whose checksum is this long)
            self._state, self._checksum, self._started = _BLOCK, checksum, True
        self._fed = start  # the offset of the next byte fed (the first is at `start`)
        #: Where each block (with its frame's checksum after the last) and each skippable frame ends, as offsets, as
        #: far as the bytes fed so far tell (the end of a block may lie beyond them): when given, a list to append to.
        self.cuts = cuts
        #: Where each frame (a skippable one too) ends, likewise.
        self.ends = ends

    @property
    def lost(self) -> bool:
        """The bytes fed are no zstd frames (from somewhere on): no more ends will be found."""
        return self._state == _NOT_A_FRAME

    @property
    def between_frames(self) -> bool:
        return self._state == _FRAME and not self._carry and not self._skip

    @property
    def between_blocks(self) -> bool:
        """The bytes fed end inside a frame not finished yet, where one of its blocks ends (after one at least)."""
        return self._state == _BLOCK and self._started and not self._carry and not self._skip

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        if self._state == _NOT_A_FRAME or not data:
            return
        buf = self._carry + bytes(data) if self._carry else data
        base = self._fed - len(self._carry)  # the offset of buf[0]
        self._fed += len(data)
        cuts, ends = self.cuts, self.ends
        pos, size, state, checksum, started = self._skip, len(buf), self._state, self._checksum, self._started
        while pos < size:  # pos: where the next header starts
            if state == _FRAME:
                if pos + 5 > size:
                    break
                magic = buf[pos:pos + 4]
                if magic == ZSTD_MAGIC:
                    descriptor = buf[pos + 4]
                    single_segment = descriptor & 0x20
                    pos += (5 + (0 if single_segment else 1) + _DICT_ID_SIZE[descriptor & 0x03]
                            + (_FCS_SIZE[descriptor >> 6] or (1 if single_segment else 0)))
                    checksum = 4 if descriptor & 0x04 else 0
                    state, started = _BLOCK, False
                elif magic[1:] == _SKIPPABLE_TAIL and magic[0] & 0xF0 == 0x50:
                    if pos + 8 > size:
                        break
                    pos += 8 + int.from_bytes(buf[pos + 4:pos + 8], "little")
                    if cuts is not None:
                        cuts.append(base + pos)
                    if ends is not None:
                        ends.append(base + pos)
                else:
                    state = _NOT_A_FRAME
                    break
            else:  # a block header: last-block bit, type (raw, RLE, compressed, reserved), size
                if pos + 3 > size:
                    break
                header = int.from_bytes(buf[pos:pos + 3], "little")
                kind = (header >> 1) & 0x03
                if kind == 3:
                    state = _NOT_A_FRAME
                    break
                pos += 3 + (1 if kind == 1 else header >> 3)
                started = True
                if header & 1:
                    pos += checksum
                    state = _FRAME
                    if ends is not None:
                        ends.append(base + pos)
                if cuts is not None:
                    cuts.append(base + pos)
        self._state, self._checksum, self._started = state, checksum, started
        self._skip = max(pos - size, 0)
        self._carry = bytes(buf[pos:]) if pos < size and state != _NOT_A_FRAME else b""


class FollowedSource:
    """`raw` read through, every byte read shown to `frames` (what zstandard's stream reader reads from)."""

    def __init__(self, raw: IO[bytes], frames: ZstdFrames) -> None:
        self._raw, self._frames = raw, frames

    def read(self, size: int = -1) -> Any:
        data = self._raw.read(size)
        if data:
            self._frames.feed(data)
        return data


@dataclass(slots=True)
class Damage:
    """A stretch of a zstd input that could not be decoded: from `at` (a byte offset of the compressed input: where
    its frame starts, or where the first bad block of a frame starts when what the frame held before it was kept) to
    the next frame, at `resumed`; `lines`: the lines of decoded text before it; `frame`: where its frame starts (None:
    at `at`); `blocks`: the blocks from `at` to the end of its frame, as the frame's layout says (a recording writes a
    record a block), None where the damage hides the layout."""

    at: int
    resumed: int
    lines: int
    frame: int | None = None
    blocks: int | None = None


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
    read. `truncated`: the input ends inside a block (cut short), or with bytes in which no frame could be found.
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
        self._clean = True  # whether it is between frames
        self._careful = -1  # up to this offset, a frame at a time (a frame there cannot be decoded)
        self._dobj: Any = None  # the decoder of the frame under way, a frame at a time; None: between frames
        self._frame_at = 0  # where that frame starts
        self._frame_check = 0  # the bytes of its checksum
        self._held: list[bytes] = []  # what its blocks decoded to, held until its checksum is checked
        self._held_at = 0  # where the first block held starts
        self._held_blocks = 0  # the blocks held
        self._out = b""  # decoded bytes, given up to `_given`
        self._given = 0
        self._out_after = 0  # the stretches of `damage` before the text of `_out`
        self._lines = 0  # newlines decoded so far
        self._ended = False  # the input gave everything
        self.damage: list[Damage] = []
        self._said = 0  # stretches of `damage` before the text given so far
        self.truncated = False

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
            elif self._ended and self._held:
                self._give(b"".join(self._held))  # the end, inside a frame: its whole blocks, unchecked
                self._held.clear()
            elif got or self._ended or self.truncated:
                break  # what is here goes out now: a live pipe is not waited on with data in hand
            else:
                self._read()
        return got

    def _give(self, out: bytes) -> None:
        if out:
            self._out, self._given, self._out_after = out, 0, len(self.damage)
            self._lines += out.count(b"\n")

    def _read(self) -> None:
        data = self._raw.read(self._chunk)
        if not data:
            self._ended = True
            if not (self._frames.between_frames or self._frames.between_blocks):
                self.truncated = True  # the end, inside a block: the whole blocks before it are decoded, not it
                cuts, limit = self._cuts, self._at + len(self._data)
                whole = cuts[-1] if cuts and cuts[-1] <= limit else cuts[-2] if len(cuts) > 1 else 0
                self._data = self._data[:max(whole - self._at, self._pos)]
            return
        self._frames.feed(data)
        held = self._data[self._pos:]  # the start of a block, which is decoded whole
        self._at += self._pos
        self._data, self._pos = held + data if held else data, 0

    def _decode(self) -> bool:
        """Decode the compressed bytes held up to the last whole frame (at the end of the input: block), across
        frames at once; where that fails, again a block at a time, each frame on its own, to keep every frame before
        the bad one and find where it starts. False: no whole frame is held (nothing was done)."""
        cuts, ends, data, pos = self._cuts, self._ends, self._data, self._pos
        at = self._at + pos
        while cuts and cuts[0] <= at:
            cuts.popleft()
        while ends and ends[0] <= at:
            ends.popleft()
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
            if self._clean:  # again, a frame at a time
                self._careful = end
            else:  # inside a frame begun before: what it gave before is kept
                self._frame_at, self._frame_check = at, -1
                self._resync(at, at)
            return True
        while ends and ends[0] < end:
            ends.popleft()
        self._clean = bool(ends) and ends[0] == end
        self._pos = end - self._at
        self._give(out)
        return True

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
                blocks = self._held_blocks + 1
                self._held.clear()
                self._held_blocks = 0
                self._resync(self._held_at, self._at + end, blocks)
                return
            self._give(b"".join(self._held))  # what the frame gave before its bad block is kept
            self._held.clear()
            self._held_blocks = 0
            self._resync(at, at + 1 if at == self._frame_at else at)
            return
        self._held_blocks += 1
        if self._dobj.eof:
            end -= len(self._dobj.unused_data)
            self._dobj = None
            if self._held:
                out = b"".join([*self._held, out])
                self._held.clear()
            self._held_blocks = 0
            self._give(out)
        elif out:
            self._held.append(out)
            if self._held_blocks >= BULK_BLOCKS:  # a frame of many blocks (no recording's): given as it comes
                self._give(b"".join(self._held))
                self._held.clear()
                self._held_blocks, self._held_at = 0, self._at + end
        self._pos = end

    def _resync(self, bad: int, start: int, blocks: int | None = None) -> None:
        """After a block that cannot be decoded, at offset `bad`: go on at the next frame magic number from offset
        `start`, counting the blocks passed over as far as the frame's layout tells (unless they are counted)."""
        frame, self._dobj = self._frame_at, None
        data, skip = self._data[self._pos:], self._at + self._pos  # `data` starts at offset `skip`, at `bad`
        walked: list[int] = []
        walked_ends: list[int] = []
        walker = (None if self._frame_check < 0 or blocks is not None else ZstdFrames(bad, walked, walked_ends)
                  if bad == frame else ZstdFrames(bad, walked, walked_ends, checksum=self._frame_check))
        if walker is not None:
            walker.feed(data)
        while True:
            found = data.find(ZSTD_MAGIC, max(start - skip, 0))
            if found >= 0:
                break
            keep = min(len(data), len(ZSTD_MAGIC) - 1)  # a magic number may be cut between two reads
            skip += len(data) - keep
            data = data[len(data) - keep:]
            more = self._raw.read(self._chunk)
            if not more:
                self._ended = self.truncated = True  # no frame after it: the input ends damaged
                self._data, self._pos = b"", 0
                return
            if walker is not None and not walked_ends:
                walker.feed(more)
            data += more
        resumed = skip + found
        if walker is not None and walked_ends[:1] == [resumed]:
            blocks = sum(1 for cut in walked if cut <= resumed)
        self._data, self._pos, self._at = data, found, skip
        self.damage.append(Damage(bad, resumed, self._lines, frame, blocks))
        self._cuts.clear()
        self._ends.clear()
        self._bulk, self._clean = None, True
        self._frames = ZstdFrames(resumed, self._cuts, self._ends)
        self._frames.feed(memoryview(data)[found:])

    def close(self) -> None:
        self._raw.close()
        super().close()
