"""What a recording says between its records: the header (a newer latencymap's version) and the notes of the
recorded run, read alike by the line reader and the bulk path."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from latencymap import __version__
from latencymap.core.model import Interval, Notice, StreamId, unrolled
from latencymap.protocol import ProtocolReader, format_record
from latencymap.protocol.grammar import NOTE_PREFIX, RECORDING_HEADER

S = StreamId("io", "bpf", "microsec")
SPARK = StreamId("spark app task duration", "spark", "millisec")


def header(version: str = __version__, **more: object) -> str:
    return RECORDING_HEADER + json.dumps({"tool": "latencymap", "version": version, **more}) + "\n"


def records(n: int, stream: StreamId = S, extra: str = "", t0: float = 100.0) -> str:
    out = []
    for i in range(n):
        text = format_record(stream, t0 + 1 + i, np.arange(64) % 3, start=t0 + i, per_interval=True)
        out.append(text.replace("counts, interval\n", f"counts, interval\n{extra}") if extra else text)
    return "".join(out)


def items(text: str, bulk: bool) -> list[Interval | Notice]:
    reader = ProtocolReader("rec.txt")
    if bulk:
        got: Iterator = reader.read_chunks([text[i:i + 97] for i in range(0, len(text), 97)], runs=True)
    else:
        got = reader.read(text.splitlines(True))
    return [i for i in unrolled(got) if isinstance(i, Interval | Notice)]  # type: ignore[arg-type]


def notices(got: list[Interval | Notice]) -> list[Notice]:
    return [i for i in got if isinstance(i, Notice)]


@pytest.mark.parametrize("bulk", [False, True])
def test_a_newer_recording_whose_records_cannot_be_read_says_so_once(bulk: bool) -> None:
    got = items(header("9.0.0") + records(5, extra="quantiles, 0.5, 0.9\n"), bulk)
    said = notices(got)
    assert len(said) == 6 and not any(isinstance(i, Interval) for i in got)
    assert said[0].skipped == 0 and said[0].message.startswith(
        f"rec.txt: recorded by latencymap 9.0.0, newer than this {__version__}: ")
    assert all(n.skipped == 1 and "quantiles" in n.message for n in said[1:])


@pytest.mark.parametrize("version", [__version__, "0.0.9", "garbage"])
@pytest.mark.parametrize("bulk", [False, True])
def test_no_version_note_for_this_or_an_older_version(version: str, bulk: bool) -> None:
    said = notices(items(header(version) + records(3, extra="quantiles, 0.5\n"), bulk))
    assert len(said) == 3 and not any("newer than" in n.message for n in said)


@pytest.mark.parametrize("bulk", [False, True])
def test_a_newer_recording_that_reads_gets_no_note(bulk: bool) -> None:
    got = items(header("9.0.0") + records(3), bulk)
    assert not notices(got) and sum(isinstance(i, Interval) for i in got) == 3


@pytest.mark.parametrize("bulk", [False, True])
def test_notes_of_the_recorded_run_come_back_in_their_place(bulk: bool) -> None:
    note = NOTE_PREFIX + json.dumps({"message": "in.txt: read as bpf", "skipped": 0}) + "\n"
    got = items(header() + records(2) + note + records(2, t0=102.0), bulk)
    kinds = ["N" if isinstance(i, Notice) else "I" for i in got]
    assert kinds == ["I", "I", "N", "I", "I"]
    (said,) = notices(got)
    assert said.message == "rec.txt: as recorded: in.txt: read as bpf" and said.skipped == 0


@pytest.mark.parametrize("bulk", [False, True])
def test_note_lines_without_a_message_are_noise_and_undecodable_ones_are_said(bulk: bool) -> None:
    """A note line that is no JSON object (cut, damaged, or nested deeper than the decoder follows: 2,000 `[` made
    json.loads raise RecursionError, a crash that lost the whole report) is skipped with its line; one without a
    message says nothing. The records around them are read."""
    bad = "".join(NOTE_PREFIX + tail + "\n" for tail in ("{", "[1]", '{"message": 3}', '{"message": ""}',
                                                         "[" * 5000 + "]" * 5000))
    got = items(header() + records(1) + bad + records(2, t0=101.0), bulk)
    said = [n.message for n in notices(got)]
    assert len(got) - len(said) == 3 and all(n.skipped == 0 for n in notices(got))
    tail = "; expected a JSON object after it; line skipped"
    assert said == [
        f"rec.txt: line 52: '{NOTE_PREFIX.strip()}' line not read (invalid JSON: Expecting property name enclosed in "
        f"double quotes){tail}",
        f"rec.txt: line 53: '{NOTE_PREFIX.strip()}' line not read (JSON, not an object){tail}",
        f"rec.txt: line 56: '{NOTE_PREFIX.strip()}' line not read (JSON nested too deeply to decode){tail}"]


@pytest.mark.parametrize("bulk", [False, True])
def test_a_header_nested_too_deeply_is_said_and_the_records_are_read(bulk: bool) -> None:
    got = items(RECORDING_HEADER + "[" * 5000 + "]" * 5000 + "\n" + records(2), bulk)
    assert [n.message for n in notices(got)] == [
        f"rec.txt: line 1: '{RECORDING_HEADER.strip()}' line not read (JSON nested too deeply to decode); expected a "
        "JSON object after it; line skipped"]
    assert len(got) == 3


@pytest.mark.parametrize("bulk", [False, True])
def test_a_recording_of_spark_says_that_the_per_task_analysis_is_not_in_it(bulk: bool) -> None:
    rec = header(options={"inputs": ["logs/app 1"]}) + records(3, SPARK)
    said = notices(items(rec, bulk))
    assert len(said) == 1 and said[0].skipped == 0
    assert "stragglers" in said[0].message and "latencymap report 'logs/app 1'" in said[0].message
    assert not notices(items(records(3, SPARK), bulk))  # protocol records that are no recording: nothing to say


def test_the_text_report_counts_the_records_it_does_not_show(tmp_path: Path) -> None:
    path = tmp_path / "newer.txt"
    path.write_text(header("9.0.0") + records(299, extra="quantiles, 0.5, 0.9\n"))
    done = subprocess.run([sys.executable, "-m", "latencymap", "report", str(path)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1 and "Skipped records: 299" in done.stdout
    assert f"recorded by latencymap 9.0.0, newer than this {__version__}" in done.stdout
    # 10 messages shown: the version note and 9 skipped records; 290 more records were skipped
    assert done.stdout.endswith("   ... and 290 more (--format json lists up to 100)\n")


@pytest.mark.parametrize("bulk", [False, True])
def test_a_note_that_says_what_a_stream_measures_keeps_it(bulk: bool) -> None:
    """A jHiccup log's note names its stream and what it measures (`Notice.measures`): read back, the note carries
    both, so a report of the recording words the findings as one of the log does. A note whose stream or measure is
    not well formed is still said, without them."""
    stream = {"label": S.label, "datasource": S.datasource, "unit": S.unit}
    good = NOTE_PREFIX + json.dumps({"message": "h.hlog: logged by jHiccup", "skipped": 0, "measures": "jhiccup",
                                     "stream": stream}) + "\n"
    bad = "".join(NOTE_PREFIX + json.dumps({"message": "odd", "skipped": 0, **more}) + "\n" for more in (
        {"measures": "jhiccup"}, {"measures": 3, "stream": stream}, {"measures": "jhiccup", "stream": [1]},
        {"measures": "jhiccup", "stream": {**stream, "unit": 2}}, {"measures": "x" * 100, "stream": stream}))
    said = notices(items(header() + good + bad + records(2), bulk))
    assert [n.measures for n in said] == [(S, "jhiccup")] + [None] * 5
    assert said[0].message == "rec.txt: as recorded: h.hlog: logged by jHiccup"


@pytest.mark.parametrize("bulk", [False, True])
@pytest.mark.parametrize("label", [" tag ", "a\x1b[2Jb", "w" * 5000], ids=["spaced", "control", "long"])
def test_a_note_names_its_stream_as_the_stream_s_records_do(bulk: bool, label: str) -> None:
    """A tag ` tag ` (an HdrHistogram log's) is recorded as `label,  tag `, which a record reads as `tag`; a label
    holding a control character or longer than a name reads cleaned and cut. The note's stream named the label as
    written: it was no stream of the recording, and the log's words were lost."""
    note = NOTE_PREFIX + json.dumps({"message": "h.hlog: logged by jHiccup", "skipped": 0, "measures": "jhiccup",
                                     "stream": {"label": label, "datasource": "hdrhistogram", "unit": "nanosec"}})
    written = records(2, StreamId("LABEL", "hdrhistogram", "nanosec")).replace("label, LABEL", f"label, {label}")
    for text in (header() + note + "\n" + written, header() + written + note + "\n"):
        got = items(text, bulk)
        (said,) = [n.measures for n in notices(got)]
        assert said == ({i.stream for i in got if isinstance(i, Interval)}.pop(), "jhiccup"), said
        assert len(said[0].label) <= 200 and "\x1b" not in said[0].label


@pytest.mark.parametrize("bulk", [False, True])
def test_a_run_shown_apart_measures_what_its_stream_does(bulk: bool) -> None:
    """A recording read twice in one input (`cat a.rec a.rec`): the second run goes back into the first's time and is
    shown apart under another name. The note that it is says what its stream measures (`Notice.measures`) of it too:
    its findings were worded as any stream's, not as the log's."""
    note = NOTE_PREFIX + json.dumps({"message": "h.hlog: logged by jHiccup", "skipped": 0, "measures": "jhiccup",
                                     "stream": {"label": S.label, "datasource": S.datasource, "unit": S.unit}}) + "\n"
    got = items((header() + note + records(2)) * 2, bulk)
    shown = {i.stream for i in got if isinstance(i, Interval)}
    assert len(shown) == 2 and S in shown
    assert {n.measures for n in notices(got) if n.measures is not None} == {(s, "jhiccup") for s in shown}
