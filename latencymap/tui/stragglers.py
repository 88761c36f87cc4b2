"""The stragglers panel: what a source's own analysis finds (Spark: straggler tasks and stage skew), under the maps.

The source hands the app a callable returning the report's dict (`{"stragglers": [...], "stages": [...]}`, as
`latencymap report --format json` writes it under "source"); the panel lists it as it is, slowest first. Inputs that
may be read through a source (`latencymap LOG`) hand one that answers None until one is: the panel shows from its
first answer.
`t` / `T` select the next / previous listed straggler and put the cursor on the column it finished in.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual.widgets import Static

from latencymap.core.model import StreamId
from latencymap.core.sanitize import clean_text
from latencymap.core.units import format_duration
from latencymap.outputs.report import _stage_counts as stage_counts
from latencymap.outputs.report import skew_read, straggler_head, without_warmup

MAX_STRAGGLERS = 4
MAX_STAGES = 2
#: Lines the panel takes at most (each line is cut to the width, never wrapped).
MAX_HEIGHT = 8
#: A source's analysis (the report's dict); None where the inputs read so far have none (none read through a source).
Analysis = Callable[[], dict[str, Any] | None]
#: The stream that counted a straggler's task, None where none did (Spark: `straggler_stream` of its source).
StragglerStream = Callable[[dict[str, Any]], StreamId | None]


def straggler_line(s: dict[str, Any]) -> str:
    """The report's words (`straggler_head`), `task 5 (id 9) in stage 2.0: 2.55s, 7.5× the stage median (340ms)`,
    then where it ran and what became of it: `· executor 1 · speculative`."""
    where = f" · executor {s['executor']}" if s.get("executor") is not None else ""
    flags = "".join(f" · {flag}" for flag in ("failed", "killed", "speculative", "warmup") if s.get(flag))
    return clean_text(f"{straggler_head(s, '×')}{where}{flags}", 300)


def stage_line(st: dict[str, Any]) -> str:
    """`stage 2.0: 32 tasks, 1 failed attempt, median 340ms, max 2.55s, skew 7.5×`: tasks counted as the report
    counts them (those that succeeded, then the failed, killed and speculative attempts); where its warm-up tasks
    hide its skew, that without them, as the report says it."""
    skew = st.get("skew")
    skew_text = f", skew {skew:.1f}×" if isinstance(skew, int | float) and math.isfinite(skew) else ""
    median, longest = (format_duration(st.get(key), long_units=True) for key in ("median_s", "max_s"))
    return clean_text(f"stage {st.get('stage')}.{st.get('attempt', 0)}: {_counts(st)}, median {median}, max {longest}"
                      f"{skew_text}{without_warmup(st, '×')}", 300)


def skewed(found: dict[str, Any]) -> list[dict[str, Any]]:
    """The stages the panel lists, the most skewed first, by their skew as the report reads it (`skew_read`: without
    warm-up tasks where they hide it)."""
    stages = [st for st in found.get("stages") or [] if st.get("skew")]
    return sorted(stages, key=lambda st: -float(skew_read(st) or 0.0))


def _counts(st: dict[str, Any]) -> str:
    """The report's `8 tasks, 2 failed attempts` (`outputs.report`); the task count alone when that is all."""
    return stage_counts(st) if "tasks" in st or st.get("succeeded") is not None else "no task count"


def listed(found: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The stragglers the panel lists (the slowest ratio first, as the analysis orders them)."""
    return list((found or {}).get("stragglers") or [])[:MAX_STRAGGLERS]


def finished_at(s: dict[str, Any]) -> float | None:
    """When the straggler ended (epoch seconds), if the analysis says."""
    end = s.get("end")
    return float(end) if isinstance(end, int | float) and math.isfinite(end) else None


def stragglers_text(found: dict[str, Any] | None, selected: int | None = None) -> Text:
    """The panel's lines: stragglers (slowest ratio first, `selected` highlighted), then the most skewed stages."""
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(" stragglers ", style="bold reverse")
    if found is None:
        text.append("  the source's analysis comes when it has read its input")
        return text
    stragglers = list(found.get("stragglers") or [])
    stages = skewed(found)
    text.append(f"  {len(stragglers)} straggler{'s' if len(stragglers) != 1 else ''}{_where(stragglers, found)}")
    shown = listed(found)
    if any(finished_at(s) is not None for s in shown):
        text.append("  (t/T: cursor to one)", style="dim")
    for i, s in enumerate(shown):
        style = "bold red" if (s.get("ratio") or 0) >= 3 else ""
        text.append("\n" + ("▶ " if i == selected else "  ") + straggler_line(s),
                    style=f"{style} reverse".strip() if i == selected else style)
    if len(stragglers) > MAX_STRAGGLERS:
        more = len(stragglers) - MAX_STRAGGLERS
        text.append(f"\n  … and {more} more (latencymap report lists them all)", style="dim")
    for st in stages[:MAX_STAGES]:
        text.append("\n  " + stage_line(st), style="dim")
    return text


def _where(stragglers: list[dict[str, Any]], found: dict[str, Any]) -> str:
    """` in 2 of 5 stage attempts`: the stage attempts (groups) the stragglers are in, of those analysed."""
    groups = {s.get("group") or (s.get("stage"), s.get("attempt", 0)) for s in stragglers}
    total = len(found.get("stages") or [])
    if not stragglers or not total:
        return ""
    return f" in {len(groups)} of {total} stage attempt{'s' if total != 1 else ''}"


class StragglersPanel(Static):
    """Stragglers and stage skew from the source's analysis (shown only for sources that have one)."""

    DEFAULT_CSS = f"""
    StragglersPanel {{ height: auto; max-height: {MAX_HEIGHT}; background: $boost; text-wrap: nowrap;
                       text-overflow: ellipsis; }}
    """

    def __init__(self) -> None:
        super().__init__(stragglers_text(None), id="stragglers")
        self.found: dict[str, Any] | None = None
        self.selected: int | None = None

    def show(self, found: dict[str, Any] | None) -> None:
        """Draw the analysis (a dict as the report's "source" holds it); the selection stays on the same task."""
        before = listed(self.found)[self.selected] if self.selected is not None else None
        self.found = found
        now = listed(found)
        self.selected = now.index(before) if before in now else None
        self.update(stragglers_text(found, self.selected))

    def placed(self) -> list[int]:
        """Indexes of the listed stragglers that say when they finished (those the cursor can go to)."""
        return [i for i, s in enumerate(listed(self.found)) if finished_at(s) is not None]

    def select(self, index: int | None) -> dict[str, Any] | None:
        """Highlight listed straggler `index`; the straggler."""
        self.selected = index
        self.update(stragglers_text(self.found, index))
        return listed(self.found)[index] if index is not None else None

    @property
    def height_needed(self) -> int:
        """Lines the panel takes (its lines are cut, not wrapped)."""
        return min(MAX_HEIGHT, len(self.plain_lines()))

    def plain_lines(self) -> list[str]:
        """The panel as text, for the saved plain-text frame."""
        return stragglers_text(self.found, self.selected).plain.splitlines()
