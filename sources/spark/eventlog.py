"""Finding Spark event logs (single file, `eventlog_v2_*` directory, directory of applications) and reading lines."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from latencymap.core.errors import InputError

from .codecs import SUFFIXES, CodecError, codec_of, make_decoder

IN_PROGRESS = ".inprogress"
ROLLING_PREFIX = "eventlog_v2_"
EVENTS_FILE = re.compile(r"^events_(\d+)_(.+?)(\.[a-z0-9]+)?$")
STATUS_PREFIX = "appstatus_"
#: The suffix of an events file that compaction made of those before it (they are then removed).
COMPACTED = ".compact"
CHUNK = 8 << 20
#: The start of a Spark listener event line (Spark writes compact JSON).
EVENT_LINE = re.compile(rb'^\s*\{.*?"Event"\s*:\s*"(?:SparkListener|org\.apache\.spark\.)')
#: Bytes read (and decoded) at most to find a file's first line.
PEEK = 1 << 18


class EventLogError(InputError, FileNotFoundError):
    """No event log where the user pointed: an input that cannot be opened (exit code 2), not a source failing."""


@dataclass
class EventLog:
    """One application's event log: a single file, or the rolled files of an `eventlog_v2_*` directory."""

    app_id: str
    path: Path
    rolling: bool
    #: Applications in the directory it was chosen from as the latest (1: it was named, or alone there).
    among: int = 1

    def files(self) -> list[Path]:
        """The log's data files in write order (rolling: by index)."""
        if not self.rolling:
            return [self.current_single()]
        found = []
        for child in self.path.iterdir():
            m = EVENTS_FILE.match(child.name)
            if m and child.is_file():
                found.append((int(m.group(1)), child))
        return [p for _, p in sorted(found)]

    def missing(self) -> list[int]:
        """The indices of a rolling log's events files that are not there: gaps in the numbering, and those before
        the first when it is not 1 (nor a compacted file, which stands for those before it)."""
        if not self.rolling:
            return []
        found = {}
        for path in self.files():
            m = EVENTS_FILE.match(path.name)
            if m:
                found[int(m.group(1))] = path
        if not found:
            return []
        first = min(found)
        low = first if found[first].name.endswith(COMPACTED) else 1
        return [k for k in range(low, max(found)) if k not in found]

    def empty(self) -> list[Path]:
        """A rolling log's events files that are empty though another follows them (Spark never leaves one so)."""
        files = self.files() if self.rolling else []
        return [p for p in files[:-1] if p.stat().st_size == 0]

    def current_single(self) -> Path:
        """A single-file log's path now: Spark renames `X.inprogress` to `X` when the application ends."""
        if self.path.exists():
            return self.path
        other = _toggle_in_progress(self.path)
        return other if other.exists() else self.path

    def finished(self) -> bool:
        """True when Spark marked the application as ended (no `.inprogress` status file or name)."""
        if self.rolling:
            names = {p.name for p in self.path.iterdir() if p.name.startswith(STATUS_PREFIX)}
            return any(not n.endswith(IN_PROGRESS) for n in names)
        return not self.current_single().name.endswith(IN_PROGRESS)

    def mtime(self) -> float:
        """Last modification time of any of its files."""
        paths = self.files() if self.rolling else [self.current_single()]
        return max((p.stat().st_mtime for p in paths if p.exists()), default=self.path.stat().st_mtime)


def _toggle_in_progress(path: Path) -> Path:
    name = path.name
    if name.endswith(IN_PROGRESS):
        return path.with_name(name[: -len(IN_PROGRESS)])
    return path.with_name(name + IN_PROGRESS)


def app_id_of(name: str) -> str:
    """The application id in a log file or directory name."""
    if name.startswith(ROLLING_PREFIX):
        name = name[len(ROLLING_PREFIX):]
    if name.endswith(IN_PROGRESS):
        name = name[: -len(IN_PROGRESS)]
    for suffix in SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _is_rolling_dir(path: Path) -> bool:
    if path.name.startswith(ROLLING_PREFIX):
        return True
    return any(EVENTS_FILE.match(p.name) for p in path.iterdir())


def first_line(path: Path) -> bytes:
    """The first decoded line of an event-log file (from up to PEEK bytes of it)."""
    decoder, data = make_decoder(codec_of(path)), b""
    with path.open("rb") as fh:
        read = 0
        while read < PEEK and b"\n" not in data:
            chunk = fh.read(min(16 << 10, PEEK - read))
            if not chunk:
                break
            read += len(chunk)
            data += decoder.feed(chunk)
    return data.split(b"\n", 1)[0]


def starts_with_event(path: Path, strict: bool = False) -> bool:
    """True when the file's first line is a Spark listener event (any codec); False for any other file, and with
    `strict` CodecError for a compressed file whose start cannot be decoded."""
    try:
        return EVENT_LINE.match(first_line(path)) is not None
    except CodecError:
        if strict:
            raise
        return False
    except (OSError, ValueError):
        return False


def _candidate(path: Path) -> EventLog | None:
    """An application inside a directory of applications (a file whose first line is a listener event, or an
    `eventlog_v2_*` directory holding an events file), or None for anything else."""
    name = path.name
    if name.startswith(".") or name.endswith(".crc"):
        return None
    if path.is_dir():
        if not name.startswith(ROLLING_PREFIX):
            return None
        log = EventLog(app_id_of(name), path, True)
        return log if log.files() else None
    if path.is_file() and starts_with_event(path):
        return EventLog(app_id_of(name), path, False)
    return None


def list_applications(directory: Path) -> list[EventLog]:
    """Every application log in a directory, oldest first (by last modification)."""
    logs = [c for c in (_candidate(p) for p in directory.iterdir()) if c is not None]
    return sorted(logs, key=lambda log: (log.mtime(), log.app_id))


def find_event_log(path: str | Path, app: str | None = None) -> EventLog:
    """The event log PATH names: a file, an `eventlog_v2_*` directory, or a directory of applications."""
    p = Path(path)
    if not p.exists():
        raise EventLogError(f"{p}: no such file or directory")
    if p.is_file():
        m = EVENTS_FILE.match(p.name)
        if m:
            log = EventLog(app_id_of(p.parent.name) if p.parent.name.startswith(ROLLING_PREFIX) else m.group(2),
                           p.parent, True)
        else:
            log = EventLog(app_id_of(p.name), p, False)
        return _only(log, app, p)
    if _is_rolling_dir(p):
        return _only(EventLog(app_id_of(p.name), p, True), app, p)
    apps = list_applications(p)
    if app is not None:
        chosen = [log for log in apps if log.app_id == app] or [log for log in apps if app in log.app_id]
        if len(chosen) != 1:
            known = ", ".join(log.app_id for log in apps) or "none"
            what = "no application" if not chosen else "several applications"
            raise EventLogError(f"{p}: {what} matching {app!r} (applications: {known})")
        return chosen[0]
    if not apps:
        raise EventLogError(f"{p}: no Spark event log here (a file, an eventlog_v2_* directory, or their directory)")
    latest = apps[-1]
    latest.among = len(apps)
    return latest


def check_event_log(log: EventLog) -> None:
    """EventLogError when a single-file log is not empty and its first line is no listener event (a README, notes),
    CodecError (naming the file) when its start cannot be decoded."""
    path = log.current_single() if not log.rolling else None
    if path is None or not path.stat().st_size:
        return
    try:
        is_log = starts_with_event(path, strict=True)
    except CodecError as err:
        raise CodecError(f"{path}: {err}") from None
    if not is_log:
        raise EventLogError(f"{path}: not a Spark event log (its first line is not a SparkListener event)")


def _only(log: EventLog, app: str | None, path: Path) -> EventLog:
    """The log of a path that holds one application; InputError when `app` names another (not an EventLogError:
    `--follow` waits for a log that is not there yet, not for this one to change)."""
    if app is not None and app != log.app_id and app not in log.app_id:
        raise InputError(f"{path}: the log of application {log.app_id}, not {app!r} (--app chooses among the "
                         "applications of a directory of logs)")
    return log


class LineSplitter:
    """Bytes in, complete lines out; the partial last line is kept for the next call."""

    def __init__(self) -> None:
        self._tail = b""

    def feed(self, data: bytes) -> list[bytes]:
        if not data:
            return []
        lines = (self._tail + data).split(b"\n") if self._tail else data.split(b"\n")
        self._tail = lines.pop()
        return lines

    def flush(self) -> list[bytes]:
        """The kept partial line, when the input has ended."""
        tail, self._tail = self._tail, b""
        return [tail] if tail.strip() else []

    @property
    def pending(self) -> int:
        return len(self._tail)


def read_lines(log: EventLog, chunk: int = CHUNK) -> Iterator[list[bytes]]:
    """Batches of complete lines of the whole log (every rolled file in order), decompressed."""
    for path in log.files():
        decoder, split = make_decoder(codec_of(path)), LineSplitter()
        with path.open("rb") as fh:
            while data := fh.read(chunk):
                lines = split.feed(decoder.feed(data))
                if lines:
                    yield lines
        last = split.flush()
        if last:
            yield last

