"""The PyLatencyMap record protocol (with latencymap's extensions): grammar, readers and writer."""

from __future__ import annotations

from latencymap.protocol.grammar import BEGIN, DEFAULT_DATASOURCE, DEFAULT_UNIT, END, RecordError
from latencymap.protocol.reader import ProtocolReader
from latencymap.protocol.writer import format_record

__all__ = ["BEGIN", "DEFAULT_DATASOURCE", "DEFAULT_UNIT", "END", "ProtocolReader", "RecordError", "format_record"]
