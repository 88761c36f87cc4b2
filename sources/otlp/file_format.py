"""The OpenTelemetry collector's file exporter (`format: json`): one OTLP/JSON request per line.

Each line is an `ExportMetricsServiceRequest` (`{"resourceMetrics": [...]}`), read like a request to
`listen --otlp` (see `points` for temporality, units and stream labels). Lines of traces or logs, which the
same exporter may write to the file, are skipped with one notice; a line that is not OTLP JSON is skipped with
a message naming the file and line. The exporter's `format: proto` and compressed files are not read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import ClassVar

from latencymap.core.at_exit import forget_at_exit, say_at_exit
from latencymap.core.json_input import TOO_DEEP, json_input
from latencymap.core.model import Notice
from latencymap.plugins import Item, TextFormat

_HEAD = re.compile(r'\s*\{\s*"(resourceMetrics|resource_metrics)"\s*:')
#: A collector writes a whole batch on one line; longer lines are cut (and reported) by the input layer.
MAX_LINE = 16 * 1024 * 1024


class OtlpJsonFormat(TextFormat):
    """OTLP/JSON metrics requests, one per line."""

    name = "otlp-json"
    summary = "OpenTelemetry OTLP/JSON metrics, one request per line (the collector's file exporter)"
    max_line: ClassVar[int] = MAX_LINE

    @classmethod
    def sniff(cls, head: Sequence[str]) -> bool:
        first = next((line for line in head if line.strip()), "")
        return bool(_HEAD.match(first))

    def read(self, lines: Iterable[str], name: str) -> Iterator[Item]:
        from latencymap.sources.otlp.decode import DecodeError, decode_json  # the reader, not needed to sniff
        from latencymap.sources.otlp.points import PointStreams

        streams = PointStreams()
        rest = say_at_exit(streams.finish)  # a run ended before the file's (Ctrl-C, SIGTERM, --count) says it too
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            where = f"{name}: line {number}"
            try:
                doc = json_input(line)
            except ValueError as err:
                yield Notice(f"{where}: {_why(line, err)}; expected one OTLP/JSON metrics request "
                             '({"resourceMetrics": [...]}) per line')
                continue
            try:
                decoded = decode_json(doc)
            except DecodeError as err:
                yield Notice(f"{where}: {err}; expected one OTLP/JSON metrics request per line")
                continue
            yield from streams.feed(decoded, where)
        yield from streams.finish()
        yield from streams.none_taken(name)
        forget_at_exit(rest)


def _why(line: str, err: ValueError) -> str:
    """What is wrong with a line that is no JSON: cut at the longest line read, cut short (its JSON ends with the
    line, unclosed: a file copied or written only in part), nested too deeply, or invalid at a column."""
    text = line.rstrip("\r\n")
    if len(text) >= MAX_LINE:
        return f"invalid JSON (cut: longer than the longest line read, {MAX_LINE:,} characters)"
    if str(err) == TOO_DEEP:
        return f"invalid JSON ({TOO_DEEP})"
    if not isinstance(err, json.JSONDecodeError):
        return "invalid JSON"
    if err.pos >= len(text.rstrip()) or err.msg.startswith("Unterminated string"):
        return f"the line ends early, inside its JSON (cut short after {len(text):,} characters: the request is not " \
               "closed)"
    return f"invalid JSON at column {err.colno}"
