"""The plugin interface: sources (live, a CLI subcommand each) and text formats (sniffed readers).

Third parties register either kind under the entry-point group `latencymap.sources`. Each entry
point is loaded on its own, so one broken plugin does not hide the others.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import signal
import sys
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, MutableMapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar, cast

from latencymap.core.errors import SourceError
from latencymap.core.lean import dataclass
from latencymap.core.lines import text_lines
from latencymap.core.model import Item, StreamId

if TYPE_CHECKING:
    import click

__all__ = ["ENTRY_POINT_GROUP", "DataMarker", "Item", "Registry", "Source", "SourceError", "TextFormat",
           "load_registry", "process_end"]

ENTRY_POINT_GROUP = "latencymap.sources"
P = TypeVar("P")

def process_end(returncode: int) -> str:
    """How a child process ended, in words: `exited with code 3`, `was killed by signal 9 (SIGKILL)`."""
    if returncode >= 0:
        return f"exited with code {returncode}"
    try:
        name = f" ({signal.Signals(-returncode).name})"
    except ValueError:
        name = ""
    return f"was killed by signal {-returncode}{name}"


class Source(ABC):
    """A live source: `latencymap <name> [options]`. Yields Intervals, Snapshots and Notices."""

    name: ClassVar[str]
    summary: ClassVar[str]
    #: Command lines shown under `latencymap <name> --help`.
    examples: ClassVar[tuple[str, ...]] = ()
    #: The source stops itself after `count` rounds or `duration` seconds (given to it as the options `count` and
    #: `duration`), at the end of a whole round: the flow's own limit, which stops between two items, would cut a
    #: round of several streams in two, and cannot stop a source that yields nothing (an idle disk).
    own_limits: ClassVar[bool] = False
    #: A source whose argument picks a mode (`latencymap bpf block`): per mode, its summary and the names of the
    #: source options that apply to it, so that `latencymap <name> <mode> --help` shows that mode's usage only.
    modes: ClassVar[dict[str, tuple[str, tuple[str, ...]]]] = {}

    @classmethod
    def params(cls) -> list[click.Parameter]:
        """The source's own CLI options and arguments."""
        return []

    @classmethod
    def unavailable(cls) -> str | None:
        """Why the source cannot run here, with the exact remedy; None when it can."""
        return None

    def __init__(self, **options: Any) -> None:
        self.options = options

    @abstractmethod
    def items(self) -> Iterator[Item]:
        """Blocking generator of items; runs in a worker thread."""

    def describe(self) -> dict[str, Any]:
        """What a recording header says about this source (never credentials)."""
        return {"source": self.name}

    def at_rest(self) -> bool:
        """Whether what it reads is all there when read (a finished log read to its end), so that `--count` reads
        it to its end and says what it left out, as of a file; False (the default): a live source, stopped once
        every stream has its count."""
        return False


@dataclass(frozen=True, slots=True)
class DataMarker:
    """What starts one unit of a format's data (a record, a histogram) as only that format writes it. Most readers
    pass over lines they do not know, so an input read in one format is searched for the others' markers, and what
    it holds of them is said rather than lost without a word."""

    #: What one match is called, in the note (`record`, `histogram`).
    unit: str
    #: A character, then a piece of text, that every match holds: tested first (most chunks hold neither).
    gate: str
    literal: str
    #: The regular expression of a unit's start (multi-line mode: `^` is a line's start).
    pattern: str
    ignore_case: bool = False
    #: Its lines are JSON objects (a JSON reader reports them as lines it cannot read).
    json: bool = False


class TextFormat(ABC):
    """A text format read from a file or stdin, chosen by `sniff` or by `--format <name>`.

    A format whose inputs text sniffing cannot see (directories, compressed files) also overrides `claims` and
    `open_path`: every path named on the command line is offered to `claims` first (highest priority first),
    and the format that takes it reads it with `open_path`. A format that reads through a live `Source` sets
    `source` to it, so `report` adds that source's analysis (as `report SOURCE PATH` does).
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    #: Higher wins when several formats claim the same input.
    priority: ClassVar[int] = 0
    #: The Source this format read through, once `open_path`/`read` has started (None: none).
    source: Source | None = None
    #: How its data starts, for inputs read in another format (shipped formats give theirs in SHIPPED_FORMATS).
    markers: ClassVar[tuple[DataMarker, ...]] = ()
    #: The lines it cannot read that it reports itself, each counted skipped: "all", "non-json" (the lines that are
    #: no JSON object), or "" (it passes over them).
    reports_unread: ClassVar[str] = ""

    @classmethod
    @abstractmethod
    def sniff(cls, head: Sequence[str]) -> bool:
        """True when the first lines of an input look like this format."""

    @classmethod
    def banner_only(cls, head: Sequence[str]) -> bool:
        """True when `sniff` takes `head` for this format by a tool's banner alone, before any data: an input read as
        it comes is then decided by the data that follows (a bpftrace program may print another format's records),
        and by the banner only where no data of a format follows."""
        return False

    @classmethod
    def params(cls) -> list[click.Parameter]:
        """Format options (e.g. `--event`), offered on every command that reads inputs."""
        return []

    def __init__(self, **options: Any) -> None:
        self.options = options
        #: Streams of this input shown under another name: one of several inputs that goes back into the time of an
        #: earlier input's stream is shown apart, as `LABEL [INPUT]` (the flow that reads the inputs fills it).
        self.shown_as: dict[StreamId, StreamId] = {}

    @abstractmethod
    def read(self, lines: Iterable[str], name: str) -> Iterator[Item]:
        """Items from the input's lines; `name` is used in messages."""

    def untimed_streams(self) -> set[StreamId]:
        """Streams this format has read whose columns carry no time of their own (values without timestamps,
        grouped by when they were read): a report gives them no span and no rate. None by default."""
        return set()

    def read_text(self, chunks: Iterable[str], name: str) -> Iterator[Item]:
        """Items from pieces of text made of whole lines; formats that can parse in bulk override it."""
        return self.read((line for chunk in chunks for line in text_lines(chunk)), name)

    @classmethod
    def claims(cls, path: Path) -> bool:
        """True when this format reads `path` (a file or directory named as an input) itself, by `open_path`.

        Asked before the input is opened as text; must not consume anything (FIFOs, devices: say False)
        and must not raise.
        """
        return False

    @classmethod
    def part_of(cls, path: Path) -> tuple[Path, str] | None:
        """The whole that `path` is a part of when this format reads all of it for any part named (a rolling log's
        files), and what that whole is in words; None (the default): `path` is read as it is. Inputs that are parts
        of one whole (or it and parts of it) are read once, as that whole. Must not raise."""
        return None

    def open_path(self, path: str) -> Iterator[Item]:
        """Items of a path `claims` took; raises InputError before returning when it cannot be read."""
        raise NotImplementedError(f"{self.name} does not read paths itself")


class PluginTable(MutableMapping[str, type[P]]):
    """Plugins of one kind by name. Entry points known to be of this kind (the shipped sources) wait in it
    unloaded: `name in table` costs nothing for other names, and a plugin is imported when first looked up.

    Safe to use from several threads (the view's reader and a replay's burst finder identify inputs at once): a
    plugin is loaded once, under the table's lock, and stays waiting until it is either loaded or has failed, so
    another thread never finds it in neither place; a plugin already loaded is looked up without the lock."""

    def __init__(self, loaded: dict[str, type[P]] | None = None) -> None:
        #: Held while a plugin loads and while the waiting plugins are read or changed. Reentrant: a plugin's
        #: import may look another one up in the same table.
        self._lock = threading.RLock()
        self._loaded: dict[str, type[P]] = dict(loaded or {})
        self._order: dict[str, None] = dict.fromkeys(self._loaded)  # every name, as registered
        self._waiting: dict[str, EntryPointLike] = {}
        self._summaries: dict[str, str] = {}
        self._facts: dict[str, Any] = {}
        self._errors: dict[str, str] = {}
        self._kind: type | None = None

    def defer(self, ep: EntryPointLike, kind: type, errors: dict[str, str], summary: str = "",
              facts: Any = None) -> None:
        """Keep `ep` (named as its class is) to be loaded on first lookup; a failure then goes to `errors`.
        `facts`: what the table's users may ask of it meanwhile (see FormatTable)."""
        with self._lock:
            self._waiting[ep.name] = ep
            self._order[ep.name] = None
            self._summaries[ep.name] = summary
            self._facts[ep.name] = facts
            self._kind, self._errors = kind, errors

    def __getitem__(self, name: str) -> type[P]:
        found = self._loaded.get(name)
        if found is not None:
            return found
        with self._lock:
            found = self._loaded.get(name)  # another thread may have loaded it meanwhile
            if found is not None:
                return found
            ep = self._waiting.get(name)
            if ep is None:  # not here, or it failed to load (its error is in the registry)
                raise KeyError(name)
            try:
                obj = ep.load()
            except Exception as err:
                self._errors[ep.name] = f"{type(err).__name__}: {err}"
                self._waiting.pop(name, None)
                raise KeyError(name) from None
            if not (isinstance(obj, type) and self._kind is not None and issubclass(obj, self._kind)
                    and getattr(obj, "name", None) == name):
                self._errors[ep.name] = f"{ep.value} is not the {getattr(self._kind, '__name__', 'plugin')} {name!r}"
                self._waiting.pop(name, None)
                raise KeyError(name)
            plugin = cast("type[P]", obj)
            self._loaded[name] = plugin  # loaded before it stops waiting: never in neither place
            self._waiting.pop(name, None)
            return plugin

    def names(self) -> list[str]:
        """Every plugin's name, in the order they were registered, loading none."""
        with self._lock:
            return [n for n in self._order if n in self._loaded or n in self._waiting]

    def waiting(self, name: str) -> Any:
        """The facts noted for a plugin not loaded yet; None once it is loaded (or when none were noted)."""
        with self._lock:
            return self._facts.get(name) if name in self._waiting else None

    def summary(self, name: str) -> str:
        """A plugin's one-line summary; one waiting to load gives the one noted for it (it is not loaded)."""
        with self._lock:
            if name in self._loaded:
                return str(getattr(self._loaded[name], "summary", ""))
            if name in self._waiting:
                return self._summaries.get(name, "")
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        if name in self._loaded:
            return True
        if not isinstance(name, str):
            return False
        try:
            self[name]  # loads it (or waits for the thread loading it)
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        with self._lock:
            waiting = list(self._waiting)
        for name in waiting:
            if name not in self:  # loads it; one that fails is left out (its error is in the registry)
                continue
        with self._lock:
            return iter([n for n in self._order if n in self._loaded])

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __setitem__(self, name: str, plugin: type[P]) -> None:
        with self._lock:
            self._loaded[name] = plugin
            self._waiting.pop(name, None)
            self._order[name] = None

    def __delitem__(self, name: str) -> None:
        with self._lock:
            if self._waiting.pop(name, None) is None:
                del self._loaded[name]
            self._order.pop(name, None)


class FormatFacts:
    """What sniffing, listings and `--help` need of a shipped text format, known without importing it."""

    __slots__ = ("claims_paths", "markers", "max_line", "name", "options", "priority", "reports_unread", "summary")

    def __init__(self, name: str, summary: str, priority: int = 0, max_line: int | None = None,
                 claims_paths: bool = False, options: tuple[str, ...] = (), markers: tuple[DataMarker, ...] = (),
                 reports_unread: str = "") -> None:
        self.name, self.summary, self.priority, self.max_line = name, summary, priority, max_line
        #: Whether the format's `claims` takes some paths (directories, compressed files) before text sniffing.
        self.claims_paths = claims_paths
        #: Its options, by their names in latencymap.sources.format_options (FORMAT_OPTIONS).
        self.options = options
        #: As TextFormat's `markers` and `reports_unread` (a shipped format's class leaves them unset).
        self.markers, self.reports_unread = markers, reports_unread


#: Where the shipped formats' options are made (FormatFacts.options names them).
FORMAT_OPTIONS = "latencymap.sources.format_options"


class FormatTable(PluginTable[TextFormat]):
    """Text formats by name. A shipped one waits unloaded with its FormatFacts: it is imported when an input
    needs it (sniffing reaches it, or it is named), so a command reading one format imports that one."""

    def priority(self, name: str) -> int:
        """The format's priority, loading nothing."""
        facts = self.waiting(name)
        return facts.priority if facts is not None else self[name].priority

    def by_priority(self, floor: int | None = None,
                    keep: Callable[[str], bool] | None = None) -> Iterator[type[TextFormat]]:
        """The formats from the highest priority down (ties as registered), each loaded when reached: none below
        `floor`, only the names `keep` accepts (decided before loading); one that fails to load is left out (its
        error is in the registry)."""
        for name in sorted(self.names(), key=lambda n: -self.priority(n)):
            if floor is not None and self.priority(name) < floor:
                return
            if keep is not None and not keep(name):
                continue
            try:
                yield self[name]
            except KeyError:
                continue

    def claimants(self) -> Iterator[type[TextFormat]]:
        """The formats whose `claims` may take a path, highest priority first (only those are loaded)."""
        return self.by_priority(keep=self._may_claim)

    def _may_claim(self, name: str) -> bool:
        facts = self.waiting(name)
        if facts is not None:
            return bool(facts.claims_paths)
        return getattr(self[name].claims, "__func__", None) is not getattr(TextFormat.claims, "__func__", None)

    def markers(self, name: str) -> tuple[DataMarker, ...]:
        """How the format's data starts (TextFormat.markers), loading nothing of a shipped format."""
        facts = self._facts.get(name)
        return facts.markers if facts is not None else tuple(getattr(self[name], "markers", ()))

    def reports_unread(self, name: str) -> str:
        """Which lines the format's reader reports itself (TextFormat.reports_unread), loading nothing."""
        facts = self._facts.get(name)
        return facts.reports_unread if facts is not None else str(getattr(self[name], "reports_unread", ""))

    def max_line(self, default: int) -> int:
        """The longest line any format reads (`default` for those that do not say), loading nothing."""
        longest = default
        for name in self.names():
            facts = self.waiting(name)
            size = facts.max_line if facts is not None else getattr(self[name], "max_line", None)
            longest = max(longest, size or default)
        return longest

    def params(self) -> list[click.Parameter]:
        """Every format's options, each name once (the first format's), loading none of the shipped formats."""
        seen: dict[str, click.Parameter] = {}
        made: dict[str, Callable[[], click.Parameter]] | None = None
        for name in self.names():
            facts = self.waiting(name)
            if facts is not None:
                made = made or importlib.import_module(FORMAT_OPTIONS).OPTIONS
                params: list[click.Parameter] = [made[option]() for option in facts.options]
            else:
                params = self[name].params()
            for param in params:
                seen.setdefault(param.name or "", param)
        return list(seen.values())


@dataclass
class Registry:
    """Plugins found through entry points, by kind, plus the load failures (`name: why`)."""

    sources: PluginTable[Source] = field(default_factory=PluginTable)
    formats: FormatTable = field(default_factory=FormatTable)
    errors: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.sources, PluginTable):
            self.sources = PluginTable(self.sources)
        if not isinstance(self.formats, FormatTable):
            self.formats = FormatTable(dict(self.formats))

    def format_params(self) -> list[click.Parameter]:
        """Every format's options, each name once (see FormatTable.params)."""
        return self.formats.params()


class EntryPointLike(Protocol):
    """What the registry reads of an entry point (importlib.metadata's EntryPoint has it too)."""

    @property
    def name(self) -> str: ...

    @property
    def value(self) -> str: ...

    def load(self) -> Any: ...


@dataclass(frozen=True)
class _EntryPoint:
    """One `name = module:attr [extras]` line of a distribution's entry_points.txt."""

    name: str
    value: str

    def load(self) -> Any:
        """The object the entry point names (imported now)."""
        module, _, attrs = self.value.partition("[")[0].strip().partition(":")
        found = importlib.import_module(module.strip())
        return functools.reduce(getattr, filter(None, attrs.strip().split(".")), found)


_DIST = re.compile(r"(?P<name>[^-]+)-.*\.(?:dist|egg)-info$|(?P<bare>[^-]+)\.egg-info$")


def entry_points(group: str) -> list[EntryPointLike]:
    """The entry points of `group` over the distributions on sys.path, the first distribution of a name winning as
    in importlib.metadata, read straight from their entry_points.txt files: importing importlib.metadata (it pulls
    the email package in) costs more than all the rest of finding the plugins. Zipped path entries fall back to it."""
    found: list[EntryPointLike] = []
    seen: set[str] = set()
    for entry in sys.path:
        folder = entry or "."
        if os.path.isfile(folder):
            from importlib.metadata import entry_points as metadata_entry_points

            return list(metadata_entry_points(group=group))
        try:
            children = os.listdir(folder)
        except OSError:
            continue
        for child in children:
            m = _DIST.match(child)
            if m is None:
                continue
            dist = re.sub(r"[-_.]+", "_", m.group("name") or m.group("bare")).lower()
            if dist in seen:
                continue
            seen.add(dist)
            try:
                with open(os.path.join(folder, child, "entry_points.txt"), encoding="utf-8") as fh:
                    text = fh.read()
            except OSError:
                continue
            found += _group_lines(text, group)
    return found


def _group_lines(text: str, group: str) -> list[EntryPointLike]:
    """The `name = value` lines of section `[group]`."""
    out: list[EntryPointLike] = []
    current = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1].strip()
        elif current == group and "=" in line:
            name, _, value = line.partition("=")
            out.append(_EntryPoint(name.strip(), value.strip()))
    return out


#: Entry points of the sources latencymap ships (value -> name, summary), loaded only when named: `--help` lists
#: them from here (a test holds this table to the classes).
SHIPPED_SOURCES: dict[str, tuple[str, str]] = {
    "latencymap.sources.bpf.source:BpfSource": (
        "bpf", "Block I/O or syscall latency from the kernel via BPF tracepoints (bcc or bpftrace)."),
    "latencymap.sources.spark.source:SparkSource": (
        "spark", "Spark task latencies: PATH is an event log (file, eventlog_v2_* dir, dir of apps) or "
        "http://HOST:4040|18080"),
    "latencymap.sources.oracle.source:OracleSource": (
        "oracle", "Oracle wait-event latency from GV$EVENT_HISTOGRAM_MICRO (or GV$EVENT_HISTOGRAM) via "
        "python-oracledb; password from LATENCYMAP_ORACLE_PASSWORD or a prompt."),
    "latencymap.sources.listen:ListenSource": (
        "listen", "Live training-loop timings (latencymap.instrument) from many processes or ranks over a UNIX "
        "socket, or OpenTelemetry metrics over OTLP/HTTP (--otlp) or OTLP/gRPC (--otlp-grpc)."),
    "latencymap.sources.prometheus.scrape:ScrapeSource": (
        "scrape", "Prometheus histograms (classic or native) scraped from any /metrics endpoint (text, OpenMetrics "
                  "or protobuf) every interval."),
    "latencymap.sources.prometheus.query:PrometheusSource": (
        "prometheus", "A histogram from a Prometheus server's HTTP API (native or classic): a past window with "
        "--start/--end, live otherwise."),
}


_MB16 = 16 * 1024 * 1024

#: Entry points of the text formats latencymap ships, with what is known of each before it is imported: a format is
#: loaded when sniffing an input reaches it or it is named (a test holds this table to the classes).
SHIPPED_FORMATS: dict[str, FormatFacts] = {
    "latencymap.sources.bcc_text:BccTextFormat": FormatFacts(
        "bcc", "bcc print_log2_hist text (usecs : count distribution) and biolatency -j dict lines", 5,
        options=("interval", "unit", "cumulative"),
        markers=(DataMarker("histogram", "|", "distribution", r"^[ \t]*\S+[ \t]*:[ \t]*count[ \t]+distribution[ \t]*$"),
                 DataMarker("-j line", "{", "{'", r"^[ \t]*\{'(?:ts|val_type|data)'[ \t]*:"))),
    "latencymap.sources.bpftrace_text:BpftraceTextFormat": FormatFacts(
        "bpftrace", "bpftrace hist() text output (@map: blocks of [lo, hi) count |@@@| rows)", 5,
        options=("interval", "unit", "cumulative"),
        markers=(DataMarker("histogram", "|", "\n@", r"^@\w*(?:\[[^\n]*\])?:[ \t]*\n[\[(]"),)),
    "latencymap.sources.bpftrace_json:BpftraceJsonFormat": FormatFacts(
        "bpftrace-json", 'bpftrace -f json lines ({"type": "hist", ...}, {"type": "time", ...})', 5,
        options=("interval", "unit", "cumulative"),
        markers=(DataMarker("hist line", "{", '"hist"', r'^[ \t]*\{[ \t]*"type"[ \t]*:[ \t]*"hist"', json=True),),
        reports_unread="non-json"),
    "latencymap.sources.hdrhistogram:HdrHistogramFormat": FormatFacts(
        "hdrhistogram", "HdrHistogram interval logs (.hlog: jHiccup, cassandra-stress, HistogramLogWriter; integer or "
        "Double histograms), --unit (ns)", 10, max_line=_MB16, options=("unit",),
        markers=(DataMarker("interval line", "H", ",HIST", r"^(?:Tag=[^,\n]*,)?[0-9.]+,[0-9.]+,[0-9.]+,HIST"),),
        reports_unread="all"),
    "latencymap.sources.hdrhistogram_percentiles:HdrPercentilesFormat": FormatFacts(
        "hgrm", "HdrHistogram percentile distributions: .hgrm files, wrk2 --latency, HistogramLogProcessor (--unit, "
        "default ms)", options=("unit", "interval"),
        markers=(DataMarker("percentile distribution", "(", "Percentile",
                            r'^[ \t]*"?Value"?[ \t,]+"?Percentile"?[ \t,]+"?TotalCount"?[ \t,]+"?1/\(1-Percentile'),)),
    "latencymap.sources.trace10046:Trace10046Format": FormatFacts(
        "oracle10046", "Oracle 10046 trace files (WAIT #..: nam='<event>' ela= .. tim=..), --event, --interval", 5,
        options=("event", "interval"),
        markers=(DataMarker("wait line", "=", "WAIT #", r"^WAIT #\d*: nam='"),)),
    "latencymap.sources.otlp.file_format:OtlpJsonFormat": FormatFacts(
        "otlp-json", "OpenTelemetry OTLP/JSON metrics, one request per line (the collector's file exporter)",
        max_line=_MB16,
        markers=(DataMarker("request line", "{", "esource", r'^[ \t]*\{[ \t]*"(?:resourceMetrics|resource_metrics)"',
                         json=True),),
        reports_unread="all"),
    "latencymap.sources.pylatencymap:PyLatencyMapFormat": FormatFacts(
        "pylatencymap", "PyLatencyMap records (<begin record> ... <end record>), incl. SystemTap/DTrace blocks", 10,
        options=("datasource", "interval"),
        markers=(DataMarker("record", "<", "record>", r"^[ \t]*<begin record>[ \t]*$", ignore_case=True),)),
    "latencymap.sources.raw_values:RawValuesFormat": FormatFacts(
        "raw", "raw latency values, one per line or '<time> <latency>' pairs (--unit, --time-unit)", -10,
        options=("unit", "time_unit", "interval"),
        reports_unread="all"),
    "latencymap.sources.spark.format:SparkEventLogFormat": FormatFacts(
        "spark-eventlog", "Spark event logs (JSON lines; paths also zstd/lz4/snappy, eventlog_v2_* dirs, dirs of "
        "logs)", 10, claims_paths=True,
        markers=(DataMarker("event line", "{", "SparkListener", r'^[ \t]*\{[ \t]*"Event"[ \t]*:[ \t]*"SparkListener',
                         json=True),),
        reports_unread="all"),
}


def load_registry(group: str = ENTRY_POINT_GROUP) -> Registry:
    """Load every plugin of `group`, each in isolation (the shipped sources and formats when first needed)."""
    registry = Registry()
    for ep in entry_points(group=group):
        shipped = SHIPPED_SOURCES.get(ep.value)
        if shipped is not None and shipped[0] == ep.name:
            registry.sources.defer(ep, Source, registry.errors, shipped[1])
            continue
        facts = SHIPPED_FORMATS.get(ep.value)
        if facts is not None and facts.name == ep.name:
            registry.formats.defer(ep, TextFormat, registry.errors, facts.summary, facts)
            continue
        try:
            obj = ep.load()
        except Exception as err:
            registry.errors[ep.name] = f"{type(err).__name__}: {err}"
            continue
        if isinstance(obj, type) and issubclass(obj, Source):
            registry.sources[obj.name] = obj
        elif isinstance(obj, type) and issubclass(obj, TextFormat):
            registry.formats[obj.name] = obj
        else:
            registry.errors[ep.name] = f"{ep.value} is neither a Source nor a TextFormat"
    return registry
