"""Follow the frames of a zstd stream as its compressed bytes go by, to tell whether it ends between two frames.

The zstd library reads across frames and, at the end of its input, says nothing of a frame left unfinished: the
records of a recording (one frame per record) cut in a later frame are lost without a word. Following the frame
layout (RFC 8878: frame headers, block headers, checksums, skippable frames) costs a few steps per frame (about
0.5 µs), and tells a cut (or a tail that is no frame) from a file that ends where a frame ends.
"""

from __future__ import annotations

from typing import IO, Any

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
#: Skippable frames: magic 0x184D2A50 to 0x184D2A5F, little-endian, then a 4-byte size and that many bytes.
_SKIPPABLE_TAIL = b"\x2a\x4d\x18"
#: Bytes of the frame content size field for each Frame_Content_Size_flag (flag 0: 1 byte if single segment).
_FCS_SIZE = (0, 2, 4, 8)
_DICT_ID_SIZE = (0, 1, 2, 4)
#: What comes next: a frame's magic number (between frames), a block header, or bytes that are no zstd frame.
_FRAME, _BLOCK, _NOT_A_FRAME = range(3)


class ZstdFrames:
    """The frame layout of the bytes fed so far: `between_frames` when they end where a frame ends (or are none)."""

    def __init__(self) -> None:
        self._state = _FRAME
        self._carry = b""  # the start of a header that the bytes fed so far end in
        self._skip = 0  # bytes to pass over (content) before the next header
        self._checksum = 0  # the bytes of the current frame's checksum, after its last block

    @property
    def between_frames(self) -> bool:
        return self._state == _FRAME and not self._carry and not self._skip

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        if self._state == _NOT_A_FRAME or not data:
            return
        buf = self._carry + bytes(data) if self._carry else data
        pos, size, state, checksum = self._skip, len(buf), self._state, self._checksum
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
                    state = _BLOCK
                elif magic[1:] == _SKIPPABLE_TAIL and magic[0] & 0xF0 == 0x50:
                    if pos + 8 > size:
                        break
                    pos += 8 + int.from_bytes(buf[pos + 4:pos + 8], "little")
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
                if header & 1:
                    pos += checksum
                    state = _FRAME
        self._state, self._checksum = state, checksum
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
