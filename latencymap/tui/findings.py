"""The findings panel: the diagnosis (bands, tail, episodes) of the columns on screen."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from latencymap.analysis.diagnosis import diagnose
from latencymap.core.accumulator import StreamHistory
from latencymap.core.sanitize import clean_text

MAX_LINES = 3


def findings_text(hist: StreamHistory, first: int, stop: int) -> Text:
    """Up to three finding lines for history columns [first, stop)."""
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(" findings ", style="bold reverse")
    if stop <= first:
        text.append("  none yet")
        return text
    cols = slice(first, stop)
    diag = diagnose(hist.counts_in(cols), hist.time_in(cols), hist.low, hist.high, hist.start, hist.end,
                    col_range=(first, stop), rows_from=first)
    lines = [line.partition(" — ")[0] for line in diag.summary_lines()[:MAX_LINES]] or ["nothing notable"]  # no why
    text.append("  " + clean_text(lines[0], 300))
    for line in lines[1:]:
        text.append("\n           " + clean_text(line, 300))
    return text


class FindingsPanel(Static):
    """Diagnosis of the visible window, refreshed with the plots."""

    DEFAULT_CSS = "FindingsPanel { height: auto; max-height: 3; background: $boost; }"

    def show(self, hist: StreamHistory, first: int, stop: int) -> None:
        self.update(findings_text(hist, first, stop))
