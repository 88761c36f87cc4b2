"""A real terminal for tests: a detached tmux session running one shell command."""

from __future__ import annotations

import subprocess
import time
import uuid


class Pane:
    """A detached tmux session running one shell command (160x50 unless told)."""

    def __init__(self, command: str, size: tuple[int, int] = (160, 50)) -> None:
        self.name = f"lmtest-{uuid.uuid4().hex[:8]}"
        subprocess.run(["tmux", "new-session", "-d", "-s", self.name, "-x", str(size[0]), "-y", str(size[1]),
                        # a tmux server started from pytest may carry COLUMNS/LINES (80x24): the app must size
                        # itself from the pane, as in a user's terminal
                        f"unset COLUMNS LINES; {command}; echo EXIT=$?; sleep 30"], check=True)

    def capture(self, escapes: bool = False) -> str:
        args = ["tmux", "capture-pane", "-p", "-t", self.name] + (["-e"] if escapes else [])
        return subprocess.run(args, capture_output=True, text=True, check=True).stdout

    def keys(self, *keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def wait_for(self, text: str, timeout: float = 20.0, settle: float = 2.0) -> str:
        """The screen once `text` is on it and two captures 0.1 s apart agree (for at most `settle` seconds).

        tmux may be captured while it is still parsing a large frame: a first capture holding `text` can show
        the top of the new frame over the rest of the old one."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.capture()
            if text in screen:
                return self._settled(screen, text, time.monotonic() + settle)
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never appeared:\n{self.capture()}")

    def wait_gone(self, text: str, timeout: float = 20.0) -> str:
        """The screen once `text` has left it: two captures 0.1 s apart without it (a capture taken while tmux is
        still parsing a frame may lack text the frame has)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.capture()
            time.sleep(0.1)
            if text not in screen:
                again = self.capture()
                if text not in again:
                    return again
        raise AssertionError(f"{text!r} never left the screen:\n{self.capture()}")

    def _settled(self, screen: str, text: str, until: float) -> str:
        while time.monotonic() < until:
            time.sleep(0.1)
            again = self.capture()
            if again == screen or text not in again:
                return screen
            screen = again
        return screen

    def alternate_screen(self) -> bool:
        out = subprocess.run(["tmux", "display", "-p", "-t", self.name, "#{alternate_on}"],
                             capture_output=True, text=True, check=True).stdout
        return out.strip() == "1"

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)
