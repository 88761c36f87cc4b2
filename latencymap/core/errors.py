"""The errors that cross layers, each with the exit code the CLI gives it."""

from __future__ import annotations


class InputError(Exception):
    """An input that cannot be opened or whose format is unknown (exit code 2)."""


class StrictError(Exception):
    """The first bad record under `--strict` (exit code 2)."""


class SourceError(Exception):
    """A source that failed while running (its process died, its job failed): exit code 1, with this message.

    What it yielded before the failure stays valid: views keep it and recordings keep every record.
    """


class OutputError(Exception):
    """A file that cannot be created (exit code 2) or written (exit code 1): a report's `-o`, a recording."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class HungUp(OutputError):
    """The terminal that stdout draws on hung up (a write failed with it gone): the command ends as SIGHUP ends it."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=129)


class RecordingError(OutputError):
    """A recording that cannot be created (exit code 2) or written (exit code 1)."""


class NothingReadable(SourceError):
    """Inputs of which every record was skipped (exit code 1): raised once all inputs were read, so nothing read
    from the others is lost. Under `--strict` the first skipped record already stopped the run (exit code 2).
    `parts`: what each unreadable input was (a view that said one already as a notice does not say it again)."""

    def __init__(self, parts: list[str]) -> None:
        super().__init__("; ".join(parts))
        self.parts = parts


#: Notices said on stderr as they came (the first `_SAID_MAX`), so that a failure they said is not said twice.
_SAID: set[str] = set()
_SAID_MAX = 1000


def note_said(message: str) -> None:
    """Remember a notice said on stderr."""
    if len(_SAID) < _SAID_MAX:
        _SAID.add(message)


def already_said(err: Exception) -> bool:
    """Whether every part of a failure was said already, as notices while the command ran (an input that gave
    nothing but the note that it was cut short)."""
    return isinstance(err, NothingReadable) and all(part in _SAID for part in err.parts)
