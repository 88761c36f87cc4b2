"""The first signal that asks a run to stop is only noted when a source that ends itself runs under a command that
reads its flow to the end, or once the command's end has begun; a second one is raised."""

from __future__ import annotations

import signal

from latencymap.core import stopping


def test_the_first_signal_is_noted_only_where_a_source_ends_itself_and_the_command_reads_to_the_end() -> None:
    stopping.begin()
    with stopping.ends_itself():
        assert not stopping.noted(signal.SIGTERM)  # the command does not read to the end: raised
        stopping.reads_to_end()
        assert stopping.noted(signal.SIGHUP) and stopping.asked() == signal.SIGHUP
        assert not stopping.noted(signal.SIGTERM)  # a second signal: raised at once
    stopping.begin()
    stopping.reads_to_end()
    assert not stopping.noted(signal.SIGTERM) and stopping.asked() is None  # no such source running: raised


def test_at_the_end_the_first_signal_is_noted_and_a_second_raised() -> None:
    stopping.begin()
    stopping.ending()
    assert stopping.noted(signal.SIGINT) and stopping.asked() == signal.SIGINT
    assert not stopping.noted(signal.SIGTERM)  # a hook that cannot finish is cut short
    assert stopping.asked() == signal.SIGINT
    stopping.begin()
    assert stopping.asked() is None


def test_a_signal_that_ended_the_command_counts_as_the_first() -> None:
    stopping.begin()
    stopping.ending(signal.SIGINT)
    assert not stopping.noted(signal.SIGINT) and stopping.asked() == signal.SIGINT
    stopping.begin()
    stopping.ending()
    stopping.ending(signal.SIGTERM)
    assert not stopping.noted(signal.SIGHUP) and stopping.asked() == signal.SIGTERM


def test_once_the_flow_is_read_through_the_first_signal_is_noted_and_a_second_raised() -> None:
    """What the command writes of a flow read to its end (a report) is written whole; a second signal still ends it."""
    stopping.begin()
    stopping.read_through()
    assert not stopping.noted(signal.SIGTERM)  # the command does not read to the end: raised
    stopping.begin()
    stopping.reads_to_end()
    stopping.read_through()
    assert stopping.noted(signal.SIGTERM) and stopping.asked() == signal.SIGTERM
    assert not stopping.noted(signal.SIGTERM)
    stopping.begin()
    stopping.reads_to_end()
    assert not stopping.noted(signal.SIGTERM)  # a new command has read nothing yet


def test_the_command_asks_a_source_to_end_without_a_signal() -> None:
    """The TUI's `q` with a recording asks a source that ends itself to end: no signal is asked (the exit code stays
    the command's), and a first signal after it is still only noted."""
    stopping.begin()
    stopping.reads_to_end()
    assert not stopping.source_ends_itself() and not stopping.to_stop()
    with stopping.ends_itself():
        assert stopping.source_ends_itself()
        stopping.stop_sources()
        assert stopping.to_stop() and stopping.asked() is None
        assert stopping.noted(signal.SIGTERM) and stopping.asked() == signal.SIGTERM
    assert not stopping.source_ends_itself()
    stopping.begin()
    assert not stopping.to_stop()
    stopping.reads_to_end()
    with stopping.ends_itself():
        assert stopping.noted(signal.SIGHUP) and stopping.to_stop()
    stopping.begin()  # the receivers of the tests that follow run
