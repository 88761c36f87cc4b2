"""Reading inputs in chunks: the same lines as a line-by-line reader, whatever the read sizes."""

from __future__ import annotations

import bz2
import codecs
import gzip
import io
import lzma
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from latencymap.core.errors import InputError
from latencymap.core.model import Interval, Notice
from latencymap.flow import inputs
from latencymap.flow.inputs import text_chunks
from latencymap.flow.pipeline import diffed
from latencymap.plugins import load_registry


def capped_lines(stream: IO[str]) -> Iterator[str]:
    """The line-by-line reader the chunks replaced: lines of at most MAX_LINE characters, the rest dropped."""
    while True:
        line = stream.readline(inputs.MAX_LINE)
        if not line:
            return
        if len(line) == inputs.MAX_LINE and not line.endswith("\n"):
            while True:  # drop the rest of the over-long line
                rest = stream.readline(inputs.MAX_LINE)
                if not rest or rest.endswith("\n"):
                    break
        yield line


def reference_lines(data: bytes) -> list[str]:
    stream = io.TextIOWrapper(io.BytesIO(data), encoding=inputs.input_encoding(data), errors="replace", newline=None)
    return [line.removesuffix("\n") for line in capped_lines(stream)]


def chunked_lines(data: bytes, size: int) -> list[str]:
    text = "".join(text_chunks(io.BytesIO(data), size))
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


class Trickle(io.RawIOBase):
    """A pipe that hands out at most `step` bytes per read."""

    def __init__(self, data: bytes, step: int) -> None:
        self.data, self.step = data, step

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        piece, self.data = self.data[: min(self.step, len(buffer))], self.data[min(self.step, len(buffer)):]
        buffer[: len(piece)] = piece
        return len(piece)


PIECES = st.sampled_from([b"a", b"bc", b"\n", b"\r\n", b"\r", b"\xff", b"\xe2\x82", b"\xac", "é".encode(), b"x" * 70,
                          b"<begin record>\n", b"\x00", b"\xef\xbb\xbf", b"\xfe", b"\xff\xfe", b"\xfe\xff"])


@settings(max_examples=300, deadline=None)
@given(st.lists(PIECES, max_size=40).map(b"".join), st.integers(1, 64))
def test_chunks_give_the_lines_a_line_reader_gives(data: bytes, size: int) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(inputs, "MAX_LINE", 50)
        assert chunked_lines(data, size) == reference_lines(data)


def test_a_pipe_gets_each_complete_line_at_once() -> None:
    pipe = io.BufferedReader(Trickle(b"first\nsec", 7))
    chunks = text_chunks(pipe, 1 << 16)
    assert next(chunks) == "first\n"  # a read1 returned: the complete line goes out without waiting for more
    assert list(chunks) == ["sec"]


def test_an_over_long_line_is_cut_and_the_stream_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inputs, "MAX_LINE", 10)
    data = b"short\n" + b"y" * 1000 + b"\nafter\n"
    assert chunked_lines(data, 64) == ["short", "y" * 10, "after"]
    assert chunked_lines(data, 4096) == ["short", "y" * 10, "after"]


@pytest.mark.parametrize("data", [b"", b"\n", b"\n  \n\t\n"])
def test_an_empty_input_is_no_data_not_an_unknown_format(data: bytes) -> None:
    items = list(inputs.read_input("-", load_registry(), stdin=io.BytesIO(data)))
    assert len(items) == 1 and isinstance(items[0], Notice) and items[0].skipped == 0
    assert items[0].message == "<stdin>: empty input, nothing to read"


def test_blank_lines_past_the_sniffing_window_still_need_a_format() -> None:
    data = b"\n" * inputs.SNIFF_LINES + b"hello\n"
    with pytest.raises(InputError, match="unrecognised input format"):
        list(inputs.read_input("-", load_registry(), stdin=io.BytesIO(data)))


class _Endless(io.RawIOBase):
    """A pipe that gives `head`, then NULs for ever (`cat /dev/zero`)."""

    def __init__(self, head: bytes = b"") -> None:
        self.head = head

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = len(buffer)
        data, self.head = self.head[:n], self.head[n:]
        buffer[:len(data)] = data
        buffer[len(data):n] = bytes(n - len(data))
        return n


@pytest.mark.timeout(60)  # before: read for ever
def test_dev_zero_is_refused_naming_it_not_read_for_ever() -> None:
    """`report /dev/zero` (or `cat /dev/zero |`) ran until killed, then said "No data.": sniffing waited for the end
    of a first line that never comes. A line running past ENDLESS_LINE characters is no text."""
    for path, stdin in (("/dev/zero", None), ("-", io.BufferedReader(_Endless()))):
        shown = "<stdin>" if path == "-" else path
        with pytest.raises(InputError, match=rf"^{shown}: unrecognised input format: no line break in [0-9,]+ "
                                             r"characters \(not text"):
            list(inputs.read_input(path, load_registry(), stdin=stdin))


@pytest.mark.timeout(60)
def test_records_then_an_endless_line_keep_the_records_and_say_so(example_data: Path) -> None:
    stdin = io.BufferedReader(_Endless(example_data.read_bytes()))
    items = list(inputs.read_input("-", load_registry(), stdin=stdin))
    assert sum(1 for i in items if not isinstance(i, Notice)) == 72  # the sample's records, every one
    last = items[-1]
    assert isinstance(last, Notice) and last.skipped == 1 and last.message.startswith("<stdin>: no line break in ")
    assert last.message.endswith("; the rest of the input is not read")


def _intervals(items: list[Any]) -> list[tuple[Any, ...]]:
    return [(i.stream.label, i.start, i.end, i.counts.tolist()) for i in items if isinstance(i, Interval)]


@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress, lzma.compress])
def test_gzip_bzip2_and_xz_inputs_read_as_their_text(example_data: Path, tmp_path: Path,
                                                      compress: Callable[[bytes], bytes]) -> None:
    plain = list(read_pipeline(str(example_data)))
    packed = tmp_path / "example.packed"
    packed.write_bytes(compress(example_data.read_bytes()))
    assert _intervals(list(read_pipeline(str(packed)))) == _intervals(plain) != []
    with packed.open("rb") as stdin:  # from a pipe too: the magic number decides, not the name
        assert _intervals(list(read_pipeline("-", stdin))) == _intervals(plain)


def _zstd(data: bytes) -> bytes:
    import zstandard

    return zstandard.ZstdCompressor().compress(data)


@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress, lzma.compress, _zstd])
def test_a_cut_compressed_input_keeps_what_came_before_the_cut_and_says_so(example_data: Path, tmp_path: Path,
                                                                          compress: Callable[[bytes], bytes]) -> None:
    whole = _intervals(list(read_pipeline(str(example_data))))
    data = example_data.read_bytes()
    first = compress(data[: len(data) // 2])  # two streams, as `cat a.gz b.gz` makes: the cut is in the second
    second = compress(data[len(data) // 2:])
    cut = tmp_path / "cut.packed"
    cut.write_bytes(first + second[: len(second) // 2])
    items = list(read_pipeline(str(cut)))
    got = _intervals(items)
    assert 0 < len(got) < len(whole) and got == whole[: len(got)]
    said = "cut.packed: the compressed data ends early (cut short or corrupt): read up to there"
    assert isinstance(items[-1], Notice) and said in items[-1].message  # zstd: and where (test_zstd_cut.py)


def read_pipeline(path: str, stdin: IO[bytes] | None = None) -> Iterator[Any]:
    """Intervals and notices of one input, as the views read it (diffed)."""
    return diffed(inputs.read_input(path, load_registry(), stdin=stdin), path)


@pytest.mark.parametrize("encode", [lambda t: codecs.BOM_UTF8 + t.encode(), lambda t: t.encode("utf-16"),
                                    lambda t: codecs.BOM_UTF16_BE + t.encode("utf-16-be")])
def test_a_byte_order_mark_hides_no_record(example_data: Path, tmp_path: Path, encode: Callable[[str], bytes]) -> None:
    plain = _intervals(list(read_pipeline(str(example_data))))
    marked = tmp_path / "windows.txt"
    marked.write_bytes(encode(example_data.read_text()))
    assert _intervals(list(read_pipeline(str(marked)))) == plain  # the first record too (71 intervals, not 70)
    with marked.open("rb") as raw:  # a pipe that hands out the mark a byte at a time
        trickled = io.BufferedReader(Trickle(raw.read(), 1))  # type: ignore[arg-type]
        assert _intervals(list(read_pipeline("-", trickled))) == plain


def test_a_closed_stdin_is_an_input_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Started with fd 0 closed (`<&-`), sys.stdin is None: reading `-` (`replay -`, `diff -`) raised
    AttributeError with a traceback."""
    monkeypatch.setattr(inputs.sys, "stdin", None)
    with pytest.raises(InputError, match="standard input is closed"):
        inputs.read_input("-", load_registry())


def test_only_files_are_at_rest(tmp_path: Path, example_data: Path) -> None:
    """What may be read ahead of what arrived (`at_rest`): a file, a directory, an in-memory stdin; not a pipe."""
    import os

    assert inputs.at_rest(str(example_data)) and inputs.at_rest(str(tmp_path))
    assert inputs.at_rest("-", io.BytesIO(b""))
    read, write = os.pipe()
    try:
        with os.fdopen(os.dup(read), "rb") as pipe:
            assert not inputs.at_rest("-", pipe)
        assert not inputs.at_rest(f"/dev/fd/{read}")
    finally:
        os.close(read)
        os.close(write)
    with example_data.open("rb") as file:
        assert inputs.at_rest("-", file)


@pytest.mark.parametrize("command", [["view", "--plain", "--once"], ["report"], ["replay", "--plain", "--once"],
                                     ["diff", "BOTH"]])
def test_an_unknown_format_names_the_option_its_command_takes(command: list[str], tmp_path: Path) -> None:
    """The message said "choose one with --format NAME, or --input-format NAME on report": `replay` has no
    `--format`, and `diff`'s is its output's (text/json). Every command that reads inputs takes `--input-format`."""
    from click.testing import CliRunner

    from latencymap.cli.main import main

    hosts = tmp_path / "hosts.txt"
    hosts.write_text("127.0.0.1 localhost\n::1 localhost ip6-localhost\n")
    args = [str(hosts) if a == "BOTH" else a for a in command] + [str(hosts)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "unrecognised input format. Supported formats (choose one with --input-format NAME, which every command" \
           " that reads inputs takes):" in result.stderr
    assert "--format NAME" not in result.stderr
    result = CliRunner().invoke(main, [*args[:-1], "--input-format", "pylatencymap", str(hosts)])
    assert "No such option" not in result.output and "unrecognised input format" not in result.output


def _report(*args: str) -> Any:
    """`latencymap report ARGS` run in this process."""
    from click.testing import CliRunner

    from latencymap.cli.main import main

    return CliRunner().invoke(main, ["report", *args])


def test_a_format_chosen_that_reads_nothing_says_what_it_is_and_what_detection_picks(example_data: Path,
                                                                                        fixtures: Path,
                                                                                        tmp_path: Path) -> None:
    """`--input-format bpftrace` on PyLatencyMap records gave "No data." and exit code 0; now it is an input of which
    nothing could be read (exit code 1; --strict: 2), and the note names the format and the one detection picks."""
    records = tmp_path / "records.txt"
    records.write_bytes(example_data.read_bytes())
    result = _report("--input-format", "bpftrace", str(records))
    assert result.exit_code == 1, result.output
    said = (f"{records}: --input-format bpftrace read nothing of it: that format is bpftrace hist() text output "
            "(@map: blocks of [lo, hi) count |@@@| rows), and the input does not look like it (its first line: "
            "'<begin record>'); auto-detection reads it as pylatencymap (PyLatencyMap records")
    assert said in result.stdout and "of another format" not in result.stdout
    assert f"latencymap: {records}: no record could be read (72 skipped); the first: {said}" in result.stderr
    assert _report("--strict", "--input-format", "bpftrace", str(records)).exit_code == 2
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("127.0.0.1 localhost\n")
    result = _report("--input-format", "pylatencymap", str(hosts))  # no data of any format: "No data.", said
    assert result.exit_code == 0 and "it holds no data of a format latencymap reads either" in result.output
    # An input that looks like the format chosen holds no data, as detected: bpftrace's banner alone.
    banner = tmp_path / "idle.txt"
    banner.write_text((fixtures / "bpftrace" / "block_usecs_interval.txt").read_text().splitlines()[0] + "\n")
    result = _report("--input-format", "bpftrace", str(banner))
    assert result.exit_code == 0 and "read nothing" not in result.output


@pytest.mark.parametrize(("fmt", "text"), [
    ("bpftrace", "20:50:45\n\n20:50:46\n\n20:50:47\n\n"),  # `bpftrace -q` on an idle disk: time lines alone
    ("bpftrace", "Tracing block I/O latency... Hit Ctrl-C to end.\n20:50:45\n\n20:50:46\n"),  # a printf banner
    ("raw", "latency_ms\n"), ("raw", "time,latency\n"), ("raw", "# no samples this run\n"),  # a header alone
])
def test_a_format_chosen_on_a_run_that_saw_nothing_is_no_data_not_a_failure(tmp_path: Path, fmt: str,
                                                                            text: str) -> None:
    """Hunt: an idle `bpftrace -q` run, a header-only CSV, read with `--input-format`, failed (exit code 1) as "not
    that format", one with a banner pointing at bcc: monitoring scripts failed on quiet periods."""
    idle = tmp_path / "idle.txt"
    idle.write_text(text)
    result = _report("--input-format", fmt, str(idle))
    assert result.exit_code == 0 and "No data." in result.output, result.output
    assert "leave --input-format out" not in result.output


@pytest.mark.parametrize(("first", "second", "said", "skipped"), [
    ("pylatencymap/example_latency_data.txt", "bpftrace/block_usecs_interval.txt",
     "from line 2,664, 12 histograms of another format, bpftrace (bpftrace hist() text output", 12),
    ("bpftrace/block_usecs_interval.txt", "pylatencymap/example_latency_data.txt",
     "from line 235, 72 records of another format, pylatencymap (PyLatencyMap records", 72),
    ("hdrhistogram/service_ms.hgrm", "bcc/biolatency_usecs_j.txt",
     "from line 102, 3 -j lines of another format, bcc (bcc print_log2_hist text", 3),
    ("otlp/checkout_metrics.jsonl", "pylatencymap/example_latency_data.txt",
     "from line 22, 72 records of another format, pylatencymap", 0),  # its reader names each line already
])
def test_another_formats_data_after_the_detected_one_is_said_not_dropped(fixtures: Path, tmp_path: Path, first: str,
                                                                         second: str, said: str,
                                                                         skipped: int) -> None:
    """Two captures joined with `cat`: the reader of the first format passed over the second's lines without a
    word (PyLatencyMap records, then bpftrace text: the bpftrace prints were lost, exit code 0)."""
    joined = tmp_path / "joined.txt"
    joined.write_bytes((fixtures / first).read_bytes() + (fixtures / second).read_bytes())
    notes = [i for i in read_pipeline(str(joined)) if isinstance(i, Notice) and "of another format" in i.message]
    assert [(n.message.split(": ", 1)[1][:len(said)], n.skipped) for n in notes] == [(said, skipped)]
    assert notes[0].message.endswith("(one format per input: give them as an input of their own)")
    alone = [i for i in read_pipeline(str(fixtures / first)) if isinstance(i, Notice)]
    assert not any("of another format" in n.message for n in alone)
    if skipped:
        assert _report("--strict", str(joined)).exit_code == 2


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_without_a_byte_order_mark_is_named(example_data: Path, tmp_path: Path, encoding: str) -> None:
    """Read as UTF-8, such text matches no format: "unrecognised input format" gave no hint why."""
    wide = tmp_path / "wide.txt"
    wide.write_bytes(example_data.read_text().encode(encoding))
    with pytest.raises(InputError) as raised:
        inputs.read_input(str(wide), load_registry())
    order = encoding[-2:].upper()
    assert str(raised.value).startswith(
        f"{wide}: unrecognised input format: its bytes look like UTF-16 without a byte order mark (every other byte "
        f"is 0), which is read as UTF-8; convert it to UTF-8 (iconv -f UTF-16{order} -t UTF-8), or write it with its "
        "byte order mark. Supported formats")
    result = _report("--input-format", "pylatencymap", str(wide))
    assert result.exit_code == 1 and "(its first line: '<begin record>'); its bytes look like UTF-16" in result.stderr
    assert inputs.utf16_without_bom(example_data.read_text()) is None


def test_another_formats_data_arriving_as_a_piece_of_its_own_is_said(fixtures: Path) -> None:
    """A live pipe hands its lines as they are written: records, then the map bpftrace prints at exit in a write of
    its own. A bpftrace map at the very start of a piece was passed over without a word (its marker looked for a
    newline before the `@`)."""
    records = (fixtures / "bpftrace" / "sleeps_records.txt").read_bytes().split(b"\n\n\n")[0] + b"\n"
    printed = b"@usecs: \n[2K, 4K)  30 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
    pipe = io.BufferedReader(Trickle(records + printed, len(records)))  # type: ignore[arg-type]
    notes = [i for i in read_pipeline("-", pipe) if isinstance(i, Notice)]
    lines = records.count(b"\n")
    assert [(n.message, n.skipped) for n in notes] == [
        (f"<stdin>: from line {lines + 1}, 1 histogram of another format, bpftrace (bpftrace hist() text output "
         "(@map: blocks of [lo, hi) count |@@@| rows)): not read, as this input is read as pylatencymap (one format "
         "per input: give them as an input of their own)", 1)]


def test_a_label_holding_what_splitlines_takes_for_a_line_end_is_sniffed_as_its_format() -> None:
    """bpftrace's `@us[comm]` whose only process was named `ff\\fname` (real output, no banner): the sniffer cut each
    map's line at the `\\f` and knew no format ("unrecognised input format", exit 2)."""
    for odd in "\f\v\x1c\x1d\x1e\x85\u2028\u2029":
        text = "".join(f"12:00:0{k}\n@us[ff{odd}name]: \n[1K, 2K)  {count} |@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n"
                       for k, count in enumerate((783, 1490)))
        items = list(inputs.read_input("-", load_registry(), stdin=io.BytesIO(text.encode())))
        assert [(s.stream.label, int(s.counts.sum())) for s in items if not isinstance(s, Notice)] == [
            ("@us[ff?name]", 783), ("@us[ff?name]", 1490)], odd


def test_parts_of_one_whole_are_one_input_read_where_the_first_of_them_is_named(fixtures: Path) -> None:
    """A rolling Spark log's files (and its directory) named as several inputs each read the whole application."""
    rolled = fixtures / "spark" / "rolling" / "eventlog_v2_local-1795225623494"
    parts = sorted(str(p) for p in rolled.glob("events_*"))
    other = str(fixtures / "pylatencymap" / "example_latency_data.txt")
    registry = load_registry()
    got = inputs.read_once([other, parts[2], str(rolled), parts[0], other], registry)
    assert [(p, None if note is None else note.message) for p, note in got] == [
        (other, None),
        (str(rolled), f"{Path(parts[2]).name}, {rolled.name}, {Path(parts[0]).name}: parts of one Spark "
                      f"application's rolling event log, {rolled}: read once, as one input"),
        (other, None)]
    assert inputs.read_once([parts[1]], registry) == [(parts[1], None)]  # its format says it reads the whole
    assert inputs.read_once([other, other], registry) == [(other, None), (other, None)]  # no parts: as named
    # read in a format chosen that reads no path itself, they are files like any other
    assert inputs.read_once([parts[0], parts[1]], registry, "raw") == [(parts[0], None), (parts[1], None)]
