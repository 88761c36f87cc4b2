"""`latencymap listen [PATH]`: live timings from instrumented programs (`latencymap.instrument`) over a UNIX socket.

Any number of writers (one per process or DDP rank) connect at once; each sends protocol records with
the `counts, interval` extension, labelled `run/rankN/phase`, so every rank is its own stream and a
slow one stands out. The socket is created with mode 0600 (only you can connect); without PATH it is
`listen.sock` in a private directory (`$XDG_RUNTIME_DIR/latencymap` or `<tmp>/latencymap-<uid>`, mode
0700), which is also where writers look by default. A stale socket left by a killed listener is
replaced; any other existing file is refused. Writer comment lines (`# latencymap-writer`,
`# latencymap-dropped`) become notices: who connected, and how many intervals a writer dropped while
the viewer was absent or slow. A writer stamps its columns with its own clock; its hello line carries that clock
at connecting, read here within the listener's read delay: a writer whose clock is
`listen_writer.CLOCK_SKEW_S` or more off the listener's has its columns moved onto the listener's clock, said once,
so ranks on hosts whose clocks disagree line up (a shared stall lands in the same column, and peers are compared
over all their intervals).

When the command ends (SIGTERM, Ctrl-C, `q`, `--duration`) the listener stops taking connections and shuts the
reading side of each one: a writer's later sends fail, so it keeps those records for the next listener, and what it
had already sent is read to its end (at most DRAIN_S) and passed on, into a recording too. What could not be passed
on (the run had ended, the deadline passed) is counted and said.

`listen --otlp [HOST:PORT]` receives OpenTelemetry metrics over OTLP/HTTP instead, `listen --otlp-grpc
[HOST:PORT]` over OTLP/gRPC (`latencymap.sources.otlp`; gRPC needs grpcio, extra `otlp`).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import selectors
import socket
import stat
import threading
import time
from collections.abc import Iterator
from typing import Any, ClassVar

import click

from latencymap.core.at_exit import close_at_exit, forget_at_exit, say_at_exit
from latencymap.core.errors import InputError
from latencymap.core.model import Interval, Notice, Status
from latencymap.plugins import Item, Source
from latencymap.sinks import default_socket_path
from latencymap.sources.listen_wait import Waiting
from latencymap.sources.listen_writer import Writer
from latencymap.sources.otlp import DEFAULT_ADDRESS, DEFAULT_GRPC_ADDRESS

MAX_WRITERS = 256
READ_CHUNK = 64 * 1024
POLL_S = 0.25
#: At the command's end, how long the listener may take to read what writers had already sent (seconds).
DRAIN_S = 1.0


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
                         help="Stop S seconds after the last writer left, if none connected since (--otlp, "
                              "--otlp-grpc: S seconds after the last request); before the first writer or request "
                              "it waits (see --start-timeout)."),
            click.Option(["--start-timeout", "start_timeout"], type=click.FloatRange(min=0, min_open=True),
                         default=None, metavar="S",
                         help="Stop if no writer has connected (--otlp, --otlp-grpc: no request has come) S "
                              "seconds after the start, saying so (default: wait)."),
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
        self.start_timeout: float | None = options.get("start_timeout")
        self.otlp: str | None = options.get("otlp")
        self.otlp_grpc: str | None = options.get("otlp_grpc")
        if self.otlp and self.otlp_grpc:
            raise click.UsageError("--otlp (HTTP) and --otlp-grpc: give one of them")
        socket_only = self.path or self.writers is not None
        if self.otlp and socket_only:
            raise click.UsageError("--otlp receives over HTTP: give no socket PATH or --writers with it")
        if self.otlp_grpc:
            if socket_only:
                raise click.UsageError("--otlp-grpc receives over gRPC: give no socket PATH or --writers with it")
            _check_grpc()
        self.accepted = 0
        self._stopping = threading.Event()
        self._done = threading.Event()
        self._wake: socket.socket | None = None
        self.lost_intervals = 0  # sent by writers, read, and not passed on: the run had ended
        self.lost_events = 0
        self.unread_bytes = 0  # sent by writers and left unread: the drain's deadline passed

    def describe(self) -> dict[str, Any]:
        if self.otlp:
            return {"source": self.name, "otlp": self.otlp}
        if self.otlp_grpc:
            return {"source": self.name, "otlp_grpc": self.otlp_grpc}
        return {"source": self.name, "path": self.path, "mode": oct(self.mode)}

    def items(self) -> Iterator[Item]:
        if self.otlp:
            from latencymap.sources.otlp.receiver import receive

            yield from receive(self.otlp, self.idle_timeout, self.start_timeout)
            return
        if self.otlp_grpc:
            from latencymap.sources.otlp.grpc_receiver import receive as receive_grpc

            yield from receive_grpc(self.otlp_grpc, self.idle_timeout, self.start_timeout)
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
        wake, self._wake = socket.socketpair()
        wake.setblocking(False)
        self._wake.setblocking(False)
        close_at_exit(self.stop)  # before the recording closes (the last registered is called first)
        try:
            yield Status(f"listen: waiting for writers on {path}", skipped=0)
            yield from self._serve(server, wake)
        finally:
            server.close()
            wake.close()
            self._wake.close()
            _unlink_if_ours(path, inode)
            atexit.unregister(cleanup)
            self._done.set()
            forget_at_exit(self.stop)

    def stop(self) -> None:
        """End serving, from any thread (the command calls it as it ends): what writers had sent is read and passed
        on, waiting at most about DRAIN_S; what was not passed on is said as the command ends."""
        self._stopping.set()
        if self._wake is not None:
            with contextlib.suppress(OSError):
                self._wake.send(b"\0")
        done = self._done.wait(DRAIN_S + POLL_S)
        if not done or self.lost_intervals or self.unread_bytes:
            say_at_exit(lambda: self._lost_notices(done))

    def _lost_notices(self, done: bool) -> Iterator[Notice]:
        """What writers had sent that this listener did not pass on, said as the command ends."""
        if self.lost_intervals:
            yield Notice(f"listen: {self.lost_intervals} intervals ({self.lost_events} events) that writers had "
                         "sent were read after the run had ended: they are not in it")
        if self.unread_bytes:
            yield Notice(f"listen: {self.unread_bytes} bytes that writers had sent were left unread: reading them "
                         f"took longer than {DRAIN_S:g}s")
        if not done:
            yield Notice(f"listen: what writers had sent was not read within {DRAIN_S + POLL_S:g}s of the end: "
                         "their last records may be lost")

    def _serve(self, server: socket.socket, wake: socket.socket) -> Iterator[Item]:
        sel = selectors.DefaultSelector()
        sel.register(server, selectors.EVENT_READ, None)
        sel.register(wake, selectors.EVENT_READ, _WAKE)
        writers: dict[socket.socket, Writer] = {}
        owners: dict[str, object] = {}
        closed = 0
        waiting = Waiting(self.idle_timeout, self.start_timeout, "listen: no writer connected")
        try:
            while True:
                if self._stopping.is_set():
                    yield from self._drain(server, sel, writers, owners)
                    return
                if self.writers is not None and closed >= self.writers and not writers:
                    return
                if over := waiting.over(busy=bool(writers)):
                    if isinstance(over, Notice):
                        yield over
                    return
                for key, _ in sel.select(timeout=POLL_S):
                    if key.data is _WAKE:
                        continue
                    if key.data is None:
                        yield from self._accept(server, sel, writers, owners)
                        continue
                    writer: Writer = key.data
                    try:
                        data = writer.conn.recv(READ_CHUNK)
                    except (BlockingIOError, InterruptedError):
                        continue
                    except OSError:
                        data = b""
                    if data:
                        yield from self._take(writer, data)
                        continue
                    sel.unregister(writer.conn)
                    writer.conn.close()
                    del writers[writer.conn]
                    if not writer.number:  # sent nothing (a probe, a health check): not a writer
                        continue
                    yield from writer.finish()
                    closed += 1
                    waiting.left()
        finally:
            for conn in writers:
                conn.close()
            sel.close()

    def _take(self, writer: Writer, data: bytes) -> Iterator[Item]:
        """The items of bytes `writer` sent; its first bytes make it a writer."""
        if not writer.number:
            self.accepted += 1
            writer.start(self.accepted)
        yield from writer.feed(data)

    def _drain(self, server: socket.socket, sel: selectors.BaseSelector, writers: dict[socket.socket, Writer],
               owners: dict[str, object]) -> Iterator[Item]:
        """The command ends: connections waiting are taken and the socket closed; each connection's reading side is
        shut (the writer's later sends fail, so it keeps those records for the next listener) and what it had sent
        read to its end, for DRAIN_S at most; then the writers' goodbyes. Intervals the flow no longer takes are
        counted (`lost_intervals`)."""
        more = True
        while more:
            count = len(writers)
            yield from self._accept(server, sel, writers, owners)
            more = len(writers) > count
        server.close()
        deadline = time.monotonic() + DRAIN_S
        items: list[Item] = []
        for conn, writer in list(writers.items()):
            items += self._rest(writer, deadline)
            if writer.number:
                items += writer.finish()
            sel.unregister(conn)
            conn.close()
            del writers[conn]
        for at, item in enumerate(items):
            try:
                yield item
            except GeneratorExit:  # the item in hand too: a flow is closed when it cannot pass an item on
                lost = [iv for iv in items[at:] if isinstance(iv, Interval)]
                self.lost_intervals += len(lost)
                self.lost_events += sum(int(iv.counts.sum()) for iv in lost)
                raise

    def _rest(self, writer: Writer, deadline: float) -> Iterator[Item]:
        """The items of what `writer` had sent and this listener had not read yet, reading until `deadline`; the bytes
        left then are counted (`unread_bytes`)."""
        conn, shut = writer.conn, False
        while True:
            try:
                data = conn.recv(READ_CHUNK)
            except (BlockingIOError, InterruptedError):
                if shut:  # a platform where shutting down does not end the stream
                    return
                with contextlib.suppress(OSError):  # read first: some platforms discard what waits unread
                    conn.shutdown(socket.SHUT_RD)
                shut = True
                continue
            except OSError:
                return
            if not data:
                return
            if time.monotonic() >= deadline:
                self.unread_bytes += len(data) + _left(conn)
                return
            yield from self._take(writer, data)

    def _accept(self, server: socket.socket, sel: selectors.BaseSelector, writers: dict[socket.socket, Writer],
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
        writers[conn] = Writer(conn, writers, owners)
        sel.register(conn, selectors.EVENT_READ, writers[conn])


_WAKE = object()  # the selector key of the socket that `stop` wakes the serving loop with


def _left(conn: socket.socket) -> int:
    """The bytes a connection still holds (its reading side shut), read and thrown away."""
    left = 0
    with contextlib.suppress(OSError):
        while data := conn.recv(READ_CHUNK):
            left += len(data)
    return left


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
