"""`latencymap listen --otlp [HOST:PORT]`: an OTLP/HTTP metrics receiver.

`POST /v1/metrics` with `Content-Type: application/x-protobuf` or `application/json`, optionally
`Content-Encoding: gzip`. Answers 200 with an empty `ExportMetricsServiceResponse` in the request's encoding
(`partial_success` counts the points it rejected), 400 with a `google.rpc.Status` message for a body it cannot
decode, 415 for other content types or encodings, 413 past MAX_BODY bytes, 404 for other paths, 503 while the
viewer is behind (the exporter retries). It binds only where it is told, 127.0.0.1:4318 by default (OTLP/HTTP's
port, loopback only); it has no authentication, so bind another address only on a network you trust.

The HTTP server runs in daemon threads that only decode; a queue (`Inbox`) hands the points to the source's worker
thread, which turns them into Intervals (all stream state lives there) and shuts the server down when the
source stops. `consume` is that worker side, shared with the gRPC transport (`grpc_receiver`). A run that got no
latency histogram but skipped something (other metrics, other units, requests it could not decode) ends as an input
with nothing readable does (`flow.pipeline.failing_if_unread`: exit code 1); one that got no request, `No data.`.

A request answered 200 was queued, and is in the run of a command that reads its flow to the end (`report`, the
plain view, `--emit`; the TUI at SIGTERM or SIGHUP). When a signal stops it (only noted: `latencymap.core.stopping`)
the worker closes the queue, so that later requests get 503 with Retry-After (gRPC: UNAVAILABLE), takes in what it
holds (DRAIN_S at most; what is left then is counted and said), and ends: the command then ends as the signal ends it
(`report` writes its report, the TUI's recording is finished); `--duration` asks it the same at its deadline
(`flow.pipeline._on_time`), and the run then ends as it would have. A second signal ends it at once; the acknowledged
requests not passed on are counted and said as the command ends. The TUI's `q` asks the same drain and waits for it
when a recording is to keep what was acknowledged; without one it quits at once, and what was queued is counted and
said, as after a second signal.
"""

from __future__ import annotations

import json
import queue
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from latencymap.core import stopping
from latencymap.core.at_exit import close_at_exit, forget_at_exit, say_at_exit
from latencymap.core.json_input import TOO_DEEP, json_input
from latencymap.core.model import Notice, Status
from latencymap.core.sanitize import clean_text
from latencymap.core.stopping import DRAIN_S
from latencymap.flow.inputs import InputError
from latencymap.flow.pipeline import failing_if_unread
from latencymap.plugins import Item
from latencymap.sources.listen_wait import Waiting
from latencymap.sources.otlp import DEFAULT_ADDRESS
from latencymap.sources.otlp.decode import DecodeError, decode_json, decode_protobuf, protobuf_available
from latencymap.sources.otlp.points import Decoded, PointStreams

PROTOBUF, JSON = "application/x-protobuf", "application/json"
PATH = "/v1/metrics"
MAX_BODY = 16 * 1024 * 1024
#: Requests decoded but not yet turned into intervals; past this the receiver answers 503.
QUEUE_REQUESTS = 256
#: How often the worker and the HTTP server look whether they are to stop: a stop asked (a signal, the TUI's `q` with a
#: recording) is taken up within it (0.2 s made `q` with a recording wait 0.1 s more, on average).
POLL_S = 0.05
INVALID_ARGUMENT = 3
NAME = "listen --otlp"


#: Why a transport answers "retry" (HTTP 503, gRPC UNAVAILABLE): the queue is full, or the receiver is stopping.
BEHIND = "latencymap is behind; retry"
STOPPING = "latencymap is stopping: the request was not taken; retry"


class Inbox:
    """The bounded queue between a transport's threads and `consume`: what they decoded (and acknowledge once it is
    queued), or a message for a notice. Closed as the receiver stops, it takes nothing more: "closed? else put" holds
    the lock that `close` takes, so nothing is queued (and acknowledged) after the close."""

    def __init__(self, size: int) -> None:
        self.queue: queue.Queue[tuple[str, Decoded | str]] = queue.Queue(size)
        self._lock = threading.Lock()
        self.closed = False

    def put(self, origin: str, what: Decoded | str) -> str | None:
        """Queue (origin, `what`); None when queued, else why not (BEHIND or STOPPING: the sender is to retry)."""
        with self._lock:
            if self.closed:
                return STOPPING
            try:
                self.queue.put_nowait((origin, what))
            except queue.Full:
                return BEHIND
        return None

    def close(self) -> None:
        """Take nothing more."""
        with self._lock:
            self.closed = True

    def discard(self) -> int:
        """Empty the queue; the number of requests (not notices) it held."""
        requests = 0
        while True:
            try:
                _, what = self.queue.get_nowait()
            except queue.Empty:
                return requests
            requests += not isinstance(what, str)


def parse_address(text: str, default: str = DEFAULT_ADDRESS) -> tuple[str, int]:
    """(host, port) of `HOST:PORT`, `[IPv6]:PORT`, `:PORT` or `PORT` (host 127.0.0.1)."""
    text = (text or default).strip()
    host, _, port = text.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"expected HOST:PORT (e.g. {default}), got {text!r}")
    return host, int(port)


def new_inbox() -> Inbox:
    """The bounded queue between a transport and `consume`; a transport answers "retry" while it is full."""
    return Inbox(QUEUE_REQUESTS)


def tell(inbox: Inbox, origin: str, message: str) -> None:
    """Queue a notice for the view (dropped when the queue is full or closed: the client hears about it anyway)."""
    inbox.put(origin, message)


class _Worker:
    """`consume`'s state that the command's end reaches from another thread."""

    def __init__(self, inbox: Inbox, name: str) -> None:
        self.inbox, self.name = inbox, name
        self.asked = threading.Event()  # the command ends: take in what was acknowledged, and end
        self.holding = False  # a request's items are being passed on
        self.said = False  # what was not passed on was counted and said

    def end(self) -> None:
        """The command ends: ask the loop to take in what was acknowledged and end. Not waited for: `q` in the TUI
        without a recording quits at once (a drain of a full queue took 2-3 s)."""
        self.asked.set()

    def take(self, streams: PointStreams, origin: str, what: Decoded | str) -> Iterator[Item]:
        """The items of one queued request, or its notice."""
        if isinstance(what, str):
            yield Notice(f"{origin}: {what}")
            return
        self.holding = True
        yield from streams.feed(what, origin)
        self.holding = False

    def drain(self, streams: PointStreams) -> Iterator[Item]:
        """Close the intake, then take in what it had queued (and acknowledged), for DRAIN_S at most."""
        self.inbox.close()
        deadline = time.monotonic() + DRAIN_S
        while time.monotonic() < deadline:
            try:
                origin, what = self.inbox.queue.get_nowait()
            except queue.Empty:
                return
            yield from self.take(streams, origin, what)
        left = self.inbox.discard()
        if left:
            yield Notice(f"{self.name}: acknowledged requests left unread as it stopped: {left:,}: taking them in took "
                         f"longer than {DRAIN_S:g} s", skipped=0)

    def lost(self) -> Iterator[Notice]:
        """Close the intake; what was acknowledged and not passed on, as the loop ends before taking it in (said at the
        command's end), once: from the command's end too, where the loop runs in another thread (the TUI's)."""
        self.inbox.close()
        left = self.inbox.discard() + self.holding
        if left and not self.said:
            self.said = True
            part = " (one of them in part)" if self.holding else ""
            yield Notice(f"{self.name}: acknowledged requests not passed on: {left:,}{part}: the run ended before "
                         "they were taken in", skipped=0)


def consume(inbox: Inbox, greeting: Iterable[Notice], idle_timeout: float | None, stop: Callable[[], None],
            name: str = NAME, start_timeout: float | None = None) -> Iterator[Item]:
    """`greeting`, then Intervals and notices of what arrives on `inbox` until idle (`idle_timeout` s after the last
    request, none before the first: `listen_wait.Waiting`, with `start_timeout`), or until a stop is asked (by a
    signal: `stopping`; or by the command's end): then the intake is closed and what it had acknowledged is taken
    in first. Then `stop()`."""
    streams = PointStreams()
    rest = say_at_exit(streams.finish)  # a run ended before the input's (Ctrl-C, SIGTERM, --duration) says it too
    worker = _Worker(inbox, name)
    close_at_exit(worker.end)  # called before `rest`: the last registered is called first
    unsaid = say_at_exit(worker.lost)  # a run that ends before this loop's `finally` says it too (the TUI's)
    try:
        with stopping.ends_itself():
            yield from greeting
            waiting = Waiting(idle_timeout, start_timeout, f"{name}: no request came")
            while not (worker.asked.is_set() or stopping.to_stop()):
                try:
                    origin, what = inbox.queue.get(timeout=POLL_S)
                except queue.Empty:
                    if over := waiting.over():
                        if isinstance(over, Notice):
                            yield over
                        break
                    continue
                yield from worker.take(streams, origin, what)
                waiting.left()
            else:
                yield from worker.drain(streams)
            yield from streams.finish()
            yield from streams.none_taken(name, "received")
            forget_at_exit(rest)
    finally:
        forget_at_exit(worker.end)
        forget_at_exit(unsaid)
        lost = list(worker.lost())
        if lost:
            say_at_exit(lambda: lost)
        stop()


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def status_body(message: str, protobuf: bool) -> bytes:
    """A `google.rpc.Status` {code: INVALID_ARGUMENT, message} in protobuf or JSON."""
    if not protobuf:
        return json.dumps({"code": INVALID_ARGUMENT, "message": message}).encode()
    text = message.encode()
    return b"\x08" + _varint(INVALID_ARGUMENT) + b"\x12" + _varint(len(text)) + text


def success_body(rejected: int, message: str, protobuf: bool) -> bytes:
    """An `ExportMetricsServiceResponse`, with `partial_success` when points were rejected."""
    if protobuf:
        from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceResponse

        response = ExportMetricsServiceResponse()
        if rejected:
            response.partial_success.rejected_data_points = rejected
            response.partial_success.error_message = message
        return response.SerializeToString()
    body = {"partialSuccess": {"rejectedDataPoints": str(rejected), "errorMessage": message}} if rejected else {}
    return json.dumps(body).encode()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    inbox: Inbox
    protobuf: bool
    told: set[tuple[str, str]]  # (peer host, kind) of the mistakes told once
    told_lock: threading.Lock


#: What a connection that is no OTLP/HTTP request most likely is, and what to do about it.
_HINTS = {
    "h2": "an HTTP/2 connection preface: an OTLP/gRPC client is talking to the OTLP/HTTP port: use --otlp-grpc "
          "(port 4317), or the exporter's http/protobuf protocol with http://HOST:PORT/v1/metrics",
    "tls": "a TLS handshake on a plain-HTTP port: use http:// in the exporter's endpoint, not https:// (latencymap "
           "has no TLS; put a Collector in front for that)",
    "OPTIONS": f"OPTIONS: a browser exporter's CORS preflight, which latencymap does not answer; expected POST {PATH} "
               "(send from a server-side exporter, or through a Collector)",
    "HEAD": f"HEAD: expected POST {PATH}",
}


class _V6Server(_Server):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    server_version = "latencymap-otlp"
    protocol_version = "HTTP/1.0"
    timeout = 30

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: what matters reaches the view as notices."""

    def _peer(self) -> str:
        host, port = self.client_address[:2]
        return f"{NAME}: {host}:{port}"

    def _reply(self, code: int, body: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _refuse(self, code: int, message: str, kind: str | None = None) -> None:
        """Answer `code` with `message` and tell the view."""
        tell(self.server.inbox, self._peer(), f"{self.command} {clean_text(self.path, 80)}: {message}")
        if kind is None:
            self._reply(code, (message + "\n").encode(), "text/plain; charset=utf-8")
        else:
            self._reply(code, status_body(message, kind == PROTOBUF), kind)

    def _other_method(self) -> None:
        self._refuse(405, f"expected POST {PATH}")

    do_GET = do_PUT = do_DELETE = do_PATCH = _other_method

    def _tell_once(self, kind: str, message: str) -> None:
        """Tell the view `message`, once per peer host and kind (an exporter retries the same mistake)."""
        once = (str(self.client_address[0]), kind)
        with self.server.told_lock:
            if once in self.server.told:
                return
            self.server.told.add(once)
        tell(self.server.inbox, self._peer(), message)

    def do_OPTIONS(self) -> None:
        self._tell_once("OPTIONS", _HINTS["OPTIONS"])
        self._reply(405, f"expected POST {PATH}\n".encode(), "text/plain; charset=utf-8", {"Allow": "POST"})

    def do_HEAD(self) -> None:
        self._tell_once("HEAD", _HINTS["HEAD"])
        self.send_response(405)
        self.send_header("Allow", "POST")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def handle(self) -> None:
        """A TLS handshake is told at once (it may hold no line end to read a request line up to)."""
        try:
            first = self.connection.recv(3, socket.MSG_PEEK)
        except OSError:
            return
        if first[:2] == b"\x16\x03":
            self._tell_once("tls", _HINTS["tls"])
            return
        super().handle()

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (a request line it cannot read, a method it does not know) are told too."""
        line = getattr(self, "raw_requestline", b"") or b""
        if line.startswith(b"PRI * HTTP/2"):
            self._tell_once("h2", _HINTS["h2"])
        else:
            shown = clean_text(line.decode("latin-1").strip(), 80)
            self._tell_once(f"http {code}", f"{code} {clean_text(message or '', 120)}: {shown!r} is not an OTLP/HTTP "
                            f"request (expected POST {PATH})")
        super().send_error(code, message, explain)

    def do_POST(self) -> None:
        if urlsplit(self.path).path != PATH:
            self._refuse(404, f"latencymap receives OTLP metrics only, at POST {PATH}")
            return
        kind = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if kind not in (PROTOBUF, JSON):
            self._refuse(415, f"Content-Type {clean_text(kind, 60)!r}; expected {PROTOBUF} or {JSON}")
            return
        if kind == PROTOBUF and not self.server.protobuf:
            self._refuse(415, f"{PROTOBUF} needs the opentelemetry-proto package (pip install 'latencymap[otlp]'); "
                         f"{JSON} works without it")
            return
        body = self._body(kind)
        if body is None:
            return
        try:
            decoded = decode_protobuf(body) if kind == PROTOBUF else _decode_json_body(body)
        except DecodeError as err:
            self._refuse(400, f"{err}", kind)
            return
        why = self.server.inbox.put(self._peer(), decoded)
        if why is not None:  # the queue is full, or the receiver is stopping: the exporter retries
            self._reply(503, f"{why}\n".encode(), "text/plain; charset=utf-8", {"Retry-After": "1"})
            return
        message = "; ".join(decoded.problems[:3])
        self._reply(200, success_body(len(decoded.problems), message, kind == PROTOBUF), kind)

    def _body(self, kind: str) -> bytes | None:
        """The request body, gunzipped; None after answering an error."""
        length = self.headers.get("Content-Length")
        if length is None:
            self._refuse(411, "expected a Content-Length header", kind)
            return None
        if not length.strip().isdigit():
            self._refuse(400, f"Content-Length {clean_text(length, 40)!r} is not a length (a number of bytes)", kind)
            return None
        if int(length) > MAX_BODY:
            self.close_connection = True
            self._refuse(413, f"body of {int(length)} bytes; at most {MAX_BODY} are read", kind)
            return None
        try:
            body = self.rfile.read(int(length))
        except TimeoutError:
            self.close_connection = True
            tell(self.server.inbox, self._peer(), f"{self.command} {clean_text(self.path, 80)}: fewer bytes than its "
                 f"Content-Length ({int(length)}) came in {self.timeout} s; dropped")
            return None
        encoding = (self.headers.get("Content-Encoding") or "identity").strip().lower()
        if encoding == "identity":
            return body
        if encoding != "gzip":
            self._refuse(415, f"Content-Encoding {clean_text(encoding, 40)!r}; expected gzip or none", kind)
            return None
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            data = inflater.decompress(body, MAX_BODY + 1)
        except zlib.error as err:
            self._refuse(400, f"Content-Encoding gzip but the body does not inflate ({err})", kind)
            return None
        if len(data) > MAX_BODY:
            self._refuse(413, f"gzip body inflates past {MAX_BODY} bytes", kind)
            return None
        if not inflater.eof:
            self._refuse(400, "Content-Encoding gzip but the body is truncated", kind)
            return None
        return data


def _decode_json_body(body: bytes) -> Decoded:
    try:
        doc = json_input(body)
    except ValueError as err:  # UnicodeDecodeError is one
        where = f" at line {err.lineno} column {err.colno}" if isinstance(err, json.JSONDecodeError) else ""
        why = f" ({TOO_DEEP})" if str(err) == TOO_DEEP else ""
        raise DecodeError(f"invalid JSON{where}{why}; expected an OTLP/JSON ExportMetricsServiceRequest") from None
    return decode_json(doc)


def receive(address: str | None, idle_timeout: float | None = None,
            start_timeout: float | None = None) -> Iterator[Item]:
    """Intervals and notices from OTLP/HTTP exporters, until closed (or `idle_timeout` s after the last request, or
    `start_timeout` s with none)."""
    try:
        host, port = parse_address(address or DEFAULT_ADDRESS)
    except ValueError as err:
        raise InputError(f"--otlp: {err}") from None
    kind = _V6Server if ":" in host else _Server
    try:
        server = kind((host, port), _Handler)
    except OSError as err:
        raise InputError(f"--otlp {host}:{port}: cannot listen: {err.strerror or err}") from None
    server.inbox = new_inbox()
    server.protobuf = protobuf_available()
    server.told, server.told_lock = set(), threading.Lock()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL_S},
                              name="latencymap-otlp", daemon=True)
    thread.start()

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join(5)

    shown = f"[{host}]" if ":" in host else host
    where = f"http://{shown}:{server.server_address[1]}{PATH}"
    greeting: list[Notice] = [Status(f"{NAME}: receiving OpenTelemetry metrics at {where}", skipped=0)]
    if not server.protobuf:
        greeting.append(Notice(f"{NAME}: protobuf requests are refused (415) without the opentelemetry-proto "
                               "package: pip install 'latencymap[otlp]'; JSON works", skipped=0))
    yield from failing_if_unread(consume(server.inbox, greeting, idle_timeout, stop, start_timeout=start_timeout), NAME)
