"""Incremental decoders for every compression Spark writes event logs with (none, zstd, lz4, snappy)."""

from __future__ import annotations

import importlib.util
import struct
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

#: Codec -> the Python package that decodes it.
MODULES = {"zstd": "zstandard", "lz4": "lz4", "snappy": "cramjam"}

SNAPPY_MAGIC = b"\x82SNAPPY\x00"
SNAPPY_HEADER_LEN = len(SNAPPY_MAGIC) + 8  # magic, version, compatible version


class CodecError(ValueError):
    """A compressed event log that cannot be decoded."""


class Decoder(Protocol):
    """Bytes in, as they arrive; decompressed bytes out (possibly empty until a block is complete)."""

    def feed(self, data: bytes) -> bytes: ...

    def pending(self) -> int: ...


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
    """Shared buffering of length-prefixed blocks: keeps a partial block until its bytes arrive."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> bytes:
        self._buf += data
        parts: list[bytes] = []
        pos = self._parse(parts)
        del self._buf[:pos]
        return b"".join(parts)

    def pending(self) -> int:
        return len(self._buf)

    def _parse(self, parts: list[bytes]) -> int:
        raise NotImplementedError


class Lz4BlockDecoder(_BlockDecoder):
    """lz4-java's LZ4BlockOutputStream format: `LZ4Block`, token, lengths, xxhash32; then the block."""

    def _parse(self, parts: list[bytes]) -> int:
        import lz4.block

        buf, pos, size = self._buf, 0, len(self._buf)
        while size - pos >= LZ4_HEADER_LEN:
            if buf[pos:pos + 8] != LZ4_MAGIC:
                raise CodecError(f"lz4: no LZ4Block magic at byte {pos} (not an lz4-java block stream?)")
            token, clen, dlen, _check = struct.unpack_from(LZ4_HEADER, buf, pos + 8)
            if clen < 0 or dlen < 0:
                raise CodecError(f"lz4: negative block length at byte {pos}")
            if max(clen, dlen) > LZ4_MAX_BLOCK:
                raise CodecError(f"lz4: a block of {max(clen, dlen)} bytes at byte {pos} (lz4-java writes at most "
                                 f"{LZ4_MAX_BLOCK})")
            end = pos + LZ4_HEADER_LEN + clen
            if end > size:
                break
            body = bytes(buf[pos + LZ4_HEADER_LEN:end])
            method = token & 0xF0
            if method == LZ4_RAW:
                parts.append(body)
            elif method == LZ4_COMPRESSED:
                try:
                    parts.append(lz4.block.decompress(body, uncompressed_size=dlen))
                except lz4.block.LZ4BlockError as err:
                    raise CodecError(f"lz4: corrupt block at byte {pos}: {err}") from None
            else:
                raise CodecError(f"lz4: unknown block method {method:#x} at byte {pos}")
            pos = end  # a 0/0 block ends one stream; another stream may follow (concatenated writers)
        return pos


class SnappyStreamDecoder(_BlockDecoder):
    """snappy-java's SnappyOutputStream format: a 16-byte header, then (big-endian length, raw block)."""

    def _parse(self, parts: list[bytes]) -> int:
        import cramjam

        buf, pos, size = self._buf, 0, len(self._buf)
        while size - pos >= 4:
            if buf[pos] == SNAPPY_MAGIC[0]:  # a header (a block length never starts with 0x82: it would be < 0)
                if size - pos < SNAPPY_HEADER_LEN:
                    return pos
                if buf[pos:pos + 8] != SNAPPY_MAGIC:
                    raise CodecError(f"snappy: bad stream header at byte {pos} (not a snappy-java stream?)")
                pos += SNAPPY_HEADER_LEN  # at the start, or where streams were concatenated
                continue
            (clen,) = struct.unpack_from(">i", buf, pos)
            if clen < 0:
                raise CodecError(f"snappy: bad block length at byte {pos}")
            end = pos + 4 + clen
            if end > size:
                return pos
            try:
                parts.append(bytes(cramjam.snappy.decompress_raw(bytes(buf[pos + 4:end]))))
            except cramjam.DecompressionError as err:
                raise CodecError(f"snappy: corrupt block at byte {pos}: {err}") from None
            pos = end
        return pos


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
