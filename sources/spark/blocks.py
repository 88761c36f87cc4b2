"""Reading event-log files in big reused blocks of whole lines, whole files or spans of them (for a worker)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from io import FileIO
from pathlib import Path

from .codecs import Decoder, codec_of, make_decoder

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
    """The lines of a file that start in [start, stop) (stop None: the end); a compressed file is read whole."""

    path: Path
    start: int = 0
    stop: int | None = None

    def whole(self) -> bool:
        return self.start == 0 and self.stop is None


def read_blocks(spans: Iterable[Span], size: int | None = None) -> Iterator[tuple[Span, bytearray, int]]:
    """(span, block, end) span after span: `block[:end]` holds complete lines (a file's last line may lack its
    newline), decompressed. The block (`size` bytes to start with, BLOCK by default) is reused: use it before
    asking for the next."""
    block = bytearray(size or BLOCK)
    for span in spans:
        with span.path.open("rb", buffering=0) as fh:
            codec = codec_of(span.path)
            if codec is not None:
                if not span.whole():
                    raise ValueError(f"{span.path}: a compressed file is read whole")
                fill = _decoded_filler(fh, make_decoder(codec))
            else:
                fill = _span_filler(fh, span.start, span.stop)
            for end in line_blocks(fill, block):
                yield span, block, end


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


def _decoded_filler(fh: FileIO, decoder: Decoder) -> Filler:
    """A `fill` that reads compressed bytes and appends what they decode to."""

    def fill(block: bytearray, filled: int) -> int:
        while data := fh.read(COMPRESSED_READ):
            out = decoder.feed(data)
            if out:
                if filled + len(out) > len(block):
                    block += bytes(filled + len(out) - len(block))
                block[filled:filled + len(out)] = out
                return len(out)
        return 0

    return fill
