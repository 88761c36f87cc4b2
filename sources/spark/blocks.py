"""Reading event-log files in big reused blocks of whole lines, whole files or spans of them (for a worker)."""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from io import FileIO
from pathlib import Path
from typing import IO, Any, cast

from .codecs import (
    ZSTD_MAGIC,
    CodecError,
    Gap,
    GapDecoder,
    Lz4BlockDecoder,
    SnappyStreamDecoder,
    _zstd_frame_end,
    codec_of,
    require,
)

#: Bytes read at a time into a reused block (a block grows to hold a longer line).
BLOCK = 1 << 20
#: Compressed bytes decoded at a time (they expand up to ~20 times).
COMPRESSED_READ = 256 << 10
#: Bytes read at a time while looking for the end of a span's last line or the start of its first.
STEP = 64 << 10

#: Appends bytes to a block after its first `filled` (growing it in place when it must); how many, 0 at the end,
#: GAP where decoding skipped damage (the partial line before it is then dropped).
Filler = Callable[[bytearray, int], int]
GAP = -1
#: How a TaskEnd line is told in text whose lines were cut (what damage lost is counted by it).
TASK_END = b'"SparkListenerTaskEnd"'


@dataclass
class Damage:
    """A stretch of a compressed file skipped as it could not be decoded: from byte `at` (where the bad block or frame
    starts) to `resumed` (where decoding went on; None: the rest of the file was not read), what was wrong, and the
    TaskEnd lines known lost with it (in what the block decoded to and in the lines it cut)."""

    path: str
    at: int
    what: str
    resumed: int | None
    lost: int = 0


@dataclass(frozen=True)
class Span:
    """Part of a file: in a plain file, the lines that start in [start, stop) (stop None: the end). In a compressed
    one, start and stop are where frames or blocks start (`codecs.cut_at`): a part that ends at `stop` decodes on
    past it through the first newline there, and the part that starts there skips through that same newline."""

    path: Path
    start: int = 0
    stop: int | None = None


def read_blocks(spans: Iterable[Span], size: int | None = None,
                damage: list[Damage] | None = None) -> Iterator[tuple[Span, bytearray, int]]:
    """(span, block, end) span after span: `block[:end]` holds complete lines (a file's last line may lack its
    newline), decompressed. The block (`size` bytes to start with, BLOCK by default) is reused: use it before
    asking for the next. A compressed file's damage: with `damage` a list, each stretch skipped is added to it (the
    lines it cut left out) and reading goes on past it, or at the next span when nothing after it can be read;
    else CodecError."""
    block = bytearray(size or BLOCK)
    for span in spans:
        with span.path.open("rb", buffering=0) as fh:
            codec = codec_of(span.path)
            gaps: list[Gap] = []

            def dropped(partial: bytearray, path: str = str(span.path), gaps: list[Gap] = gaps) -> None:
                if damage is None:
                    raise CodecError(f"{gaps[-1].what} at byte {gaps[-1].at}")
                _note(damage, path, gaps[-1], partial)

            if codec is None:
                fill = _span_filler(fh, span.start, span.stop)
            elif codec == "zstd":
                fill = _zstd_filler(fh, span.start, span.stop, gaps)
            else:
                require(codec)
                fill = _decoded_filler(fh, _gap_decoder(codec, span.start), span.start, span.stop, gaps)
            try:
                for end in line_blocks(fill, block, dropped):
                    yield span, block, end
            except CodecError as err:
                if damage is None:
                    raise CodecError(f"{span.path}: {err}") from None
                damage.append(Damage(str(span.path), span.start, str(err), None))  # its start cannot be read


def _gap_decoder(codec: str, base: int) -> GapDecoder:
    """A decoder of an lz4 or snappy file from byte `base` that goes on past damage."""
    if codec == "lz4":
        return Lz4BlockDecoder(base)
    if codec == "snappy":
        return SnappyStreamDecoder(base)
    raise CodecError(f"event logs compressed with {codec} are not supported (plain, zstd, lz4 and snappy are)")


def _note(damage: list[Damage], path: str, gap: Gap, partial: bytes | bytearray) -> None:
    """Add `gap` to `damage` (extending the stretch before it when it starts where that one was resumed), with the
    TaskEnd lines lost: in the partial line it cut, and in what its block decoded to."""
    lost = partial.count(TASK_END) + gap.decoded.count(TASK_END)
    last = damage[-1] if damage else None
    if last is not None and last.path == path and last.resumed == gap.at:
        last.resumed, last.lost = gap.resumed, last.lost + lost
    else:
        damage.append(Damage(path, gap.at, gap.what, gap.resumed, lost))


def line_blocks(fill: Filler, block: bytearray,
                dropped: Callable[[bytearray], None] | None = None) -> Iterator[int]:
    """Ends of complete lines in `block` until `fill` adds no more; then the last line unless it is blank. Where
    `fill` says GAP, the partial line kept is dropped (given to `dropped`)."""
    filled = 0
    while True:
        if filled == len(block):  # a line longer than the block
            block += bytes(len(block))
        got = fill(block, filled)
        if got == GAP:
            if dropped is not None:
                dropped(block[:filled])
            filled = 0
            continue
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


def _decoded_filler(fh: FileIO, decoder: GapDecoder, start: int = 0, stop: int | None = None,
                    gaps: list[Gap] | None = None) -> Filler:
    """A `fill` that reads compressed bytes from `start` and appends what they decode to (see Span for `stop`). At a
    bad block (added to `gaps`) it says GAP, after what came before it, and goes on at the first line that starts
    after it (or stops, when nothing after it can be read)."""
    fh.seek(start)
    skipping, done, left = start > 0, False, stop - start if stop is not None else None
    gap: Gap | None = None
    drain = False  # after a gap: decode the blocks held before reading more

    def fill(block: bytearray, filled: int) -> int:
        nonlocal skipping, done, left, gap, drain
        while not done:
            past = left is not None and left <= 0
            if gap is not None:
                told, gap = gap, None
                if past:  # the next part reads it (the line cut here is its first, which it skips)
                    break
                if gaps is not None:
                    gaps.append(told)
                done, skipping, drain = told.resumed is None, True, True  # the line it cut is lost to its end
                return GAP
            data = b"" if drain else fh.read(COMPRESSED_READ if left is None or past else min(COMPRESSED_READ, left))
            if not data and not drain:
                gap = decoder.end()
                if gap is None:
                    break
                continue
            drain = False
            if left is not None:
                left -= len(data)
            out, gap = decoder.step(data)
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


def _zstd_filler(fh: FileIO, start: int = 0, stop: int | None = None, gaps: list[Gap] | None = None) -> Filler:
    """`_decoded_filler` for zstd, decoding straight into the block (no output buffers to allocate). A frame that
    cannot be decoded is a Gap (see `_decoded_filler`): decoding goes on at the next frame."""
    require("zstd")
    import zstandard

    def reader(left: int | None) -> Any:
        return zstandard.ZstdDecompressor().stream_reader(cast(IO[bytes], _Bounded(fh, left)),
                                                           read_across_frames=True, closefd=False)

    fh.seek(start)
    current: Any = reader(None if stop is None else stop - start)
    skipping, past, done = start > 0, False, False
    base, given = start, 0  # where the current reader started, and the bytes it gave
    gap: Gap | None = None

    def fill(block: bytearray, filled: int) -> int:
        nonlocal current, skipping, past, done, base, given, gap
        while not done:
            if gap is not None:
                told, gap = gap, None
                if gaps is not None:
                    gaps.append(told)
                skipping = True
                return GAP
            if current is None:
                break
            with memoryview(block) as view, view[filled:] as room:
                try:
                    got = current.readinto(room)
                except zstandard.ZstdError as err:
                    if past:
                        break  # the next part reads it (the line cut here is its first, which it skips)
                    bad, resumed, redo = _zstd_damage(fh, base, given)
                    gap = Gap(bad, f"zstd: {err}", b"", resumed)
                    if resumed is None or (stop is not None and resumed >= stop):
                        current = None
                    else:
                        fh.seek(resumed)
                        base, given = resumed, 0
                        current = reader(None if stop is None else stop - resumed)
                    if filled + len(redo) > len(block):
                        block += bytes(filled + len(redo) - len(block))
                    block[filled:filled + len(redo)] = redo
                    got = len(redo)
                    if not got:
                        continue
                else:
                    given += got
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


def _zstd_damage(fh: FileIO, base: int, given: int) -> tuple[int, int | None, bytes]:
    """Where decoding the frames of a zstd file from `base` broke: the first frame from there that cannot be decoded,
    where the next frame starts after it (None: none does), and what the frames before it decode to past the
    `given` bytes they gave (a read that fails gives nothing of what it decoded)."""
    import mmap

    import zstandard

    with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
        pos, size, total = base, len(data), 0
        redo: list[bytes] = []
        while pos < size:
            try:
                end = _zstd_frame_end(data, pos)
                out = zstandard.ZstdDecompressor().decompressobj().decompress(data[pos:end]) if end <= size else b""
            except (CodecError, struct.error, IndexError, zstandard.ZstdError):
                end, out = -1, b""
            if end < 0 or end > size:
                found = data.find(ZSTD_MAGIC, pos + 1)
                return pos, None if found < 0 else found, b"".join(redo)
            if total + len(out) > given:
                redo.append(out[max(0, given - total):])
            total, pos = total + len(out), end
    return size, None, b"".join(redo)
