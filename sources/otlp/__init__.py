"""OpenTelemetry metrics: an OTLP/HTTP receiver (`latencymap listen --otlp`) and the collector's file exporter.

Histogram and ExponentialHistogram points become Intervals, one stream per resource, metric and attribute set.
`decode` turns OTLP JSON and protobuf into points, `expo` folds exponential buckets onto the log2 slots,
`points` handles delta and cumulative temporality, `receiver` is the HTTP server and `file_format` the
sniffed reader of `{"resourceMetrics": [...]}` lines.
"""

from __future__ import annotations

#: Where `listen --otlp` binds when no address is given: OTLP/HTTP's standard port, on loopback only.
DEFAULT_ADDRESS = "127.0.0.1:4318"
