"""Follow the frames of a zstd stream as its compressed bytes go by, to tell whether it ends between two frames.

The zstd library reads across frames and, at the end of its input, says nothing of a frame left unfinished: the
records of a recording cut in a later frame are lost without a word. Following the frame layout (RFC 8878: frame
headers, block headers, checksums, skippable frames) costs a few steps per block (about 0.5 µs), and tells a cut
inside a block (or a tail that is no frame) from a file that ends where a frame ends, or between two whole blocks of
a frame its writer has not finished yet (a recording, whose every record is a block flushed as it is written, read
while it is written or after its recorder was killed).

Where damage sends that walk astray (bytes inserted in a block, a block header changed), the blocks after the damage
are still whole: each of them, walked from its own header, leads to the frame's end (its last block, then its
checksum). Every offset of the damaged stretch is tried as a block header at once (NumPy, pointer doubling), and the
first one from which the headers lead exactly to the frame's end starts the whole blocks after the damage.
"""

from __future__ import annotations

from collections.abc import MutableSequence
from dataclasses import dataclass

import numpy as np

#: A zstd frame's magic number (0xFD2FB528, little-endian).
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

#: The largest a block is (its content, or for an RLE block what it decodes to): RFC 8878's Block_Maximum_Size.
BLOCK_MAX = 128 * 1024
#: A damaged stretch longer than this is not searched for whole blocks (a frame of a recording is far smaller).
SEARCHED = 1024 * 1024
#: Offsets inside a damaged block (raw text literals, mostly) that lead to a frame's end as its whole blocks do: at
#: most this many more blocks counted, before these.
_ASTRAY_BLOCKS = 3
#: Whole blocks, holding something, that lead to a frame's end: as many as this are no bytes that pass for blocks by
#: chance (two do, once in some 10,000 cuts of a recording's first block).
_ENOUGH_BLOCKS = 3
#: Bytes of the frame content size field for each Frame_Content_Size_flag (flag 0: 1 byte if single segment).
_FCS_SIZE = (0, 2, 4, 8)
_DICT_ID_SIZE = (0, 1, 2, 4)
#: Skippable frames: magic 0x184D2A50 to 0x184D2A5F, little-endian, then a 4-byte size and that many bytes.
_SKIPPABLE_TAIL = b"\x2a\x4d\x18"
#: What comes next: a frame's magic number (between frames), a block header, or bytes that are no zstd frame.
_FRAME, _BLOCK, _NOT_A_FRAME = range(3)


def frame_header_size(descriptor: int) -> int:
    """The bytes of a frame header (from its magic number on) whose Frame_Header_Descriptor is `descriptor`."""
    single_segment = descriptor & 0x20
    return (5 + (0 if single_segment else 1) + _DICT_ID_SIZE[descriptor & 0x03]
            + (_FCS_SIZE[descriptor >> 6] or (1 if single_segment else 0)))


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
    def stray(self) -> int:
        """The bytes fed last, between frames, that are too few for a frame's header and start none: how many (a
        line of text appended to a zstd file); 0 when there are none, or they may be a frame's start cut short."""
        carry = self._carry
        if self._state != _FRAME or self._skip or not carry:
            return 0
        head = carry[:4]
        zstd = ZSTD_MAGIC.startswith(head)
        skippable = head[0] & 0xF0 == 0x50 and _SKIPPABLE_TAIL.startswith(head[1:])
        return 0 if zstd or skippable else len(carry)

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
                    pos += frame_header_size(descriptor)
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
                if kind == 3 or header >> 3 > BLOCK_MAX:  # no block (bytes inserted before it: damage)
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


@dataclass(slots=True)
class Tail:
    """The whole blocks that end a stretch of a frame: from offset `first` of the stretch, `blocks` of them holding
    something (the empty last block a finished recording ends with holds nothing)."""

    first: int
    blocks: int


def whole_tail(data: bytes | memoryview, check: int, *, open_end: bool = False) -> Tail | None:
    """The first offset of `data` from which block headers lead exactly to its end as a frame ends: a last block, then
    the frame's checksum (`check` bytes); with `open_end`, a block that is not the last may end `data` too (the
    frame was not finished: a recording whose recorder was killed). None: from no offset (or `data` is too long).

    A block header of three zero bytes (an empty block that is not the last, which no zstd writer writes) leads
    nowhere: a run of zero bytes is no chain of blocks. Nor does a compressed block whose literals and sequences
    section headers do not fit it (most offsets inside other blocks).
    """
    size = len(data)
    if size < 3 or size > SEARCHED:
        return None
    raw = np.frombuffer(data, dtype=np.uint8).astype(np.int32)
    n = size - 2  # the offsets with a whole header
    header = raw[:n] | raw[1:n + 1] << 8 | raw[2:n + 2] << 16
    kind, content, last = (header >> 1) & 3, header >> 3, (header & 1) == 1
    after = np.arange(3, n + 3, dtype=np.int32) + np.where(kind == 1, 1, content)  # where the block ends
    valid = (kind != 3) & (content <= BLOCK_MAX) & (header != 0) & ((kind != 2) | _sections_fit(raw, n, content))
    ends = last & (after + check == size)
    if open_end:
        ends |= ~last & (after == size)
    done, astray = n, n + 1  # two more offsets: led to the end, led nowhere; each leads to itself
    step = np.full(n + 2, astray, dtype=np.int32)
    step[:n] = np.where(valid & ends, done, np.where(valid & ~last & (after < n), after, astray))
    step[done] = done
    held = np.zeros(n + 2, dtype=np.int32)
    held[:n] = valid & (content > 0)  # the blocks that hold something (an RLE block: what it decodes to), counted
    while (step[:n] < n).any():  # each turn doubles how far `step` leads: at most log2(n) turns
        held += held[step]
        step = step[step]
    led = np.flatnonzero(step[:n] == done)
    if not led.size:
        return None
    first = int(led[0])
    return Tail(first, int(held[first]))


def _sections_fit(raw: np.ndarray, n: int, content: np.ndarray) -> np.ndarray:
    """For each offset of `raw` read as a compressed block of `content` bytes: whether its literals section (RFC
    8878, 3.1.1.3.1) and its sequences section header (3.1.1.3.2.1) fit it: a block without sequences ends with
    their count, 0; otherwise the count and a byte of modes whose two low bits are reserved (0) follow the literals.
    """
    at = np.arange(3, n + 3, dtype=np.int64)  # where each block's content starts

    def byte(offset: np.ndarray) -> np.ndarray:  # 0 past the end
        return np.where(offset < len(raw), raw[np.minimum(offset, len(raw) - 1)], 0).astype(np.int64)

    b0, b1, b2, b3, b4 = (byte(at + k) for k in range(5))
    kind, form = b0 & 3, (b0 >> 2) & 3
    plain_header = np.where(form == 1, 2, np.where(form == 3, 3, 1))  # raw or RLE literals
    plain_size = np.where(form == 1, (b0 >> 4) + (b1 << 4),
                          np.where(form == 3, (b0 >> 4) + (b1 << 4) + (b2 << 12), b0 >> 3))
    plain = plain_header + np.where(kind == 0, plain_size, 1)
    width = np.where(form < 2, 10, np.where(form == 2, 14, 18))  # compressed literals: two sizes of this many bits
    sizes = (b0 >> 4) | (b1 << 4) | (b2 << 12) | (b3 << 20) | (b4 << 28)
    packed = np.where(form < 2, 3, form + 2) + ((sizes >> width) & ((1 << width) - 1))
    literals = np.where(kind < 2, plain, packed)
    count = byte(at + literals)
    header = np.where(count == 0, 1, np.where(count < 128, 2, np.where(count < 255, 3, 4)))
    modes = byte(at + literals + header - 1)
    return np.where(count == 0, literals + 1 == content, (literals + header <= content) & (modes & 3 == 0))


def no_frame(stretch: bytes, open_end: bool = False) -> bool:
    """Whether `stretch`, where a frame should start, is bytes that are no zstd data: no frame's magic number, and no
    blocks that end a frame whose magic number was damaged (_ENOUGH_BLOCKS of them, or some right after its header)."""
    if stretch[:4] == ZSTD_MAGIC:
        return False
    descriptor = stretch[4] if len(stretch) > 4 else 0  # the checksum flag in it may be damaged too: either size
    tail = _tail(stretch, (4, 0) if descriptor & 0x04 else (0, 4), open_end)
    return tail is None or (tail.blocks < _ENOUGH_BLOCKS and tail.first != frame_header_size(descriptor))


def magic_damaged(stretch: bytes, open_end: bool = False) -> bool:
    """Whether `stretch` is a frame whose magic number is damaged: a frame header, then whole blocks to its end."""
    if len(stretch) < 5 or stretch[:4] == ZSTD_MAGIC:
        return False
    tail = _tail(stretch, (4, 0) if stretch[4] & 0x04 else (0, 4), open_end)
    return tail is not None and tail.first == frame_header_size(stretch[4])


def ends_a_frame(data: bytes) -> bool:
    """Whether whole blocks lead to the end of `data` as a frame ends (_ENOUGH_BLOCKS of them)."""
    tail = _tail(data, (4, 0), False)
    return tail is not None and tail.blocks >= _ENOUGH_BLOCKS


def _tail(stretch: bytes, checks: tuple[int, ...], open_end: bool) -> Tail | None:
    """The whole blocks that end `stretch`, a frame whose checksum is one of `checks` long (the first, if it leads
    to as many blocks: with the wrong one, a few bytes at the end may pass for a block)."""
    tails = [tail for check in checks if (tail := whole_tail(stretch, check, open_end=open_end)) is not None]
    return max(tails, key=lambda tail: tail.blocks, default=None)


def blocks_lost(stretch: bytes, check: int | None, kept: int, alike: int, *, open_end: bool = False) -> int | None:
    """The blocks that hold something lost in `stretch`, from a bad block (`check`: the bytes of its frame's checksum,
    -1 unknown) or, `check` None, from the start of a frame, to the end of that frame: the whole blocks that end it,
    from the first offset whose block headers lead there; where the damage hides what lies before them (bytes
    inserted, a block header changed), `alike` (the blocks of a whole frame of the same input, which in a recording
    holds as many: 0 unknown) less the `kept` ones before the damage (and, where more blocks are whole than its frame
    holds, the next frame too, whose magic number the damage hid), else one more, the damaged block. None: neither
    tells.
    """
    header, checks = 0, (check,) if check is not None and check >= 0 else (4, 0)
    if check is None:
        descriptor = stretch[4] if len(stretch) > 4 else 0
        header, checks = frame_header_size(descriptor), (4, 0) if descriptor & 0x04 else (0, 4)
    tail = _tail(stretch, checks, open_end)
    whole = tail.blocks if tail is not None else 0
    if tail is not None and tail.first in (0, header):  # every block of it is whole: only decoding failed
        return whole
    if alike:  # more than a few blocks too many (offsets inside the damaged block may lead to the end too): the
        # damage runs on into the next frame, hiding its magic number, and those blocks are that frame's
        return 2 * alike - kept if kept + whole - alike > _ASTRAY_BLOCKS else alike - kept
    return whole + 1 if tail is not None else None
