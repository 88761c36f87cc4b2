"""Judging a profiled input's clock by its first column (`latencymap.core.timebase.judge`), once."""

from __future__ import annotations

import time
from collections.abc import Callable

from latencymap.core.timebase import DAY_S, LIVE_SLACK_S, TIME_OF_DAY_BELOW_S, Verdict, judge

__all__ = ["DAY_S", "LIVE_SLACK_S", "TIME_OF_DAY_BELOW_S", "InputClock", "Verdict", "judge"]


class InputClock:
    """Judges the input by its first column (once); `shift` then maps sample times onto the columns' times."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self.verdict: Verdict | None = None

    @property
    def shift(self) -> float:
        return self.verdict.shift if self.verdict is not None else 0.0

    def first_column(self, end: float) -> Verdict | None:
        """The verdict when this is the first column seen, else None."""
        if self.verdict is not None:
            return None
        self.verdict = judge(end, self._clock())
        return self.verdict

    def settle(self) -> None:
        """No column came: samples keep the wall clock's times."""
        if self.verdict is None:
            self.verdict = Verdict()
