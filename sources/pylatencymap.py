"""PyLatencyMap record format (with SystemTap/DTrace blocks inside records) as a text format."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from latencymap.plugins import Item, TextFormat
from latencymap.protocol import BEGIN, ProtocolReader
from latencymap.protocol.grammar import RECORDING_HEADER as HEADER_PREFIX
from latencymap.protocol.reader import DEFAULT_UNTIMED_INTERVAL

if TYPE_CHECKING:
    import click

class PyLatencyMapFormat(TextFormat):
    """`<begin record>` ... `<end record>` streams, as PyLatencyMap 1.3 and OraLatencyMap read."""

    name = "pylatencymap"
    summary = "PyLatencyMap records (<begin record> ... <end record>), incl. SystemTap/DTrace blocks"
    priority = 10

    @classmethod
    def sniff(cls, head: Sequence[str]) -> bool:
        """Records, or a latencymap recording's header (a recording whose source died before its first record)."""
        return any(line.strip().lower() == BEGIN for line in head) or bool(head and head[0].startswith(HEADER_PREFIX))

    @classmethod
    def params(cls) -> list[click.Parameter]:
        from latencymap.sources.format_options import datasource_option, interval_option

        return [datasource_option(), interval_option()]

    def _reader(self, name: str) -> ProtocolReader:
        datasource = self.options.get("datasource")
        interval = self.options.get("interval") or DEFAULT_UNTIMED_INTERVAL
        return ProtocolReader(name, datasource=datasource.lower() if datasource else None, interval=interval)

    def read(self, lines: Iterable[str], name: str) -> Iterator[Item]:
        return self._reader(name).read(lines)

    def read_text(self, chunks: Iterable[str], name: str) -> Iterator[Item]:
        return self._reader(name).read_chunks(chunks, runs=True)
