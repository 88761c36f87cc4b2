"""PyLatencyMap record format (with SystemTap/DTrace blocks inside records) as a text format."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from latencymap.plugins import Item, TextFormat
from latencymap.protocol import BEGIN, ProtocolReader
from latencymap.protocol.grammar import RECORDING_HEADER as HEADER_PREFIX


class PyLatencyMapFormat(TextFormat):
    """`<begin record>` ... `<end record>` streams, as PyLatencyMap 1.3 and OraLatencyMap read."""

    name = "pylatencymap"
    summary = "PyLatencyMap records (<begin record> ... <end record>), incl. SystemTap/DTrace blocks"
    priority = 10

    @classmethod
    def sniff(cls, head: Sequence[str]) -> bool:
        """Records, or a latencymap recording's header (a recording whose source died before its first record)."""
        return any(line.strip().lower() == BEGIN for line in head) or bool(head and head[0].startswith(HEADER_PREFIX))

    def read(self, lines: Iterable[str], name: str) -> Iterator[Item]:
        return ProtocolReader(name).read(lines)

    def read_text(self, chunks: Iterable[str], name: str) -> Iterator[Item]:
        return ProtocolReader(name).read_chunks(chunks, runs=True)
