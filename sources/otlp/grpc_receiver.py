"""`latencymap listen --otlp-grpc [HOST:PORT]`: an OTLP/gRPC metrics receiver.

Serves `opentelemetry.proto.collector.metrics.v1.MetricsService/Export` (unary), where exporters send by default
(the SDKs' `otlp` exporters, the Collector's `otlp` exporter). Requests go through the same protobuf decoding and
the same worker loop (`receiver.consume`) as OTLP/HTTP. Answers an `ExportMetricsServiceResponse`
(`partial_success` counts the points it rejected), INVALID_ARGUMENT for a body it cannot decode, UNAVAILABLE
with a 1 s `RetryInfo` while the viewer is behind (exporters retry), UNIMPLEMENTED for other methods, and
RESOURCE_EXHAUSTED past MAX_BODY bytes (inflated: gRPC inflates gzip requests), with a notice; past GRPC_LIMIT
gRPC itself refuses the request before latencymap sees it, without one. It binds only where it is
told, 127.0.0.1:4317 by default (OTLP/gRPC's port, loopback only), without TLS or authentication: bind another
address only on a network you trust.

grpcio is imported here only (extra `otlp`); `listen --otlp` (HTTP) works without it.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc

from latencymap.core.model import Status
from latencymap.core.sanitize import clean_text
from latencymap.flow.inputs import InputError
from latencymap.flow.pipeline import failing_if_unread
from latencymap.plugins import Item
from latencymap.sources.otlp import DEFAULT_GRPC_ADDRESS
from latencymap.sources.otlp.decode import DecodeError, decode_protobuf, protobuf_available
from latencymap.sources.otlp.receiver import MAX_BODY, Inbox, consume, new_inbox, parse_address, success_body, tell

SERVICE = "opentelemetry.proto.collector.metrics.v1.MetricsService"
METHOD = f"/{SERVICE}/Export"
NAME = "listen --otlp-grpc"
#: Threads that decode requests; the worker loop does the rest.
WORKERS = 4
STOP_GRACE_S = 0.5
#: `google.rpc.RetryInfo {retry_delay: {seconds: 1}}`, the trailer OTLP exporters read before retrying.
RETRY_INFO = b"\x0a\x02\x08\x01"
#: gRPC refuses requests past this many bytes (inflated) unseen; between MAX_BODY and it, the receiver refuses them
#: itself and says so.
GRPC_LIMIT = 2 * MAX_BODY
#: No SO_REUSEPORT, gRPC's default on Linux, which would let a second receiver share the port.
OPTIONS = [("grpc.max_receive_message_length", GRPC_LIMIT), ("grpc.so_reuseport", 0)]


def unavailable() -> str | None:
    """Why `--otlp-grpc` cannot run here, with the remedy; None when it can (grpcio is imported already)."""
    if not protobuf_available():
        return "--otlp-grpc needs the opentelemetry-proto package: pip install 'latencymap[otlp]'"
    return None


def _origin(context: grpc.ServicerContext) -> str:
    return f"{NAME}: {clean_text(context.peer() or 'unknown peer', 80)}"


def _fail(context: grpc.ServicerContext, code: grpc.StatusCode, message: str) -> bytes:
    """End the call with `code` and `message`."""
    context.abort(code, message)
    raise AssertionError("not reached: abort raises")


def _export(inbox: Inbox) -> Callable[[bytes, grpc.ServicerContext], bytes]:
    """The Export method: bytes of an ExportMetricsServiceRequest in, of an ExportMetricsServiceResponse out."""

    def export(body: bytes, context: grpc.ServicerContext) -> bytes:
        if len(body) > MAX_BODY:
            message = f"request of {len(body)} bytes (inflated); at most {MAX_BODY} are read"
            tell(inbox, _origin(context), f"Export: {message}; refused")
            return _fail(context, grpc.StatusCode.RESOURCE_EXHAUSTED, message)
        try:
            decoded = decode_protobuf(body)
        except DecodeError as err:
            tell(inbox, _origin(context), f"Export: {err}")
            return _fail(context, grpc.StatusCode.INVALID_ARGUMENT, str(err))
        why = inbox.put(_origin(context), decoded)
        if why is not None:  # the queue is full, or the receiver is stopping: the exporter retries
            context.set_trailing_metadata((("google.rpc.retryinfo-bin", RETRY_INFO),))
            return _fail(context, grpc.StatusCode.UNAVAILABLE, why)
        return success_body(len(decoded.problems), "; ".join(decoded.problems[:3]), protobuf=True)

    return export


def _refuse(inbox: Inbox, method: str) -> Callable[[bytes, grpc.ServicerContext], bytes]:
    """Any other method: UNIMPLEMENTED, and a notice naming it."""

    def refuse(body: bytes, context: grpc.ServicerContext) -> bytes:
        message = f"latencymap receives OTLP metrics only, at {SERVICE}/Export"
        tell(inbox, _origin(context), f"{clean_text(method, 100)}: {message}")
        return _fail(context, grpc.StatusCode.UNIMPLEMENTED, message)

    return refuse


class _Handlers(grpc.GenericRpcHandler):
    """Export for the metrics service, a refusal with a notice for anything else."""

    def __init__(self, inbox: Inbox) -> None:
        self.export = grpc.unary_unary_rpc_method_handler(_export(inbox))
        self.inbox = inbox

    def service(self, handler_call_details: Any) -> Any:
        method = str(handler_call_details.method)
        if method == METHOD:
            return self.export
        return grpc.unary_unary_rpc_method_handler(_refuse(self.inbox, method))


def _check_free(host: str, port: int, shown: str) -> None:
    """Raise InputError naming the address when it cannot be bound (gRPC's own error does not say why)."""
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as err:
        raise InputError(f"--otlp-grpc {shown}: cannot listen: {err.strerror or err}") from None
    for family, kind, proto, _, address in addresses:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC binds
            try:
                probe.bind(address)
            except OSError as err:
                raise InputError(f"--otlp-grpc {shown}: cannot listen: {err.strerror or err}") from None


def receive(address: str | None, idle_timeout: float | None = None,
            start_timeout: float | None = None) -> Iterator[Item]:
    """Intervals and notices from OTLP/gRPC exporters, until closed (or `idle_timeout` s after the last request, or
    `start_timeout` s with none)."""
    try:
        host, port = parse_address(address or DEFAULT_GRPC_ADDRESS, DEFAULT_GRPC_ADDRESS)
    except ValueError as err:
        raise InputError(f"--otlp-grpc: {err}") from None
    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if port:
        _check_free(host, port, shown)
    inbox = new_inbox()
    pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="latencymap-otlp-grpc")
    server = grpc.server(pool, handlers=[_Handlers(inbox)], options=OPTIONS)
    try:
        bound = server.add_insecure_port(shown)  # 0 or RuntimeError when it cannot, depending on the version
    except RuntimeError:
        bound = 0
    if not bound:
        server.stop(None)
        pool.shutdown()
        raise InputError(f"--otlp-grpc {shown}: cannot listen (address in use or not of this machine?)")
    server.start()

    def stop() -> None:
        server.stop(STOP_GRACE_S).wait(5)
        pool.shutdown(wait=True, cancel_futures=True)

    shown = f"[{host}]:{bound}" if ":" in host else f"{host}:{bound}"
    greeting = [Status(f"{NAME}: receiving OpenTelemetry metrics over OTLP/gRPC at {shown}", skipped=0)]
    yield from failing_if_unread(consume(inbox, greeting, idle_timeout, stop, NAME, start_timeout), NAME)
