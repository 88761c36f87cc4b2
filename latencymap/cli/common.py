"""What every command shares: exit codes, the plugin registry, and how a command body turns failures into them."""

from __future__ import annotations

import functools
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import click

from latencymap.core import stopping
from latencymap.core.at_exit import run_at_exit
from latencymap.core.errors import InputError, OutputError, SourceError, StrictError, already_said, note_said
from latencymap.core.model import Item, Notice
from latencymap.core.sanitize import clean_message, clean_text
from latencymap.plugins import Registry, load_registry

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_TERMINATED, EXIT_HUNG_UP = 0, 1, 2, 130, 143, 129

EXIT_CODES = """\b
Exit codes: 0 done; 1 a source or view failed, no record of an input could
be read, or the output could not be written; 2 bad usage, unreadable input,
an output file that cannot be created, or a bad record under --strict;
130 interrupted (Ctrl-C, as a key in the TUI or SIGINT); 143 terminated
(SIGTERM); 129 hung up (SIGHUP: the terminal closed, ssh dropped).
"""

#: `view --help`'s examples (the default command's, as `latencymap --help` gives them too).
VIEW_EXAMPLES = (
    "latencymap --datasource oracle fixtures/pylatencymap/example_latency_data.txt",
    "cat fixtures/pylatencymap/example_latency_data.txt | latencymap --plain --once --datasource oracle",
    "some_connector | latencymap -n 120 --min_bucket 7",
)


def meant_options(name: str, options: Iterable[str]) -> list[str]:
    """The long options an unknown option `name` was likely meant as, for click's `Did you mean`: the same one in
    another case (`--Version`: `--version`), else those it begins (`--du`: `--duration`), else the closest spellings
    (difflib's, as click's own)."""
    longs = sorted({option for option in options if option.startswith("--")})
    typed = name.split("=", 1)[0].lower()
    same = [option for option in longs if option.lower() == typed]
    begun = [option for option in longs if option.lower().startswith(typed)]
    if same or begun:
        return same or begun
    import difflib  # only for a mistyped option

    return difflib.get_close_matches(typed, longs)


def source_epilog(examples: Iterable[str]) -> str:
    """A source subcommand's `--help` epilog: its own examples, then every exit code."""
    lines = "".join(f"  {line}\n" for line in examples)
    return ("\b\nExamples:\n" + lines + "\n" if lines else "") + EXIT_CODES


#: `view --help`'s epilog: its examples and the exit codes.
VIEW_EPILOG = source_epilog(VIEW_EXAMPLES)
#: `latencymap --help`'s: `view`'s examples and a report.
EXAMPLES = source_epilog((*VIEW_EXAMPLES[:2],
                          "latencymap report --format json fixtures/pylatencymap/test_SystemTap_data.txt",
                          *VIEW_EXAMPLES[2:]))


@functools.cache
def registry() -> Registry:
    """Every source and format plugin installed, loaded once per process (when a command first needs them)."""
    return load_registry()


def __getattr__(name: str) -> Registry:
    """`REGISTRY`: the plugins, loaded on first use (`from latencymap.cli.common import REGISTRY` loads them)."""
    if name == "REGISTRY":
        return registry()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Terminated(BaseException):
    """SIGTERM, turned into an exception so that `finally` blocks flush and restore the terminal."""


class HungUp(Terminated):
    """SIGHUP (the terminal closed, an ssh session dropped): ended as SIGTERM ends, with its own exit code."""


def tell(message: object, prefix: str = "latencymap") -> None:
    """One message on stderr, `prefix: message`. Every message of the commands goes through here: the paths and
    other text from input in it are cleaned (`clean_message`), so that a file named with escape sequences cannot
    clear the screen or set the terminal's title."""
    click.echo(f"{prefix}: {clean_message(str(message))}", err=True)


def say(notice: Notice) -> None:
    """A notice on stderr as it comes (what a source or a reader says while the command runs)."""
    note_said(notice.message)
    tell(clean_text(notice.message, 600))


def no_terminal_input(inputs: Sequence[str]) -> None:
    """Refuse to read records from the terminal when no INPUT was named: nothing would ever come (the TUI takes the
    keys), and a command that waits in silence looks hung. `-` still reads the terminal when asked for. Refuse a
    closed stdin (`<&-`) whenever it is to be read."""
    if (not inputs or "-" in inputs) and sys.stdin is None:
        raise click.UsageError("no input: standard input is closed; name INPUT files, or pipe records in "
                               "(some_source | latencymap ...)")
    if inputs:
        return
    if stdin_is_terminal():
        raise click.UsageError("no input: name INPUT files, pipe records in (some_source | latencymap ...), or run "
                               "a source (latencymap bpf block); '-' reads records typed at the terminal")


def no_typed_records_in_tui(inputs: Sequence[str], tui: bool) -> None:
    """Refuse `-` read from the terminal when the TUI is to show it (`view -`, `replay -`): both would read the one
    terminal, keys and records each going to whichever read came first (and `q`, Ctrl-C, Ctrl-D lost with them)."""
    if "-" in inputs and tui and stdin_is_terminal():
        raise click.UsageError("'-' reads records typed at the terminal, where the TUI reads its keys: add --plain "
                               "to type them (or use 'report -'), or name a file")


def stdin_is_terminal() -> bool:
    """Whether stdin is a terminal (records would be typed there)."""
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


#: What a signal that ends the command raises in the main thread, and the exit code it ends with.
_RAISED: dict[int, tuple[type[BaseException], int]] = {
    int(signal.SIGTERM): (Terminated, EXIT_TERMINATED), int(signal.SIGINT): (KeyboardInterrupt, EXIT_INTERRUPTED)}
if hasattr(signal, "SIGHUP"):  # not on Windows
    _RAISED[int(signal.SIGHUP)] = (HungUp, EXIT_HUNG_UP)


def stop_raised(signum: int) -> BaseException:
    """The exception that signal `signum` ends a command with: Terminated, HungUp or KeyboardInterrupt."""
    return _RAISED.get(signum, (Terminated, EXIT_TERMINATED))[0]()


def raise_if_asked() -> None:
    """Raise what the signal that asked the run to stop would have raised (`stopping`: a source ended itself)."""
    signum = stopping.asked()
    if signum is not None:
        raise stop_raised(signum)


def _on_signal(signum: int, frame: object) -> None:
    """SIGTERM, SIGHUP, SIGINT: raised in the main thread (`stop_raised`), unless `stopping` only notes it."""
    if not stopping.noted(signum):
        raise stop_raised(signum)


def _listen_for_signals() -> Callable[[], None]:
    """Install `_on_signal` (SIGINT only where Python's own handler is: not where it is ignored); what restores
    SIGINT's."""
    stopping.begin()
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    signal.signal(signal.SIGTERM, _on_signal)
    if hasattr(signal, "SIGHUP"):  # not on Windows
        signal.signal(signal.SIGHUP, _on_signal)
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return lambda: None
    signal.signal(signal.SIGINT, _on_signal)

    def restore() -> None:
        signal.signal(signal.SIGINT, signal.default_int_handler)

    return restore


def _signum(err: BaseException) -> int:
    """The signal that raises `err` (`stop_raised`)."""
    return next((signum for signum, (raised, _) in _RAISED.items() if type(err) is raised), int(signal.SIGTERM))


def _signal_code(signum: int) -> int:
    """The exit code of a command that signal `signum` ended."""
    return _RAISED.get(signum, (Terminated, EXIT_TERMINATED))[1]


def guarded(fn: Callable[[], int]) -> None:
    """Run a command body, turning known failures into one line and an exit code. The first signal that comes while
    the command ends (its end-of-command hooks run) is only noted: the hooks finish and the exit code is its. A
    second one (a signal ended the command: a first) cuts the hook running short, and the others run."""
    restore = _listen_for_signals()
    code = EXIT_FAIL
    try:
        try:
            code = _exit_code(fn)
        except (KeyboardInterrupt, Terminated) as err:  # a signal raised while a failure was being turned into a code
            stopping.ending(_signum(err))
            code = _signal_code(_signum(err))
        finally:  # recordings finished, and what sources say at their end said, however the command ended
            stopping.ending()
            _end_hooks()
    finally:
        restore()
    signum = stopping.asked()
    if signum is not None and code not in (EXIT_INTERRUPTED, EXIT_TERMINATED, EXIT_HUNG_UP):
        code = _signal_code(signum)
    sys.exit(code)


def _exit_code(fn: Callable[[], int]) -> int:
    """Run a command body; its exit code, known failures said in one line."""
    try:
        code = fn()
        if sys.stdout is not None:
            sys.stdout.flush()  # a failure to write what stdout still holds is said here, as the others are
    except (InputError, StrictError) as err:
        tell(err)
        code = EXIT_USAGE
    except SourceError as err:  # a source died mid-stream: what it gave before was shown and recorded
        if not already_said(err):
            tell(err)
        code = EXIT_FAIL
    except OutputError as err:  # a recording or an output file
        tell(err)
        code = err.exit_code
    except (KeyboardInterrupt, Terminated) as err:
        stopping.ending(_signum(err))  # the first signal: a second one is raised in the end-of-command hooks
        code = _signal_code(_signum(err))
    except BrokenPipeError:
        code = EXIT_OK
    finally:
        stopping.ending()  # first: the next signal is only noted
    return code


def _end_hooks() -> None:
    """Run the end-of-command hooks; one that a second signal cuts short (`stopping`) is left, and the others run."""
    while True:
        try:
            run_at_exit()
            return
        except (KeyboardInterrupt, Terminated):
            continue


def guarded_source(items: Iterable[Item], name: str) -> Iterator[Item]:
    """A live source's items; an unexpected exception in it becomes a SourceError that names the source.

    Errors that already speak to the user (SourceError, InputError, click's) pass as they are.
    """
    try:
        yield from items
    except (SourceError, InputError, click.ClickException):
        raise
    except Exception as err:
        import traceback  # only on this path: it costs ~1 ms of every start

        where = traceback.extract_tb(err.__traceback__)[-1]
        raise SourceError(f"{name}: the source failed: {type(err).__name__}: {clean_text(str(err))} "
                          f"(at {Path(where.filename).name}:{where.lineno})") from err
