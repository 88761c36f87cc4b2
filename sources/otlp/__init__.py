"""OpenTelemetry metrics: OTLP/HTTP and OTLP/gRPC receivers (`listen --otlp`, `--otlp-grpc`) and the file exporter.

Histogram and ExponentialHistogram points become Intervals, one stream per resource, metric and attribute set.
`decode` turns OTLP JSON and protobuf into points, `expo` folds exponential buckets onto the log2 slots,
`points` handles delta and cumulative temporality, `receiver` is the HTTP server (and the worker loop both
transports share), `grpc_receiver` the gRPC server and `file_format` the sniffed reader of
`{"resourceMetrics": [...]}` lines.
"""

from __future__ import annotations

#: Where `listen --otlp` binds when no address is given: OTLP/HTTP's standard port, on loopback only.
DEFAULT_ADDRESS = "127.0.0.1:4318"
#: Where `listen --otlp-grpc` binds when no address is given: OTLP/gRPC's standard port, on loopback only.
DEFAULT_GRPC_ADDRESS = "127.0.0.1:4317"
