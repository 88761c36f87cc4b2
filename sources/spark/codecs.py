"""Incremental decoders for every compression Spark writes event logs with (none, zstd, lz4, snappy)."""

from __future__ import annotations

import functools
import importlib.util
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import mmap

#: File suffix -> codec name; a file without one of these suffixes is plain text.
SUFFIXES = {".zstd": "zstd", ".zst": "zstd", ".lz4": "lz4", ".snappy": "snappy", ".lzf": "lzf"}

LZ4_MAGIC = b"LZ4Block"
LZ4_HEADER = "<Biii"  # token, compressed length, decompressed length, checksum (a format: picklable)
LZ4_HEADER_LEN = len(LZ4_MAGIC) + struct.calcsize(LZ4_HEADER)  # 21
LZ4_RAW, LZ4_COMPRESSED = 0x10, 0x20
#: lz4-java's largest block (LZ4BlockOutputStream accepts block sizes up to 32 MiB).
LZ4_MAX_BLOCK = 1 << 25
#: lz4-java's checksum of a block: XXHash32 of its decompressed bytes with this seed, the top 4 bits cleared.
LZ4_SEED, LZ4_CHECK_MASK = 0x9747B28C, 0xFFFFFFF

#: Codec -> the Python package that decodes it.
MODULES = {"zstd": "zstandard", "lz4": "lz4", "snappy": "cramjam"}

SNAPPY_MAGIC = b"\x82SNAPPY\x00"
SNAPPY_HEADER_LEN = len(SNAPPY_MAGIC) + 8  # magic, version, compatible version


class CodecError(ValueError):
    """A compressed event log that cannot be decoded."""


@dataclass
class Gap:
    """A stretch of a compressed file that could not be decoded: where it starts (a byte offset of the file), what
    was wrong, what the bad block decoded to when it did (its checksum failed), and where decoding goes on after it
    (`resumed`, a byte offset; None: nothing after it can be read)."""

    at: int
    what: str
    decoded: bytes = b""
    resumed: int | None = None


class Decoder(Protocol):
    """Bytes in, as they arrive; decompressed bytes out (possibly empty until a block is complete)."""

    def feed(self, data: bytes) -> bytes: ...

    def pending(self) -> int: ...


class GapDecoder(Protocol):
    """A decoder that goes on past a bad block: `step` gives what decodes around it, and the bad block as a Gap."""

    def step(self, data: bytes) -> tuple[bytes, Gap | None]: ...

    def end(self) -> Gap | None: ...

    def pending(self) -> int: ...


@functools.cache
def xxh32() -> Callable[[bytes], int] | None:
    """lz4-java's block checksum of a block's decompressed bytes; None without the xxhash package."""
    try:
        import xxhash
    except ImportError:
        return None
    digest = xxhash.xxh32_intdigest

    def check(data: bytes) -> int:
        return digest(data, LZ4_SEED) & LZ4_CHECK_MASK

    return check


def codec_of(path: str | Path) -> str | None:
    """The codec a Spark event-log file name says (`.zstd`, `.lz4`, `.snappy`, `.lzf`); None for plain."""
    return SUFFIXES.get(Path(str(path)).suffix.lower())


def require(codec: str) -> None:
    """CodecError when the package that decodes `codec` is not installed."""
    module = MODULES.get(codec)
    if module and importlib.util.find_spec(module) is None:
        raise CodecError(f"{codec} event logs need the {module} package: pip install 'latencymap[spark]'")


def make_decoder(codec: str | None) -> Decoder:
    """A fresh incremental decoder for one file."""
    if codec is None:
        return PlainDecoder()
    require(codec)
    if codec == "zstd":
        return ZstdDecoder()
    if codec == "lz4":
        return Lz4BlockDecoder()
    if codec == "snappy":
        return SnappyStreamDecoder()
    raise CodecError(f"event logs compressed with {codec} are not supported (plain, zstd, lz4 and snappy are)")


def decompress(data: bytes, codec: str | None) -> bytes:
    """A whole file's bytes, decompressed; an incomplete last block raises CodecError."""
    dec = make_decoder(codec)
    out = dec.feed(data)
    if dec.pending():
        raise CodecError(f"{codec} stream ends inside a block ({dec.pending()} bytes left over)")
    return out


class PlainDecoder:
    """Uncompressed text: bytes pass through."""

    def feed(self, data: bytes) -> bytes:
        return data

    def pending(self) -> int:
        return 0


class ZstdDecoder:
    """Zstandard, across the many frames Spark's writer produces."""

    def __init__(self) -> None:
        import zstandard

        self._obj = zstandard.ZstdDecompressor().decompressobj(read_across_frames=True)

    def feed(self, data: bytes) -> bytes:
        import zstandard

        if not data:
            return b""
        try:
            out = self._obj.decompress(data)
        except zstandard.ZstdError as err:
            raise CodecError(f"zstd: {err}") from err
        return out

    def pending(self) -> int:
        return 0  # zstandard keeps partial frames internally; truncation only shows as missing lines


class _BlockDecoder:
    """Shared buffering of length-prefixed blocks: keeps a partial block until its bytes arrive.

    `feed` raises CodecError at a bad block; `step` stops after it and gives it as a Gap, and the next `step` goes
    on past it where the framing allows. `base`: the file offset of the first byte fed (offsets are the file's)."""

    def __init__(self, base: int = 0) -> None:
        self._buf = bytearray()
        self.base = base
        self._dead = False
        #: Where bytes that are no block start, while the next block is looked for (lz4: its magic).
        self._lost_at: int | None = None

    def feed(self, data: bytes) -> bytes:
        out, gap = self.step(data)
        if gap is not None:
            raise CodecError(f"{gap.what} at byte {gap.at}")
        if self._lost_at is not None:
            raise CodecError(f"{self._name}: no block where one should start, at byte {self._lost_at}")
        return out

    def step(self, data: bytes) -> tuple[bytes, Gap | None]:
        """What `data` (after what was kept) decodes to, up to and past the first bad block; that block as a Gap
        (None when there is none). After a Gap whose `resumed` is None nothing more is decoded."""
        if self._dead:
            return b"", None
        self._buf += data
        parts: list[bytes] = []
        try:
            pos, gap = self._parse(parts)
        except _Lost as lost:  # the framing is lost: nothing after can be read
            self._dead, pos, gap = True, len(self._buf), Gap(self.base + lost.pos, lost.what)
        del self._buf[:pos]
        self.base += pos
        return b"".join(parts), gap

    def end(self) -> Gap | None:
        """At the end of the file: the damage still being passed (no block came after it), if any."""
        if self._lost_at is None:
            return None
        lost, self._lost_at = self._lost_at, None
        return Gap(lost, f"{self._name}: a damaged block header, and no block after it")

    def pending(self) -> int:
        return 0 if self._dead else len(self._buf)

    _name = "block"

    def _parse(self, parts: list[bytes]) -> tuple[int, Gap | None]:
        raise NotImplementedError


class _Lost(Exception):
    """A block whose framing cannot be followed past (at `pos` of the buffer)."""

    def __init__(self, pos: int, what: str) -> None:
        super().__init__(what)
        self.pos, self.what = pos, what


class Lz4BlockDecoder(_BlockDecoder):
    """lz4-java's LZ4BlockOutputStream format: `LZ4Block`, token, lengths, xxhash32; then the block.

    Each block's checksum is checked (with the xxhash package); past a damaged header decoding goes on at the next
    `LZ4Block` magic."""

    _name = "lz4"

    def __init__(self, base: int = 0) -> None:
        super().__init__(base)
        self._check = xxh32()

    def _parse(self, parts: list[bytes]) -> tuple[int, Gap | None]:
        import lz4.block

        buf, pos, size, check = self._buf, 0, len(self._buf), self._check
        while True:
            if self._lost_at is not None:
                found = buf.find(LZ4_MAGIC, pos)
                if found < 0:
                    return max(pos, size - len(LZ4_MAGIC) + 1), None  # a magic may span two feeds
                lost, self._lost_at = self._lost_at, None
                return found, Gap(lost, "lz4: a damaged block header", b"", self.base + found)
            if size - pos < LZ4_HEADER_LEN:
                return pos, None
            token, clen, dlen, checksum = struct.unpack_from(LZ4_HEADER, buf, pos + 8)
            bad = ("no LZ4Block magic" if buf[pos:pos + 8] != LZ4_MAGIC else "negative block length"
                   if min(clen, dlen) < 0 else f"a block of {max(clen, dlen)} bytes (lz4-java writes at most "
                   f"{LZ4_MAX_BLOCK})" if max(clen, dlen) > LZ4_MAX_BLOCK else "")
            if bad:
                if self.base + pos == 0:
                    raise CodecError(f"lz4: {bad} at byte 0 (not an lz4-java block stream?)")
                self._lost_at, pos = self.base + pos, pos + 1
                continue
            end = pos + LZ4_HEADER_LEN + clen
            if end > size:
                return pos, None
            method, what, out = token & 0xF0, "", b""
            body = bytes(buf[pos + LZ4_HEADER_LEN:end])
            if method == LZ4_RAW:
                out = body
            elif method == LZ4_COMPRESSED:
                try:
                    out = lz4.block.decompress(body, uncompressed_size=dlen)
                except lz4.block.LZ4BlockError as err:
                    what = f"lz4: corrupt block ({err})"
            else:
                what = f"lz4: unknown block method {method:#x}"
            if not what and dlen and check is not None and check(out) != checksum & LZ4_CHECK_MASK:
                what = "lz4: a block whose checksum does not match its bytes"
            if what:
                return end, Gap(self.base + pos, what, out, self.base + end)
            parts.append(out)
            pos = end  # a 0/0 block ends one stream; another stream may follow (concatenated writers)


class SnappyStreamDecoder(_BlockDecoder):
    """snappy-java's SnappyOutputStream format: a 16-byte header, then (big-endian length, raw block)."""

    _name = "snappy"

    def _parse(self, parts: list[bytes]) -> tuple[int, Gap | None]:
        import cramjam

        buf, pos, size = self._buf, 0, len(self._buf)
        while size - pos >= 4:
            if buf[pos] == SNAPPY_MAGIC[0]:  # a header (a block length never starts with 0x82: it would be < 0)
                if size - pos < SNAPPY_HEADER_LEN:
                    return pos, None
                if buf[pos:pos + 8] != SNAPPY_MAGIC:
                    if self.base + pos == 0:
                        raise CodecError("snappy: bad stream header at byte 0 (not a snappy-java stream?)")
                    raise _Lost(pos, "snappy: a damaged block length")
                pos += SNAPPY_HEADER_LEN  # at the start, or where streams were concatenated
                continue
            (clen,) = struct.unpack_from(">i", buf, pos)
            if clen < 0 or clen > LZ4_MAX_BLOCK:
                if self.base + pos == 0:
                    raise CodecError("snappy: bad block length at byte 0")
                raise _Lost(pos, "snappy: a damaged block length")
            end = pos + 4 + clen
            if end > size:
                return pos, None
            try:
                out = bytes(cramjam.snappy.decompress_raw(bytes(buf[pos + 4:end])))
            except cramjam.DecompressionError as err:
                return end, Gap(self.base + pos, f"snappy: corrupt block ({err})", b"", self.base + end)
            parts.append(out)
            pos = end
        return pos, None


ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def cut_at(path: str | Path, codec: str, target: int) -> int | None:
    """The first byte offset at or after `target` where a frame (zstd) or block (lz4, snappy) of a compressed
    event-log file starts, from which it decodes on its own; None when there is none (or the file is odd)."""
    import mmap

    if Path(path).stat().st_size == 0:
        return None
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
        step = {"zstd": _zstd_frame_end, "lz4": _lz4_block_end, "snappy": _snappy_block_end}.get(codec)
        pos, size = 0, len(data)
        try:
            while step is not None and pos < size:
                if pos >= target and (codec != "snappy" or data[pos] != SNAPPY_MAGIC[0]):
                    return pos
                pos = step(data, pos)
        except (struct.error, IndexError, CodecError):
            return None
    return None


def ends_early(path: str | Path) -> str | None:
    """How a compressed event-log file ends inside a zstd frame or an lz4/snappy block (a log cut short), as a few
    words; None when it ends where one ends (or it is plain, or empty)."""
    import mmap

    codec = codec_of(path)
    step = {"zstd": _zstd_frame_end, "lz4": _lz4_block_end, "snappy": _snappy_block_end}.get(codec or "")
    if step is None or Path(path).stat().st_size == 0:
        return None
    unit = "frame" if codec == "zstd" else "block"
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
        pos, size = 0, len(data)
        try:
            while pos < size:
                start, pos = pos, step(data, pos)
        except (struct.error, IndexError, CodecError):
            return f"its last {codec} {unit}, at byte {pos} of {size}, is cut short"
        if pos > size:
            return f"its last {codec} {unit}, at byte {start} of {size}, is cut short"
    return None


def _lz4_block_end(data: mmap.mmap, pos: int) -> int:
    if data[pos:pos + 8] != LZ4_MAGIC:
        raise CodecError("no LZ4Block magic")
    _token, clen, _dlen, _check = struct.unpack_from(LZ4_HEADER, data, pos + 8)
    return pos + LZ4_HEADER_LEN + clen


def _snappy_block_end(data: mmap.mmap, pos: int) -> int:
    if data[pos] == SNAPPY_MAGIC[0]:
        return pos + SNAPPY_HEADER_LEN
    (clen,) = struct.unpack_from(">i", data, pos)
    if clen < 0:
        raise CodecError("bad block length")
    return pos + 4 + clen


def _zstd_frame_end(data: mmap.mmap, pos: int) -> int:
    """The end of the zstd frame (or skippable frame) at `pos` (RFC 8878, 3.1)."""
    magic = data[pos:pos + 4]
    if magic[:3] == b"\x2a\x4d\x18" and magic[3] & 0xF0 == 0x50:  # skippable frame: 0x184D2A5?
        return pos + 8 + struct.unpack_from("<I", data, pos + 4)[0]
    if magic != ZSTD_MAGIC:
        raise CodecError("no zstd frame magic")
    descriptor = data[pos + 4]
    fcs_flag, single, checksum, dict_flag = descriptor >> 6, descriptor >> 5 & 1, descriptor >> 2 & 1, descriptor & 3
    header = 1 + (0 if single else 1) + (0, 1, 2, 4)[dict_flag] + ((1 if single else 0), 2, 4, 8)[fcs_flag]
    pos += 4 + header
    while True:
        if pos + 3 > len(data):
            raise CodecError("zstd frame cut short")
        block = int.from_bytes(data[pos:pos + 3], "little")
        last, kind, size = block & 1, block >> 1 & 3, block >> 3
        if kind == 3:
            raise CodecError("reserved zstd block type")
        pos += 3 + (1 if kind == 1 else size)
        if last:
            return pos + (4 if checksum else 0)
