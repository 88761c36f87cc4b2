"""`latencymap listen [PATH]`: live timings from instrumented programs (`latencymap.instrument`) over a UNIX socket.

Any number of writers (one per process or DDP rank) connect at once; each sends protocol records with
the `counts, interval` extension, labelled `run/rankN/phase`, so every rank is its own stream and a
slow one stands out. The socket is created with mode 0600 (only you can connect); without PATH it is
`listen.sock` in a private directory (`$XDG_RUNTIME_DIR/latencymap` or `<tmp>/latencymap-<uid>`, mode
0700), which is also where writers look by default. A stale socket left by a killed listener is
replaced; any other existing file is refused. Writer comment lines (`# latencymap-writer`,
`# latencymap-dropped`) become notices: who connected, and how many intervals a writer dropped while
the viewer was absent or slow. A writer stamps its columns with its own clock; its hello line carries that clock
at connecting, read here within the listener's read delay: a writer whose clock is `CLOCK_SKEW_S` or more off
the listener's has its columns moved onto the listener's clock, said once, so ranks on hosts whose clocks
disagree line up (a shared stall lands in the same column, and peers are compared over all their intervals).

`listen --otlp [HOST:PORT]` receives OpenTelemetry metrics over OTLP/HTTP instead, `listen --otlp-grpc
[HOST:PORT]` over OTLP/gRPC (`latencymap.sources.otlp`; gRPC needs grpcio, extra `otlp`).
"""

from __future__ import annotations

import atexit
import contextlib
import math
import os
import selectors
import socket
import stat
import time
from collections.abc import Generator, Iterator
from typing import Any, ClassVar

import click

from latencymap.core.errors import InputError
from latencymap.core.json_input import json_input
from latencymap.core.model import Interval, Notice, StreamId
from latencymap.core.sanitize import clean_label
from latencymap.plugins import Item, Source
from latencymap.protocol import ProtocolReader
from latencymap.sinks import DROPPED_PREFIX, WRITER_PREFIX, default_socket_path, parse_label
from latencymap.sources.otlp import DEFAULT_ADDRESS, DEFAULT_GRPC_ADDRESS

MAX_WRITERS = 256
READ_CHUNK = 64 * 1024
MAX_LINE = 64 * 1024
POLL_S = 0.25
#: A writer's clock this far off the listener's (seconds, either way) has its columns moved onto the listener's.
CLOCK_SKEW_S = 1.0


class ListenError(InputError):
    """The socket cannot be created; the message says why."""


def _alive(path: str) -> bool:
    """True when a listener answers on `path`."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError:
        return False
    finally:
        probe.close()
    return True


def bind_socket(path: str, mode: int = 0o600) -> socket.socket:
    """A listening, non-blocking UNIX socket at `path` with permissions `mode`; replaces only a stale socket."""
    try:
        st: os.stat_result | None = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as err:
        raise ListenError(f"{path}: {err.strerror}") from None
    if st is not None:
        if not stat.S_ISSOCK(st.st_mode):
            raise ListenError(f"{path}: exists and is not a socket; not replacing it")
        if _alive(path):
            raise ListenError(f"{path}: another listener is using this socket")
        try:
            os.unlink(path)
        except OSError as err:
            raise ListenError(f"{path}: cannot remove the stale socket: {err.strerror}") from None
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    staging = f"{path}.{os.getpid()}.tmp"  # bound and listening before it appears under its name
    old = os.umask(0o777 & ~mode)
    try:
        server.bind(staging)
        os.chmod(staging, mode)
        server.listen(MAX_WRITERS)
        os.rename(staging, path)
    except OSError as err:
        server.close()
        with contextlib.suppress(OSError):
            os.unlink(staging)
        raise ListenError(f"{path}: cannot listen: {err.strerror or err}") from None
    finally:
        os.umask(old)
    server.setblocking(False)
    return server


class _Writer:
    """One connection: splits bytes into lines, reads records, turns comment lines into notices.

    A label that another connection sends (or sent) is that connection's: this one's records of it get their own
    label (`run/rankN.pid<PID>/phase` when it said who it is, `LABEL [writer N]` when not), with a note, so two
    connections' counts never add up in one stream. A writer of the same run and rank connecting after the last
    one left (a restarted rank) continues its streams.
    """

    def __init__(self, conn: socket.socket, others: dict[socket.socket, _Writer],
                 owners: dict[str, object]) -> None:
        self.conn = conn
        self.number = 0  # given at its first bytes: a connection that sends nothing is no writer
        self.name = "writer ?"
        self.reader = ProtocolReader(self.name)
        self.others = others
        self.owners = owners  # label -> who sends it: a (run, rank) identity, or an unidentified connection
        self.identity: tuple[str, int] | None = None
        self.pid = 0
        self.rename: str | None = None
        self.intervals = 0
        self.shift = 0.0  # seconds added to this writer's stamps: the listener's clock less its own
        self._labels: dict[StreamId, StreamId] = {}  # as sent -> as shown
        self._partial = b""
        self._skip_line = False

    def start(self, number: int) -> None:
        """Name the connection `writer <number>`: it sent its first bytes."""
        self.number = number
        self.name = self.reader.name = f"writer {number}"

    def feed(self, data: bytes) -> Iterator[Item]:
        """Items from a chunk of bytes (a line may span chunks)."""
        *lines, rest = (self._partial + data).split(b"\n")
        if self._skip_line and lines:
            lines[0], self._skip_line = b"", False
        self._partial = rest
        if len(rest) > MAX_LINE:
            self._partial, self._skip_line = b"", True
            yield Notice(f"listen: {self.name}: line longer than {MAX_LINE} bytes dropped")
        batch: list[str] = []
        for raw in lines:
            line = raw.decode("utf-8", "replace")
            if line.startswith(("# latencymap-writer", "# latencymap-dropped")):
                yield from self._records(batch)
                batch = []
                yield from self._comment(line)
            else:
                batch.append(line)
        yield from self._records(batch)

    def _records(self, lines: list[str]) -> Iterator[Item]:
        for item in self.reader.feed(lines):
            if isinstance(item, Interval):
                self.intervals += 1
                shown = self._labels.get(item.stream)
                if shown is None:
                    shown = yield from self._own(item.stream)
                item.stream = shown
                if self.shift:  # the writer's dates are its own clock's: the recording writes the new ones
                    item.start, item.end, item.date, item.start_date = \
                        item.start + self.shift, item.end + self.shift, "", ""
            yield item

    def _own(self, stream: StreamId) -> Generator[Notice, None, StreamId]:
        """The stream this connection's records of `stream` go to (see the class); a note when it is not `stream`."""
        shown = self._renamed(stream, self.rename) if self.rename else stream
        key: object = self.identity if self.identity is not None else self
        owner = self.owners.setdefault(shown.label, key)
        if owner != key:
            tag = f"pid{self.pid}" if self.identity is not None else f"writer {self.number}"
            shown = self._renamed(stream, tag)
            self.owners.setdefault(shown.label, key)
            yield Notice(f"listen: {self.name} sends '{clean_label(stream.label)}', which another writer sent first: "
                         f"its records of it are shown as '{clean_label(shown.label)}'", skipped=0)
        self._labels[stream] = shown
        return shown

    def _renamed(self, stream: StreamId, tag: str) -> StreamId:
        parsed = parse_label(stream.label)
        if parsed is None or " " in tag:
            return StreamId(f"{stream.label} [{tag}]", stream.datasource, stream.unit)
        run, rank, phase = parsed
        return StreamId(f"{run}/rank{rank}.{tag}/{phase}", stream.datasource, stream.unit)

    def _comment(self, line: str) -> Iterator[Notice]:
        prefix = WRITER_PREFIX if line.startswith(WRITER_PREFIX) else DROPPED_PREFIX
        try:
            info = json_input(line[len(prefix):])
            assert isinstance(info, dict)
        except (ValueError, AssertionError):
            yield Notice(f"listen: {self.name}: unreadable line {line[:80]!r}")
            return
        if prefix == DROPPED_PREFIX:
            yield Notice(f"listen: {self.name} dropped {int(info.get('intervals', 0))} intervals "
                         f"({int(info.get('events', 0))} events) so far: the viewer was absent or slow", skipped=0)
            return
        pid = self.pid = int(info.get("pid", 0))
        self.identity = (str(info.get("run", "")), int(info.get("rank", 0)))
        taken = any(w.identity == self.identity for w in self.others.values() if w is not self)
        self.rename = f"pid{pid}" if taken else None
        self.name = f"{self.identity[0]}/rank{self.identity[1]} (pid {pid})"
        self.reader.name = self.name
        again = f", reconnect {int(info['connects']) - 1}" if int(info.get("connects", 1)) > 1 else ""
        also = "; same run and rank as another writer: its streams are labelled by pid" if taken else ""
        yield Notice(f"listen: {self.name} connected{again}{also}", skipped=0)
        yield from self._clock(info.get("time"))

    def _clock(self, sent: object) -> Iterator[Notice]:
        """Compare the writer's clock at its hello (`sent`) with the listener's now; move its columns when they
        are CLOCK_SKEW_S or more apart (a reconnect measures again)."""
        if isinstance(sent, bool) or not isinstance(sent, int | float) or not math.isfinite(sent):
            return
        off = time.time() - sent
        self.shift = off if abs(off) >= CLOCK_SKEW_S else 0.0
        if self.shift:
            way = "ahead of" if off < 0 else "behind"
            yield Notice(f"listen: {self.name}: its clock is {abs(off):.1f}s {way} this listener's: its intervals "
                         f"are placed by the listener's clock ({off:+.1f}s each), so they line up with other "
                         "writers'", skipped=0)

    def finish(self) -> Iterator[Item]:
        """The connection closed: report an unterminated record and say goodbye."""
        yield from self.reader.close()
        yield Notice(f"listen: {self.name} disconnected after {self.intervals} intervals", skipped=0)


class ListenSource(Source):
    """Accepts instrumented writers on a UNIX socket and yields their intervals as they arrive."""

    name: ClassVar[str] = "listen"
    examples: ClassVar[tuple[str, ...]] = (
        "latencymap listen /tmp/lm.sock",
        "latencymap listen /tmp/lm.sock --record run.txt --writers 4",
        "latencymap listen --otlp-grpc --record otel.txt",
    )
    summary: ClassVar[str] = ("Live training-loop timings (latencymap.instrument) from many processes or ranks "
                              "over a UNIX socket, or OpenTelemetry metrics over OTLP/HTTP (--otlp) or OTLP/gRPC "
                              "(--otlp-grpc).")

    @classmethod
    def params(cls) -> list[click.Parameter]:
        return [
            click.Argument(["path"], required=False, default=None, metavar="[PATH]"),
            click.Option(["--mode"], default="600", show_default=True, metavar="OCTAL",
                         help="Socket permissions; 600: only you can connect."),
            click.Option(["--writers"], type=click.IntRange(min=1), default=None, metavar="N",
                         help="Stop once N writers have connected and all have disconnected."),
            click.Option(["--idle-timeout", "idle_timeout"], type=click.FloatRange(min=0, min_open=True), default=None,
                         metavar="S",
                         help="Stop after S seconds with no writer connected (--otlp, --otlp-grpc: with no request)."),
            click.Option(["--otlp"], is_flag=False, flag_value=DEFAULT_ADDRESS, default=None, metavar="[HOST:PORT]",
                         help=f"Receive OpenTelemetry histograms at POST /v1/metrics (OTLP/HTTP, protobuf or JSON) "
                              f"instead of the socket; bound only there, {DEFAULT_ADDRESS} when no address is given. "
                              "No authentication: bind only on networks you trust."),
            click.Option(["--otlp-grpc", "otlp_grpc"], is_flag=False, flag_value=DEFAULT_GRPC_ADDRESS, default=None,
                         metavar="[HOST:PORT]",
                         help=f"Receive OpenTelemetry histograms over OTLP/gRPC (MetricsService/Export, where "
                              f"exporters send by default) instead of the socket; bound only there, "
                              f"{DEFAULT_GRPC_ADDRESS} when no address is given. No TLS, no authentication: bind "
                              f"only on networks you trust. Needs grpcio: pip install 'latencymap[otlp]'."),
        ]

    @classmethod
    def unavailable(cls) -> str | None:
        if not hasattr(socket, "AF_UNIX"):
            return "UNIX sockets are not available on this platform; record to a file instead (sink='run.txt')"
        return None

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.path: str | None = options.get("path")
        try:
            self.mode = int(str(options.get("mode") or "600"), 8)
        except ValueError:
            raise click.BadParameter("expected octal permissions such as 600", param_hint="--mode") from None
        self.writers: int | None = options.get("writers")
        self.idle_timeout: float | None = options.get("idle_timeout")
        self.otlp: str | None = options.get("otlp")
        self.otlp_grpc: str | None = options.get("otlp_grpc")
        if self.otlp and self.otlp_grpc:
            raise click.UsageError("--otlp (HTTP) and --otlp-grpc: give one of them")
        if self.otlp and (self.path or self.writers is not None):
            raise click.UsageError("--otlp receives over HTTP: give no socket PATH and no --writers with it")
        if self.otlp_grpc:
            if self.path or self.writers is not None:
                raise click.UsageError("--otlp-grpc receives over gRPC: give no socket PATH and no --writers with it")
            _check_grpc()
        self.accepted = 0

    def describe(self) -> dict[str, Any]:
        if self.otlp:
            return {"source": self.name, "otlp": self.otlp}
        if self.otlp_grpc:
            return {"source": self.name, "otlp_grpc": self.otlp_grpc}
        return {"source": self.name, "path": self.path, "mode": oct(self.mode)}

    def items(self) -> Iterator[Item]:
        if self.otlp:
            from latencymap.sources.otlp.receiver import receive

            yield from receive(self.otlp, self.idle_timeout)
            return
        if self.otlp_grpc:
            from latencymap.sources.otlp.grpc_receiver import receive as receive_grpc

            yield from receive_grpc(self.otlp_grpc, self.idle_timeout)
            return
        if self.path is None:
            try:
                self.path = default_socket_path()
            except OSError as err:
                raise ListenError(str(err)) from None
        path = self.path
        server = bind_socket(path, self.mode)
        inode = os.stat(path).st_ino
        cleanup = atexit.register(_unlink_if_ours, path, inode)
        try:
            yield Notice(f"listen: waiting for writers on {path}", skipped=0)
            yield from self._serve(server)
        finally:
            server.close()
            _unlink_if_ours(path, inode)
            atexit.unregister(cleanup)

    def _serve(self, server: socket.socket) -> Iterator[Item]:
        sel = selectors.DefaultSelector()
        sel.register(server, selectors.EVENT_READ, None)
        writers: dict[socket.socket, _Writer] = {}
        owners: dict[str, object] = {}
        closed = 0
        idle_since = time.monotonic()
        try:
            while True:
                if self.writers is not None and closed >= self.writers and not writers:
                    return
                if self.idle_timeout is not None and not writers and time.monotonic() - idle_since >= self.idle_timeout:
                    return
                for key, _ in sel.select(timeout=POLL_S):
                    if key.data is None:
                        yield from self._accept(server, sel, writers, owners)
                        continue
                    writer: _Writer = key.data
                    try:
                        data = writer.conn.recv(READ_CHUNK)
                    except (BlockingIOError, InterruptedError):
                        continue
                    except OSError:
                        data = b""
                    if data:
                        if not writer.number:
                            self.accepted += 1
                            writer.start(self.accepted)
                        yield from writer.feed(data)
                        continue
                    sel.unregister(writer.conn)
                    writer.conn.close()
                    del writers[writer.conn]
                    if not writer.number:  # sent nothing (a probe, a health check): not a writer
                        continue
                    yield from writer.finish()
                    closed += 1
                    idle_since = time.monotonic()
        finally:
            for conn in writers:
                conn.close()
            sel.close()

    def _accept(self, server: socket.socket, sel: selectors.BaseSelector, writers: dict[socket.socket, _Writer],
                owners: dict[str, object]) -> Iterator[Item]:
        try:
            conn, _ = server.accept()
        except (BlockingIOError, InterruptedError):
            return
        if len(writers) >= MAX_WRITERS:
            conn.close()
            yield Notice(f"listen: more than {MAX_WRITERS} writers at once; one refused")
            return
        conn.setblocking(False)
        writers[conn] = _Writer(conn, writers, owners)
        sel.register(conn, selectors.EVENT_READ, writers[conn])


def _check_grpc() -> None:
    """A usage error with the remedy when `--otlp-grpc` cannot run here (grpcio or opentelemetry-proto missing)."""
    try:
        from latencymap.sources.otlp.grpc_receiver import unavailable
    except ImportError as err:
        if (err.name or "").partition(".")[0] != "grpc":
            raise
        raise click.UsageError("--otlp-grpc needs the grpcio package: pip install 'latencymap[otlp]' "
                               "(--otlp, OTLP/HTTP, works without it)") from None
    why = unavailable()
    if why is not None:
        raise click.UsageError(why)


def _unlink_if_ours(path: str, inode: int) -> None:
    """Remove the socket file unless another listener replaced it."""
    with contextlib.suppress(OSError):
        if os.stat(path).st_ino == inode:
            os.unlink(path)
