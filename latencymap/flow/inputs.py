"""Open an input (file or stdin), pick its text format, and read it into items."""

from __future__ import annotations

import codecs
import functools
import io
import itertools
import os
import re
import stat
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from latencymap.core.errors import InputError
from latencymap.core.lean import dataclass
from latencymap.core.lines import text_lines
from latencymap.core.model import Item, Notice, one_by_one
from latencymap.core.sanitize import excerpt
from latencymap.core.units import plural
from latencymap.plugins import DataMarker, Registry, TextFormat

if TYPE_CHECKING:
    from latencymap.flow.zstd_frames import Damage

SNIFF_LINES = 200
#: Longer lines are cut: a hostile or broken input cannot exhaust memory one line at a time.
MAX_LINE = 64 * 1024
#: A line running this long without a break (or 4 lines at the longest a format reads) ends its input: no text.
ENDLESS_LINE = 64 * 1024 * 1024
#: Bytes asked of the input at a time; a pipe gives what it has.
CHUNK = 512 * 1024
#: The first bytes of a zstd frame (flow.zstd_layout's): its frame reader is imported only for such an input.
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
#: What `-` reads when no stream is passed, instead of sys.stdin (the TUI keeps fd 0 for the terminal).
_stdin_data: IO[bytes] | None = None


def set_stdin_data(binary: IO[bytes] | None) -> None:
    """Make `-` read `binary` (a dup of the original stdin) instead of sys.stdin; None undoes it."""
    global _stdin_data
    _stdin_data = binary


#: Why nothing could be read from a compressed input cut short, whichever the compressor.
NOTHING_DECOMPRESSED = "the compressed data ends early (cut short or corrupt): nothing could be decompressed"


@dataclass(slots=True)
class CutShort(Notice):
    """The note that a compressed input ends early (skipping nothing): an input that gave no record before it is
    said to be cut short, not unreadable for another reason."""


@dataclass(slots=True)
class Skipped(CutShort):
    """The note that a stretch of compressed data could not be decoded and was skipped (a zstd frame, or the rest of
    one: records of a recording); what came before and after it is read. It counts the records it may have held."""


class _Decompressing(io.RawIOBase):
    """A decompressed input (gzip, bzip2, xz); a truncated or corrupt tail ends the stream instead of raising."""

    def __init__(self, raw: IO[bytes], reader: Any, errors: tuple[type[Exception], ...]) -> None:
        self._raw, self._reader, self._errors = raw, reader, errors
        self.truncated = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.truncated:
            return 0
        try:  # one piece at a time: an error then loses only the piece it is in
            data = self._reader.read1(len(buffer))
        except self._errors:
            self.truncated = True
            return 0
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        self._reader.close()
        self._raw.close()
        super().close()


def _decompressing(raw: IO[bytes], magic: bytes) -> io.RawIOBase | None:
    """A reader of `raw` decompressed, when `magic` (its first bytes) names zstd, gzip, bzip2 or xz."""
    if magic[:4] == ZSTD_MAGIC:
        from latencymap.flow.zstd_frames import FrameDecoder

        return FrameDecoder(raw, CHUNK)  # frame by frame: a corrupt one (records of a recording) is skipped
    if magic[:2] == b"\x1f\x8b":
        import gzip
        import zlib

        return _Decompressing(raw, gzip.GzipFile(fileobj=raw, mode="rb"), (EOFError, OSError, zlib.error))
    if magic[:3] == b"BZh":
        import bz2

        return _Decompressing(raw, bz2.BZ2File(raw), (EOFError, OSError))
    if magic[:6] == b"\xfd7zXZ\x00":
        import lzma

        return _Decompressing(raw, lzma.LZMAFile(raw), (EOFError, OSError, lzma.LZMAError))
    return None


def _binary(binary: IO[bytes]) -> IO[bytes]:
    peek = getattr(binary, "peek", None)
    decompressed = _decompressing(binary, peek(6)[:6]) if peek is not None else None
    return binary if decompressed is None else io.BufferedReader(decompressed)


def _cut(binary: IO[bytes]) -> bool:
    """Whether `binary` is a compressed input whose compressed data ended early (as far as it was read)."""
    return bool(getattr(getattr(binary, "raw", None), "truncated", False))


def _cut_or_damaged(binary: IO[bytes]) -> bool:
    """Whether `binary` is a compressed input cut short, or (zstd) with a stretch it could not decode."""
    damage = getattr(getattr(binary, "raw", None), "damage", None) or ()
    return _cut(binary) or any(not stretch.junk for stretch in damage)


#: Why `-` cannot be read when the process was started with fd 0 closed (`<&-`).
STDIN_CLOSED = "<stdin>: not open (standard input is closed): name INPUT files, or pipe records in"


def _stdin_binary() -> IO[bytes]:
    """A reader of fd 0 of its own: a thread blocked in it (read ahead of the view) cannot abort the
    interpreter's shutdown, as one blocked in `sys.stdin`'s reader does."""
    if sys.stdin is None:  # started with fd 0 closed
        raise InputError(STDIN_CLOSED)
    try:
        return os.fdopen(os.dup(sys.stdin.fileno()), "rb")
    except (AttributeError, OSError, ValueError):
        return sys.stdin.buffer


def at_rest(path: str, stdin: IO[bytes] | None = None) -> bool:
    """Whether input `path` is all there when it is read (a regular file, a directory a format reads), so that
    reading ahead of what arrived waits for nothing; not a pipe, a FIFO, a terminal or a socket, where a live
    producer's records come one by one. `-` is `stdin` (one given in memory is at rest), else the process's."""
    if path not in ("-", ""):
        try:
            mode = os.stat(path).st_mode
        except OSError:
            return False
        return stat.S_ISREG(mode) or stat.S_ISDIR(mode)
    stream: Any = stdin if stdin is not None else _stdin_data if _stdin_data is not None else sys.stdin
    try:
        return stat.S_ISREG(os.fstat(stream.fileno()).st_mode)
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return stdin is not None  # an in-memory stream has no descriptor, and all of it is there


def open_raw(path: str, stdin: IO[bytes] | None = None) -> tuple[IO[bytes], str]:
    """The bytes of input `path` as they are (not decompressed), and its display name; `-` is `stdin`, else the
    process's. A given `stdin` is the bytes of a named `path` too (one read once elsewhere: `flow.spool`)."""
    if path in ("-", "") or stdin is not None:
        if stdin is None:
            stdin = _stdin_data if _stdin_data is not None else _stdin_binary()
        if not hasattr(stdin, "peek"):
            stdin = io.BufferedReader(stdin)  # type: ignore[type-var]
        return stdin, "<stdin>" if path in ("-", "") else path
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{path}: is a directory (expected a file of histograms)")
    try:
        return p.open("rb"), path
    except OSError as err:
        raise InputError(f"{path}: {err.strerror}") from None


def _open_binary(path: str, stdin: IO[bytes] | None) -> tuple[IO[bytes], str]:
    binary, name = open_raw(path, stdin)
    return _binary(binary), name


def open_text(path: str, stdin: IO[bytes] | None = None) -> tuple[IO[str], str]:
    """A text stream (UTF-8, invalid bytes replaced, zstd/gzip/bzip2/xz decoded) and its display name; `-` is stdin."""
    binary, name = _open_binary(path, stdin)
    return io.TextIOWrapper(binary, encoding="utf-8", errors="replace", newline=None), name


class EndlessLine(ValueError):
    """A line that runs past `endless_line` characters without a break: no text (/dev/zero, a binary stream), which
    would otherwise be read to its end, if it has one, without a word."""


def endless_line(cap: int) -> int:
    """How long a line may run before its input is taken for no text: ENDLESS_LINE, or 4 lines at the cap."""
    return max(ENDLESS_LINE, 4 * cap)


def text_chunks(binary: IO[bytes], size: int = CHUNK, max_line: list[int] | None = None) -> Iterator[str]:
    """Decoded text in pieces of whole lines, as soon as they arrive (a live pipe is not held back).

    Invalid UTF-8 is replaced, newlines are normalised to `\\n`, and a line longer than MAX_LINE
    (or `max_line[0]`, which the caller may change between pieces) keeps its first MAX_LINE characters.
    The last piece may lack a final newline. A line running past `endless_line` raises EndlessLine.
    """
    limit = max_line if max_line is not None else [MAX_LINE]
    read = getattr(binary, "read1", binary.read)
    data = read(size)
    while data and len(data) < 3 and (codecs.BOM_UTF8.startswith(data) or data in (b"\xff", b"\xfe")):
        more = read(size)  # a pipe gave a piece of what may be a byte order mark: decide on the whole of it
        if not more:
            break
        data += more
    decoder = codecs.getincrementaldecoder(input_encoding(data))(errors="replace")
    carry = ""
    dropping = False  # inside the rest of an over-long line
    running = 0  # characters of that line so far
    while True:
        cap = limit[0]
        text = carry + decoder.decode(data, final=not data)
        carry = ""
        if data and text.endswith("\r"):  # maybe half of a CRLF
            text, carry = text[:-1], "\r"
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        if dropping:
            nl = text.find("\n")
            running += len(text) if nl < 0 else nl
            if running > endless_line(cap):
                raise EndlessLine(f"no line break in {running:,} characters (not text: a device such as /dev/zero, "
                                  "binary data)")
            text, dropping = ("", True) if nl < 0 else (text[nl + 1:], False)
        cut = text.rfind("\n") + 1
        if cut:
            head = text[:cut]
            yield _cap(head, cap) if _has_long_line(head, cap) else head
        rest = text[cut:]
        if len(rest) > cap:
            yield rest[:cap] + "\n"
            rest, dropping, running = "", True, len(rest)
        carry = rest + carry
        if not data:
            if carry:
                yield carry
            return
        data = read(size)


def input_encoding(head: bytes) -> str:
    """UTF-16 when the input starts with its byte order mark (a Windows shell's `>`), else UTF-8, a UTF-8 byte order
    mark dropped (an editor's): either would otherwise hide the first line, a record's `<begin record>`."""
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    return "utf-8-sig"


def _has_long_line(text: str, limit: int = MAX_LINE) -> bool:
    """True when a line of `text` is longer than `limit`: such a line covers a multiple of `limit`."""
    for probe in range(limit, len(text), limit):
        if text.find("\n", probe) - text.rfind("\n", 0, probe) > limit + 1 or text.find("\n", probe) < 0:
            return True
    return False


def _cap(text: str, limit: int = MAX_LINE) -> str:
    return "\n".join(line[:limit] for line in text.split("\n"))


def choose_format(registry: Registry, head: list[str], name: str, forced: str | None) -> type[TextFormat]:
    """The format named by `forced`, else the highest-priority one whose sniff accepts `head`."""
    if forced:
        try:
            return registry.formats[forced]
        except KeyError:
            raise InputError(f"unknown format {forced!r}; supported: {', '.join(sorted(registry.formats))}") from None
    fmt = sniffed_format(registry, head)
    if fmt is not None:
        return fmt
    utf16 = utf16_without_bom("".join(head))
    why = f": {utf16}" if utf16 else ""
    listing = "\n".join(f"  {n:14s} {f.summary}" for n, f in sorted(registry.formats.items()))
    raise InputError(f"{name}: unrecognised input format{why}. Supported formats (choose one with --input-format "
                     f"NAME, which every command that reads inputs takes):\n{listing}")


def sniffed_format(registry: Registry, head: list[str]) -> type[TextFormat] | None:
    """The highest-priority format whose sniff accepts `head`, if any."""
    for fmt in registry.formats.by_priority():
        try:
            if fmt.sniff(head):
                return fmt
        except Exception:
            continue
    return None


#: Characters of an input's start looked at for UTF-16 without a byte order mark (a byte each: read as UTF-8).
UTF16_PROBE = 1024


def utf16_without_bom(text: str) -> str | None:
    """Why `text` (the start of an input, its bytes read as UTF-8) looks like UTF-16 without a byte order mark
    (every other byte 0, as UTF-16 writes ASCII), or None: such text is read as UTF-8 and matches no format."""
    sample = text[:UTF16_PROBE]
    if len(sample) < 16:
        return None
    for order, rest, text_half in (("LE", sample[1::2], sample[0::2]), ("BE", sample[0::2], sample[1::2])):
        if rest.count("\0") >= 0.9 * len(rest) and text_half.count("\0") < 0.5 * len(text_half):  # not all zeros
            return (f"its bytes look like UTF-16 without a byte order mark (every other byte is 0), which is read "
                    f"as UTF-8; convert it to UTF-8 (iconv -f UTF-16{order} -t UTF-8), or write it with its byte "
                    "order mark")
    return None


def _specific_match(registry: Registry,
                    head: list[str]) -> tuple[type[TextFormat] | None, type[TextFormat] | None]:
    """The highest-priority non-generic format (priority >= 0) that claims `head` by its data, if any; and the
    highest-priority one that claims it by a banner alone (`TextFormat.banner_only`), if any."""
    banner = None
    for fmt in registry.formats.by_priority(floor=0):
        try:
            if fmt.sniff(head):
                if not fmt.banner_only(head):
                    return fmt, banner
                banner = banner or fmt
        except Exception:
            continue
    return None, banner


def _still_sniffs(fmt: type[TextFormat] | None, head: list[str]) -> type[TextFormat] | None:
    """`fmt` when its sniff accepts `head`."""
    try:
        return fmt if fmt is not None and fmt.sniff(head) else None
    except Exception:
        return None


def claiming_format(registry: Registry, path: str, forced: str | None = None) -> type[TextFormat] | None:
    """The format that reads the named `path` itself (a directory, a compressed log...), if one claims it."""
    if path in ("-", ""):
        return None
    p = Path(path)
    for fmt in _claimants(registry, forced):
        try:
            if fmt.claims(p):
                return fmt
        except Exception:
            continue
    return None


def _claimants(registry: Registry, forced: str | None) -> Iterable[type[TextFormat]]:
    """The formats that may read a named path themselves: the one `forced`, else every one that claims paths."""
    if forced:
        return [registry.formats[forced]] if forced in registry.formats else []
    return registry.formats.claimants()


def read_once(paths: Sequence[str], registry: Registry,
              forced: str | None = None) -> list[tuple[str, Notice | None]]:
    """The inputs to read for `paths`, each with the note said before it: parts of one whole (a rolling log's files:
    `TextFormat.part_of`), and the whole itself where it is named too, are one input, the whole, read where the first
    of them is named, with a note naming them (each would read the whole). A part named alone stays as it is: its
    format reads the whole for it, and says so."""
    wholes = [_part_of(registry, p, forced) for p in paths] if len(paths) > 1 else []
    keys = {key: (whole, words) for whole, words in filter(None, wholes) if (key := _resolved(str(whole)))}
    if not keys:
        return [(p, None) for p in paths]
    at = [_resolved(str(whole[0]) if whole is not None else p) for p, whole in zip(paths, wholes, strict=True)]
    named: dict[Path, list[str]] = {}
    for p, key in zip(paths, at, strict=True):
        if key in keys:
            named.setdefault(key, []).append(p)
    out: list[tuple[str, Notice | None]] = []
    done: set[Path] = set()
    for p, key in zip(paths, at, strict=True):
        if key is None or len(named.get(key, ())) < 2:
            out.append((p, None))
        elif key not in done:
            done.add(key)
            whole, words = keys[key]
            out.append((str(whole), Notice(f"{', '.join(Path(n).name for n in named[key])}: parts of {words}, "
                                           f"{whole}: read once, as one input", skipped=0)))
    return out


def _part_of(registry: Registry, path: str, forced: str | None) -> tuple[Path, str] | None:
    """What a format that reads `path` itself says it is a part of (`TextFormat.part_of`), if any."""
    if path in ("-", ""):
        return None
    for fmt in _claimants(registry, forced):
        try:
            whole = fmt.part_of(Path(path))
        except Exception:
            continue
        if whole is not None:
            return whole
    return None


def _resolved(path: str) -> Path | None:
    """`path` made absolute, links resolved (None: stdin, or a path that cannot be)."""
    if path in ("-", ""):
        return None
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError):
        return None


def read_input(
    path: str,
    registry: Registry,
    forced_format: str | None = None,
    options: dict[str, Any] | None = None,
    stdin: IO[bytes] | None = None,
    runs: bool = False,
    readers: list[TextFormat] | None = None,
    keep_open: bool = True,
) -> Iterator[Item]:
    """Items of one input. Raises InputError before yielding when it cannot be opened or identified.

    Without `keep_open`, a regular file is closed once identified and opened again when read (one of many inputs:
    they would run out of file descriptors, 1,024 on many systems).

    A format that claims the path reads it itself; otherwise the text is sniffed. With `runs`, a format may give
    SnapshotRuns (for the differ) and IntervalRuns; otherwise only single snapshots and intervals. The format read
    with is appended to `readers`. `stdin` is what `-` reads instead of the process's stdin, or the bytes of the
    input named `path`, opened once elsewhere (a pipe that two readers share: `flow.spool`).
    """
    claimed = None if stdin is not None else claiming_format(registry, path, forced_format)
    if claimed is not None:
        owner = claimed(**(options or {}))
        if readers is not None:
            readers.append(owner)
        items = owner.open_path(path)
        return items if runs else one_by_one(items)
    binary, name = _open_binary(path, stdin)
    # Formats may read longer lines (`max_line`): sniff with the longest, then cut to the chosen format's.
    limit = [registry.formats.max_line(MAX_LINE)]
    chunks = text_chunks(binary, max_line=limit)
    seen: list[str] = []
    head: list[str] = []
    fmt = banner = None
    if not forced_format:
        try:
            # decide as soon as a specific format claims the input by its data: live pipes start at once; a banner
            # alone (bpftrace's `Attaching N probes...`) waits for the data after it, which may be another format's
            for chunk in chunks:
                seen.append(chunk)
                for line in text_lines(chunk):
                    head.append(line)
                    fmt, claim = _specific_match(registry, head)
                    banner = banner or claim
                    if fmt is not None or len(head) >= SNIFF_LINES:
                        break
                if fmt is not None or len(head) >= SNIFF_LINES:
                    break
        except EndlessLine as err:
            binary.close()
            raise InputError(f"{name}: unrecognised input format: {err}") from None
        if fmt is None and len(head) < SNIFF_LINES and not any(line.strip() for line in head):
            # read to its end: an empty input is no data, as in any format, not an unknown one; a compressed one
            # that ends early before anything came out is cut short
            binary.close()
            return iter([CutShort(f"{name}: {NOTHING_DECOMPRESSED}", skipped=0) if _cut_or_damaged(binary)
                         else Notice(f"{name}: empty input, nothing to read", skipped=0)])
    try:
        # no data decided it: the first banner seen, or what the whole head looks like
        fmt = fmt or _still_sniffs(banner, head) or choose_format(registry, head, name, forced_format)
    except InputError:
        if forced_format or len(head) >= SNIFF_LINES or not _cut_or_damaged(binary):
            raise
        binary.close()  # read to the cut, and what came before it (a piece of a line) tells no format: cut short
        return iter([CutShort(f"{name}: {NOTHING_DECOMPRESSED}", skipped=0)])
    if getattr(fmt, "max_line", MAX_LINE) < limit[0]:
        limit[0] = getattr(fmt, "max_line", MAX_LINE)
        seen = [_cap(c, limit[0]) if _has_long_line(c, limit[0]) else c for c in seen]
    reader = fmt(**(options or {}))
    chosen = fmt.name
    if readers is not None:
        readers.append(reader)
    again = not keep_open and stdin is None and path not in ("-", "") and Path(path).is_file()
    if again:  # identified: read from the start when its turn comes, so that many inputs hold no file open
        binary.close()

    def generate() -> Iterator[Item]:
        nonlocal binary, chunks, seen
        if again:
            binary, _ = _open_binary(path, None)
            chunks, seen = text_chunks(binary, max_line=limit), []
        watch = _Watch(registry, chosen, forced=bool(forced_format))
        try:
            damage: list[Damage] | None = getattr(getattr(binary, "raw", None), "damage", None)
            try:
                text = watch.lines(itertools.chain(seen, chunks))
                if damage is None:
                    items = reader.read_text(text, name)
                    yield from watch.items(items if runs else one_by_one(items))
                else:
                    yield from watch.items(_told(reader, text, name, damage, runs))
            except EndlessLine as err:  # what was read before it is kept
                yield Notice(f"{name}: {err}; the rest of the input is not read")
                return
            yield from watch.notes(name)
            yield from _end_notes(binary, name)
        finally:
            binary.close()

    return generate()


@functools.cache
def _pattern(marker: DataMarker) -> re.Pattern[str]:
    """A marker's regular expression, compiled once (only for inputs that are read)."""
    return re.compile(marker.pattern, re.M | (re.I if marker.ignore_case else 0))


def _count(marker: DataMarker, chunk: str) -> tuple[int, int] | None:
    """(where the first unit `marker` starts, how many) in `chunk` (whole lines: its start is a line's, as after a
    newline); None when it holds none."""
    literal = marker.literal
    if marker.gate not in chunk or (literal not in chunk and not (literal[:1] == "\n"
                                                                  and chunk.startswith(literal[1:]))):
        return None
    first, units = -1, 0
    for m in _pattern(marker).finditer(chunk):
        first = m.start() if first < 0 else first
        units += 1
    return (first, units) if units else None


class _Watch:
    """What an input's reader is handed and gives: another format's data among its lines, and, in a format the
    user chose, whether it read anything of an input that is not empty."""

    def __init__(self, registry: Registry, fmt: str, forced: bool) -> None:
        self.registry, self.format, self.forced = registry, fmt, forced
        formats = registry.formats
        #: Each other format's markers (DataMarker): most readers pass over another format's lines without a word.
        self.markers = [(other, m) for other in formats.names() if other != fmt for m in formats.markers(other)]
        self.reports = formats.reports_unread(fmt)
        self.head: list[str] = []  # the first lines, for a chosen format that read nothing
        self.text = False  # a line that is not blank
        self.read = self.skipped = 0  # data items given; records skipped by the reader
        #: Another format's data, per (format, unit): [its first line, units, those the reader skips without a word]
        self.found: dict[tuple[str, str], list[int]] = {}

    def lines(self, chunks: Iterable[str]) -> Iterator[str]:
        """`chunks` as they are, looked at on the way."""
        handed = 0
        for chunk in chunks:
            if self.forced and (len(self.head) < SNIFF_LINES or not self.text):
                if len(self.head) < SNIFF_LINES:
                    self.head += text_lines(chunk)[:SNIFF_LINES - len(self.head)]
                self.text = self.text or (bool(chunk) and not chunk.isspace())
            for other, marker in self.markers:
                if (counted := _count(marker, chunk)) is not None:
                    self._found(other, marker, handed + chunk.count("\n", 0, counted[0]) + 1, counted[1])
            yield chunk
            handed += chunk.count("\n")

    def _found(self, other: str, marker: DataMarker, line: int, units: int) -> None:
        found = self.found.setdefault((other, marker.unit), [line, 0, 0])
        found[1] += units
        reported = self.reports == "all" or (self.reports == "non-json" and not marker.json)
        found[2] += 0 if reported else units

    def items(self, items: Iterable[Item]) -> Iterator[Item]:
        """`items` as they are, counted."""
        for item in items:
            if not isinstance(item, Notice):
                self.read += 1
            elif item.skipped:
                self.skipped += item.skipped
            yield item

    def notes(self, name: str) -> Iterator[Notice]:
        """What was seen once the reader is done: nothing read in the format chosen, another format's data."""
        if self.forced and not self.read and self.text and not self._looks_chosen():
            # it fails (a record skipped) only where it holds another format's data: a run that saw nothing (an
            # idle `bpftrace -q`, a header alone) holds none, and stays "No data." with the note
            other = bool(self.found) or utf16_without_bom("".join(self.head)) is not None
            unsaid = sum(found[2] for found in self.found.values())
            yield self._nothing_read(name, 0 if self.skipped or not other else max(1, unsaid))
            return
        for (fmt, unit), (first, units, unsaid) in sorted(self.found.items(), key=lambda kv: kv[1][0]):
            yield Notice(f"{name}: from line {first:,}, {plural(units, unit)} of another format, {fmt} "
                         f"({self.registry.formats.summary(fmt)}): not read, as this input is read as {self.format} "
                         f"(one format per input: give them as an input of their own)", skipped=unsaid)

    def _looks_chosen(self) -> bool:
        """Whether the input's first lines look like the format chosen (one holding no data: a tool's banner)."""
        try:
            return bool(self.registry.formats[self.format].sniff(self.head))
        except Exception:
            return False

    def _nothing_read(self, name: str, skipped: int) -> Notice:
        """The note that the format the user chose read nothing of an input that is not empty and does not look
        like it: what that format is, and what the input looks like."""
        utf16 = utf16_without_bom("".join(self.head))
        auto = None if utf16 else sniffed_format(self.registry, self.head)
        holds = {fmt for fmt, _ in self.found}
        if auto is not None and auto.name not in holds:
            auto = None  # its first lines look like another tool's (a banner), but no data of it follows
        looks = (f"; {utf16}" if utf16 else
                 f"; auto-detection reads it as {auto.name} ({auto.summary}): leave --input-format out"
                 if auto is not None else f"; it holds data of {', '.join(sorted(holds))}: leave --input-format out"
                 if holds else "; it holds no data of a format latencymap reads either (a run that saw nothing?)")
        first = next((line for line in self.head if line.strip(" \t\r\n\0")), "")
        return Notice(f"{name}: --input-format {self.format} read nothing of it: that format is "
                      f"{self.registry.formats.summary(self.format)}, and the input does not look like it (its "
                      f"first line: {excerpt(first.replace(chr(0), '') if utf16 else first)}){looks}", skipped=skipped)


def _told(reader: TextFormat, chunks: Iterator[str], name: str, damage: list[Damage], runs: bool) -> Iterator[Item]:
    """The items `reader` reads of `chunks`, each stretch of `damage` (found as they are decoded) said in its place:
    before the first item read from the text after it (a chunk ends where a stretch was skipped)."""
    handed = 0  # lines handed to the reader
    due = said = 0  # stretches before the text handed so far; of them, those said

    def handing() -> Iterator[str]:
        nonlocal handed, due
        for chunk in chunks:
            while due < len(damage) and damage[due].lines <= handed:
                due += 1
            yield chunk
            handed += chunk.count("\n")
        due = len(damage)

    items = reader.read_text(handing(), name)
    for item in items if runs else one_by_one(items):
        while said < due:
            yield _skipped(name, damage[said])
            said += 1
        yield item
    for stretch in damage[said:]:
        yield _skipped(name, stretch)


def _end_notes(binary: IO[bytes], name: str) -> Iterator[Notice]:
    """What the end of a compressed input says: cut short (a zstd one: where its whole blocks end), or followed by
    bytes that are no zstd data, which are ignored (nothing is lost: no record is skipped, under --strict too)."""
    decoder = getattr(binary, "raw", None)
    if _cut(binary):
        cut = getattr(decoder, "cut", None)
        where = "" if cut is None else (f" (byte {cut[0]:,}, the end of its last whole zstd block; the "
                                        f"{_bytes(cut[1] - cut[0])} after it are no whole block)")
        yield CutShort(f"{name}: the compressed data ends early (cut short or corrupt): read up to there{where}",
                       skipped=0)
    stray = getattr(decoder, "stray", None)
    if stray is not None:
        yield Notice(f"{name}: the {_bytes(stray[1])} after its last zstd frame, from byte {stray[0]:,} to the end, "
                     f"are not zstd data: ignored", skipped=0)


def _bytes(n: int) -> str:
    return f"{n:,} byte{'s' if n != 1 else ''}"


def _skipped(name: str, stretch: Damage) -> Notice:
    """The note of a stretch skipped: a frame (from its start), or the rest of one (from a bad block, what the frame
    held before it kept); it counts as many records skipped as the blocks it held, a record each in a recording
    (where the damage hides how many, one at least, and the message says so). Bytes between two frames that are no
    zstd data skip nothing."""
    size = stretch.resumed - stretch.at
    if stretch.junk:
        return Notice(f"{name}: {_bytes(size)} at byte {stretch.at:,}, between two zstd frames, are not zstd data: "
                      f"skipped; read on from the next frame, at byte {stretch.resumed:,}", skipped=0)
    blocks = stretch.blocks
    held = ("one record at least (the damage hides how many its bytes held)" if blocks is None else
            "no record" if blocks == 0 else "one record" if blocks == 1 else f"up to {blocks:,} records")
    if stretch.frame is None or stretch.frame == stretch.at:
        what = f"a zstd frame that cannot be decoded (corrupt) at byte {stretch.at:,}"
        lost = f"what it held (in a recording, {held})"
    else:
        what = f"a zstd block that cannot be decoded (corrupt) at byte {stretch.at:,}"
        lost = (f"the rest of its frame (in a recording, {held}; what the frame held before it, from byte "
                f"{stretch.frame:,}, is kept)")
    then = (f"no frame after it: the input ends at byte {stretch.resumed:,}" if stretch.last else
            f"read on from the next frame, at byte {stretch.resumed:,}")
    return Skipped(f"{name}: {what}, after line {stretch.lines:,} of the text: skipped, with {lost}; {then}",
                   skipped=1 if blocks is None else blocks)
