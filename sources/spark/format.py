"""Spark event logs as inputs like the others: `latencymap LOG`, `report LOG`, `replay LOG` without `spark`.

A path is claimed (before any text sniffing) when it is an event log Spark wrote: a plain, zstd, lz4 or snappy
file, a rolling `eventlog_v2_*` directory, a file of one, or a directory of applications (the latest is read),
and its first decoded line is a Spark listener event. It is read by the `spark` source with its default options,
so the report is the one `latencymap report spark LOG` gives. Piped JSON lines (`cat LOG | latencymap`) are
sniffed as text.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from latencymap.core.errors import InputError, SourceError
from latencymap.plugins import Item, TextFormat

if TYPE_CHECKING:
    from .source import SparkSource

#: Lines handed to the parser at a time when the log is read as text.
BATCH = 4096
#: The suffixes of compressed event logs (codecs.SUFFIXES): such a file's first bytes say nothing before decoding.
CODEC_SUFFIXES = frozenset({".zstd", ".zst", ".lz4", ".snappy", ".lzf"})
#: What the whole is that a rolled `events_*` file is a part of.
WHOLE = "one Spark application's rolling event log"
#: Bytes a plain file's start is looked at for the `{` an event line starts with (after blanks).
GLANCE = 4096


def is_event_log(path: Path) -> bool:
    """True when `path` is a Spark event log (file or directory) whose first line is a listener event."""
    if not (path.is_dir() or path.is_file()):
        return False  # FIFOs and devices are never read ahead
    if not _may_be_event_log(path):
        return False
    from .codecs import CodecError
    from .eventlog import EVENT_LINE, EventLogError, find_event_log, first_line

    try:
        log = find_event_log(path)
        files = log.files()
        return bool(files) and EVENT_LINE.match(first_line(files[0])) is not None
    except (OSError, EventLogError, CodecError, ValueError):
        return False


def _may_be_event_log(path: Path) -> bool:
    """False for a plain file whose first line cannot be a listener event (it starts with no `{`, blanks aside), told
    without loading the readers of event logs: every file named as an input is asked. A rolling log's `events_*`
    file stands for its directory's log, and a compressed file is decoded first: both are read in full."""
    if not path.is_file() or path.name.startswith("events_") or path.suffix.lower() in CODEC_SUFFIXES:
        return True
    try:
        with path.open("rb") as fh:
            start = fh.read(GLANCE).lstrip(b" \t\r\f\v")
    except OSError:
        return False
    return not start or start.startswith(b"{")


def spark_source(target: str) -> SparkSource:
    """The `spark` source for `target` with its default options (as `report spark TARGET` builds it)."""
    import click

    from .source import SparkSource  # the reader itself, imported when a log is read (not to sniff one)

    ctx = click.Command("spark", params=SparkSource.params()).make_context("spark", ["--", target])
    return SparkSource(**ctx.params)


class SparkEventLogFormat(TextFormat):
    """Spark event logs given as plain inputs."""

    name = "spark-eventlog"
    summary = "Spark event logs (JSON lines; paths also zstd/lz4/snappy, eventlog_v2_* dirs, dirs of logs)"
    priority = 10

    @classmethod
    def sniff(cls, head: Sequence[str]) -> bool:
        from .eventlog import EVENT_LINE

        return any(EVENT_LINE.match(line.encode("utf-8", "replace")) for line in head[:5])

    @classmethod
    def claims(cls, path: Path) -> bool:
        return is_event_log(path)

    @classmethod
    def part_of(cls, path: Path) -> tuple[Path, str] | None:
        if not path.name.startswith("events_") or not is_event_log(path):
            return None
        from .eventlog import EventLogError, find_event_log

        try:
            log = find_event_log(path)
        except (OSError, EventLogError):
            return None
        return (log.path, WHOLE) if log.rolling and path.is_file() else None

    def open_path(self, path: str) -> Iterator[Item]:
        if not is_event_log(Path(path)):
            raise InputError(f"{path}: not a Spark event log (a file, an eventlog_v2_* directory, or their "
                             "directory, whose first line is a SparkListener event)")
        source = self.source = spark_source(path)
        return _guarded(source.items(), path)

    def read(self, lines: Iterable[str], name: str) -> Iterator[Item]:
        source = self.source = spark_source(name)

        def batches() -> Iterator[list[bytes]]:
            batch: list[bytes] = []
            for line in lines:
                batch.append(line.encode("utf-8", "replace"))
                if len(batch) >= BATCH:
                    yield batch
                    batch = []
            if batch:
                yield batch

        return _guarded(source.batch_items(batches(), "spark", name), name)


def _guarded(items: Iterator[Item], name: str) -> Iterator[Item]:
    """A log that cannot be read past some point: what was read stays, and the run fails with a clear line."""
    from .codecs import CodecError
    from .eventlog import EventLogError

    try:
        yield from items
    except (OSError, EventLogError, CodecError) as err:
        raise SourceError(f"{name}: cannot read the Spark event log: {err}") from None
