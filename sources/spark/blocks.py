"""Reading event-log files in big reused blocks of whole lines, whole files or spans of them (for a worker)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from io import FileIO
from pathlib import Path
from typing import IO, Any, cast

from .codecs import CodecError, Decoder, codec_of, make_decoder, require

#: Bytes read at a time into a reused block (a block grows to hold a longer line).
BLOCK = 1 << 20
#: Compressed bytes decoded at a time (they expand up to ~20 times).
COMPRESSED_READ = 256 << 10
#: Bytes read at a time while looking for the end of a span's last line or the start of its first.
STEP = 64 << 10

#: Appends bytes to a block after its first `filled` (growing it in place when it must); how many, 0 at the end.
Filler = Callable[[bytearray, int], int]


@dataclass(frozen=True)
class Span:
    """Part of a file: in a plain file, the lines that start in [start, stop) (stop None: the end). In a compressed
    one, start and stop are where frames or blocks start (`codecs.cut_at`): a part that ends at `stop` decodes on
    past it through the first newline there, and the part that starts there skips through that same newline."""

    path: Path
    start: int = 0
    stop: int | None = None


def read_blocks(spans: Iterable[Span], size: int | None = None) -> Iterator[tuple[Span, bytearray, int]]:
    """(span, block, end) span after span: `block[:end]` holds complete lines (a file's last line may lack its
    newline), decompressed. The block (`size` bytes to start with, BLOCK by default) is reused: use it before
    asking for the next."""
    block = bytearray(size or BLOCK)
    for span in spans:
        with span.path.open("rb", buffering=0) as fh:
            codec = codec_of(span.path)
            try:
                if codec is None:
                    fill = _span_filler(fh, span.start, span.stop)
                elif codec == "zstd":
                    fill = _zstd_filler(fh, span.start, span.stop)
                else:
                    fill = _decoded_filler(fh, make_decoder(codec), span.start, span.stop)
                for end in line_blocks(fill, block):
                    yield span, block, end
            except CodecError as err:
                raise CodecError(f"{span.path}: {err}") from None


def line_blocks(fill: Filler, block: bytearray) -> Iterator[int]:
    """Ends of complete lines in `block` until `fill` adds no more; then the last line unless it is blank."""
    filled = 0
    while True:
        if filled == len(block):  # a line longer than the block
            block += bytes(len(block))
        got = fill(block, filled)
        if not got:
            break
        end = block.rfind(b"\n", filled, filled + got) + 1
        filled += got
        if end:
            yield end
            block[:filled - end] = block[end:filled]
            filled -= end
    if block[:filled].strip():
        yield filled


def _first_line_start(fh: FileIO, start: int) -> int:
    """Where the first line starting at or after `start` starts (the file's size when none does)."""
    if start == 0:
        return 0
    fh.seek(start - 1)
    pos = start - 1
    while piece := fh.read(STEP):
        found = piece.find(b"\n")
        if found >= 0:
            return pos + found + 1
        pos += len(piece)
    return pos


def _span_filler(fh: FileIO, start: int, stop: int | None) -> Filler:
    """A `fill` reading the lines that start in [start, stop) of a plain file straight into the block."""
    pos = _first_line_start(fh, start)
    fh.seek(pos)
    done = stop is not None and pos >= stop

    def fill(block: bytearray, filled: int) -> int:
        nonlocal pos, done
        if done:
            return 0
        room = len(block) - filled
        past = stop is not None and pos >= stop  # finishing the line that started before stop
        want = min(room, STEP) if past else room if stop is None else min(room, stop - pos)
        with memoryview(block) as view, view[filled:filled + want] as into:
            got = fh.readinto(into) or 0
        if past:
            found = block.find(b"\n", filled, filled + got)
            if found >= 0:
                got, done = found + 1 - filled, True
        elif stop is not None and pos + got == stop and got and block[filled + got - 1] == 0x0A:
            done = True
        pos += got
        return got

    return fill


def _decoded_filler(fh: FileIO, decoder: Decoder, start: int = 0, stop: int | None = None) -> Filler:
    """A `fill` that reads compressed bytes from `start` and appends what they decode to (see Span for `stop`)."""
    fh.seek(start)
    skipping, done, left = start > 0, False, stop - start if stop is not None else None

    def fill(block: bytearray, filled: int) -> int:
        nonlocal skipping, done, left
        while not done:
            past = left is not None and left <= 0
            data = fh.read(COMPRESSED_READ if left is None or past else min(COMPRESSED_READ, left))
            if not data:
                break
            if left is not None:
                left -= len(data)
            out = decoder.feed(data)
            if skipping and out:
                cut = out.find(b"\n") + 1
                out, skipping = (out[cut:], False) if cut else (b"", True)
            if past and out:
                cut = out.find(b"\n") + 1
                out, done = (out[:cut], True) if cut else (out, False)
            if out:
                if filled + len(out) > len(block):
                    block += bytes(filled + len(out) - len(block))
                block[filled:filled + len(out)] = out
                return len(out)
        done = True
        return 0

    return fill


class _Bounded:
    """The next `left` bytes of a file (all of them when None), for a decompressor that reads by itself."""

    def __init__(self, fh: FileIO, left: int | None) -> None:
        self.fh, self.left = fh, left

    def read(self, size: int = -1) -> bytes:
        if self.left is None:
            return self.fh.read(size) or b""
        data = self.fh.read(self.left if size < 0 else min(size, self.left)) or b""
        self.left -= len(data)
        return data


def _zstd_filler(fh: FileIO, start: int = 0, stop: int | None = None) -> Filler:
    """`_decoded_filler` for zstd, decoding straight into the block (no output buffers to allocate)."""
    require("zstd")
    import zstandard

    def reader(left: int | None) -> Any:
        return zstandard.ZstdDecompressor().stream_reader(cast(IO[bytes], _Bounded(fh, left)),
                                                           read_across_frames=True, closefd=False)

    fh.seek(start)
    current = reader(None if stop is None else stop - start)
    skipping, past, done = start > 0, False, False

    def fill(block: bytearray, filled: int) -> int:
        nonlocal current, skipping, past, done
        while not done:
            with memoryview(block) as view, view[filled:] as room:
                try:
                    got = current.readinto(room)
                except zstandard.ZstdError as err:
                    raise CodecError(f"zstd: {err}") from None
            if not got:
                if stop is None or past:
                    break
                past, current = True, reader(None)
                continue
            if skipping:
                cut = block.find(b"\n", filled, filled + got) + 1
                if not cut:
                    continue
                skipping, got = False, filled + got - cut
                block[filled:filled + got] = block[cut:cut + got]
            if past and got:
                cut = block.find(b"\n", filled, filled + got) + 1
                if cut:
                    got, done = cut - filled, True
            if got:
                return got
        done = True
        return 0

    return fill
