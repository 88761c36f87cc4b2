"""PyLatencyMap record format (with SystemTap/DTrace blocks inside records) as a text format."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from latencymap.plugins import Item, TextFormat
from latencymap.protocol import BEGIN, ProtocolReader


class PyLatencyMapFormat(TextFormat):
    """`<begin record>` ... `<end record>` streams, as PyLatencyMap 1.3 and OraLatencyMap read."""

    name = "pylatencymap"
    summary = "PyLatencyMap records (<begin record> ... <end record>), incl. SystemTap/DTrace blocks"
    priority = 10

    @classmethod
    def sniff(cls, head: Sequence[str]) -> bool:
        return any(line.strip().lower() == BEGIN for line in head)

    def read(self, lines: Iterable[str], name: str) -> Iterator[Item]:
        return ProtocolReader(name).read(lines)

    def read_text(self, chunks: Iterable[str], name: str) -> Iterator[Item]:
        return ProtocolReader(name).read_chunks(chunks, runs=True)
