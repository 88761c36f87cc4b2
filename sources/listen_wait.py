"""When `latencymap listen` ends for want of senders (`--idle-timeout`, `--start-timeout`): the socket's writers and
OTLP's requests alike."""

from __future__ import annotations

import time

from latencymap.core.model import Notice


class Waiting:
    """`idle_timeout` counts from the last sender leaving (a writer's connection closing; an OTLP request, which holds
    no connection, as it is taken in) while none is there; before the first one it waits, so that a program that takes
    a while to start (importing torch) loses nothing. `start_timeout` bounds that wait: past it with none come, the
    run ends saying `nobody` (what did not happen) and within how long, as an input with nothing in it ends (exit
    code 0, `No data.`; what the run recorded besides, a profile, is kept)."""

    def __init__(self, idle_timeout: float | None, start_timeout: float | None, nobody: str) -> None:
        self.idle_timeout, self.start_timeout, self.nobody = idle_timeout, start_timeout, nobody
        self.started = time.monotonic()
        self.idle_since: float | None = None  # when the last sender left

    def left(self) -> None:
        """A sender left (an OTLP request was taken in): idle from now while none is there."""
        self.idle_since = time.monotonic()

    def over(self, busy: bool = False) -> Notice | bool:
        """Whether the run ends now for want of senders (`busy`: one is there): past the start timeout with none
        come, the notice that says so."""
        if busy:
            return False
        now = time.monotonic()
        if self.idle_since is not None:
            return self.idle_timeout is not None and now - self.idle_since >= self.idle_timeout
        if self.start_timeout is not None and now - self.started >= self.start_timeout:
            return Notice(f"{self.nobody} within {self.start_timeout:g}s (--start-timeout)", skipped=0)
        return False
