"""`latencymap report`: whole inputs, or a source run to its end, analysed with no UI (text, JSON, SVG, ...)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from latencymap.cli.analyses import Analysed, analysed_sources, run_name, shown_stream
from latencymap.cli.common import (
    EXIT_CODES,
    EXIT_FAIL,
    EXIT_OK,
    REGISTRY,
    HungUp,
    Terminated,
    guarded,
    no_terminal_input,
    raise_if_asked,
    say,
)
from latencymap.cli.options import format_kwargs, format_options, history_option, limit_options
from latencymap.cli.running import built, prepare, source_flow
from latencymap.cli.tuning import keep_freed_memory
from latencymap.core import stopping
from latencymap.core.accumulator import DEFAULT_HISTORY, Accumulator, HistoryLimit, accumulate
from latencymap.core.errors import InputError, NothingReadable
from latencymap.core.model import ColumnFlow, Notice, StreamId
from latencymap.core.sanitize import clean_text
from latencymap.flow.pipeline import CountCut, DurationCut, column_flow
from latencymap.outputs.files import check_output, write_text, writing
from latencymap.outputs.report import (
    Causes,
    analysis_causes,
    build_report,
    report_text,
    source_lines,
    source_notes,
)
from latencymap.plugins import Source, SourceError, TextFormat

if TYPE_CHECKING:
    from collections.abc import Callable

    from latencymap.views.svg import Notes, Stragglers, Unplaced

PARQUET_NEEDS_OUTPUT = "--format parquet needs -o FILE (it is a binary format)"


def _parse_gates(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> list[Any]:
    if not value:
        return []
    from latencymap.outputs.gates import GateError, parse_gate

    try:
        return [parse_gate(v) for v in value]
    except GateError as err:
        raise click.BadParameter(str(err), ctx, param) from None


def _gate_failures(acc: Any, gates: list[Any], untimed: set[StreamId] | None = None) -> int:
    """Say each gate that fails (`untimed`: the streams whose rate is not known); the exit code."""
    if not gates:
        return EXIT_OK
    from latencymap.outputs.gates import check_gates

    failures = check_gates(acc, gates, untimed or set())
    for line in failures:
        click.echo(f"latencymap: {line}", err=True)
    return EXIT_FAIL if failures else EXIT_OK


def _takes_value(params: list[click.Parameter]) -> dict[str, bool]:
    """Each option string of `params`, and whether it is followed by a value."""
    return {name: not (p.is_flag or p.count) for p in params if isinstance(p, click.Option)
            for name in (*p.opts, *p.secondary_opts)}


def split_source_args(own: list[click.Parameter], args: list[str]) -> tuple[list[str], list[str]]:
    """`report`'s own arguments, and `SOURCE [SOURCE OPTIONS]` (empty when no source is named). After the source's
    name its own options are its own, even where `report` has one of the same name (`scrape --interval`, not the
    10046 format's); `report`'s other options may still come anywhere."""
    mine = _takes_value(own)
    at = 0
    while at < len(args) and args[at] not in REGISTRY.sources:
        token = args[at]
        if token == "--":
            return args, []
        at += 2 if mine.get(token) else 1  # an option's value is never the source's name
    if at >= len(args):
        return args, []
    theirs = _takes_value(REGISTRY.sources[args[at]].params())
    kept, source = list(args[:at]), [args[at]]
    rest = iter(args[at + 1:])
    for token in rest:
        name = token.partition("=")[0]
        if name in theirs or name not in mine:
            source.append(token)
            if theirs.get(token):
                source.append(next(rest, ""))
        else:
            kept.append(token)
            if mine.get(token):
                kept.append(next(rest, ""))
    return kept, source


#: `report --help`: its own examples (the sources it can run are listed after them, from the registry).
REPORT_EXAMPLES = """\b
Examples:
  latencymap report trace.zst
  latencymap report --format json fixtures/pylatencymap/test_SystemTap_data.txt
  latencymap report --fail-if 'p99 > 20ms' --fail-if 'tail.events_share < 5%' bench.txt
  latencymap report --format html -o io.html trace.zst
  latencymap report scrape http://localhost:8000/metrics --metric NAME --count 60
  latencymap report spark /var/log/spark-events/app-1234"""

#: `report --help`: what each `--fail-if` metric means.
GATE_METRICS = (
    ("p50 p90 p99 p999 mean", "latency percentiles and mean, compared with a unit (ns us ms s min h days): "
                              "'p99 > 20ms'"),
    ("time events rate", "time waited ('time > 1s'), events counted, events per second (not known without "
                         "timestamps)"),
    ("bands", "how many latency bands (modes of the log2 histogram) the stream has, those too small to count as "
              "modes and far outliers included"),
    ("bimodal", "two or more bands each with >= 3% of the events or >= 10% of the time (a band of one or two far "
                "outliers counts when it holds >= 10% of the time)"),
    ("tail.events_share", "the share of the slowest events that spend half of all the time (0 to 1, or a "
                          "percentage): 'tail.events_share < 5%' fails when under 5% of the events spend half of "
                          "the time (a heavy tail)"),
    ("tail.time_share", "the time those events hold: 50% by construction, no gate on its own"),
)
GATES_NOTE = ("A stream with no events (or no time) has no percentiles, mean or tail: comparisons on them are false "
              "('events == 0' fails on an empty stream). With no stream at all, every gate fails. A gate a stream "
              "cannot tell (a percentile only known to be at least an open top bucket's bound, a rate not known) "
              "fails, saying 'cannot tell'. Values within one part in 10^9 of the threshold compare equal.")


class _ReportCommand(click.Command):
    """`report`, whose arguments after a source's name go to that source first."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        kept, source = split_source_args(self.params, args)
        return super().parse_args(ctx, [*kept, "--", *source] if source else kept)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Its examples, the sources it can run (those installed, from the registry: none is imported for it),
        what the `--fail-if` metrics mean, then every exit code."""
        sources = REGISTRY.sources
        parts: list[tuple[str, list[tuple[str, str]]]] = [
            ("Sources (report SOURCE [SOURCE OPTIONS]; 'latencymap SOURCE --help' gives its options):",
             [(name, sources.summary(name)) for name in sources.names()]),
            ("--fail-if metrics (each gate is checked on every stream's whole history):", list(GATE_METRICS)),
        ]
        with formatter.indentation():
            formatter.write_paragraph()
            formatter.write_text(REPORT_EXAMPLES)
            for title, rows in parts:
                if rows:
                    formatter.write_paragraph()
                    formatter.write_text(title)
                    with formatter.indentation():
                        formatter.write_dl(rows, col_max=24)
            formatter.write_paragraph()
            formatter.write_text(GATES_NOTE)
            formatter.write_paragraph()
            formatter.write_text(EXIT_CODES)


@click.command("report", cls=_ReportCommand, epilog=EXIT_CODES, context_settings={"ignore_unknown_options": True})
@click.argument("inputs", nargs=-1, metavar="[INPUT]... | SOURCE [SOURCE OPTIONS]", type=click.UNPROCESSED)
@click.option("--format", "out_format", default="text", show_default=True,
              type=click.Choice(["text", "json", "svg", "html", "parquet", "openmetrics", "prometheus"]),
              help="Report format (parquet needs -o and the [export] extra). openmetrics: the OpenMetrics 1.0 "
                   "exposition; prometheus: the same samples in the Prometheus text format 0.0.4, which has no gauge "
                   "histogram (what node_exporter's textfile collector and promtool read).")
@click.option("--input-format", default=None, metavar="NAME",
              help=f"Input format instead of auto-detection: {', '.join(sorted(REGISTRY.formats.names()))}.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write the report to a file instead of stdout.")
@click.option("--fail-if", "fail_if", multiple=True, metavar="EXPR", callback=_parse_gates,
              help="Exit 1 when EXPR holds for any stream, e.g. 'p99 > 20ms', 'tail.events_share < 5% or bimodal'. "
                   "Metrics: p50 p90 p99 p999 mean time events rate bands tail.time_share tail.events_share "
                   "bimodal (see below); and, or, not, parentheses. Repeatable.")
@history_option("Memory for the history the report is made of: a budget for all streams (512M, 2G; default a "
                "quarter of RAM), or N columns per stream. Past it the oldest columns are dropped: the report then "
                "covers the columns kept, and each stream's summary says how many were dropped (the OpenMetrics "
                "counters still cover every column read).")
@limit_options
@format_options
def report(inputs: tuple[str, ...], out_format: str, input_format: str | None, output: str | None,
           fail_if: list[Any], history: HistoryLimit | None, **kw: Any) -> None:
    """Analyse whole INPUTs (default stdin), or a source run to its end (`report spark LOG`), with no UI."""
    fmt_opts = format_kwargs(kw)

    def body() -> int:
        check_output(output)  # before reading: a long run is not lost to a bad path at its end
        if out_format == "parquet" and not output:
            raise InputError(PARQUET_NEEDS_OUTPUT)
        keep_freed_memory()
        source = _report_source(list(inputs), kw)
        if source is None:
            no_terminal_input(inputs)
        readers: list[TextFormat] = []
        flow: ColumnFlow
        if source is not None:
            flow = prepare(source_flow(source), kw, source=source.name)
        else:
            flow = prepare(column_flow(list(inputs), REGISTRY, input_format, fmt_opts, readers=readers), kw)
        cut: list[str] = []
        flow = _left_out(flow, cut)
        acc = Accumulator(cap=history or DEFAULT_HISTORY)

        def write() -> None:
            sources = _analysed(source, readers)
            for s, _ in sources if cut else ():
                if hasattr(s, "analysis"):
                    acc.note(Notice(f"{s.name}: its analysis covers all it read, the intervals "
                                    f"{' and '.join(sorted(set(cut)))} left out of the maps too", skipped=0))
            _write(acc, sources, out_format, output, _untimed(readers))

        stopping.reads_to_end()  # a source that ends itself at SIGTERM ends the flow: reported as stopped below
        try:
            accumulate(_read_through(flow), acc, on_notice=say if source is not None else None)  # a live source: as
            # it runs; a signal from the flow's end lets the report be written (its exit code, the signal's)
            raise_if_asked()
        except NothingReadable:  # report what was read (and skipped), say what the gates found there, then fail
            stopping.read_through()  # the inputs were read to their end: as above
            write()
            _gate_failures(acc, fail_if, _untimed(readers))  # exit code 1 either way: the unreadable input's
            raise
        except (KeyboardInterrupt, Terminated, SourceError) as err:  # stopped or failed: what was read is reported
            if source is not None and isinstance(err, SourceError) and not acc.intervals_seen:
                raise  # it failed before giving a column: its error alone (its notes were said as they came)
            acc.note(Notice(_stopped(err, source), skipped=0))
            write()
            raise
        write()
        return _gate_failures(acc, fail_if, _untimed(readers))

    guarded(body)


def _read_through(flow: ColumnFlow) -> ColumnFlow:
    """`flow`, saying at its end that the command read it through (`stopping.read_through`): a signal while the
    accumulator takes in its last batch is only noted, not raised in the middle of it (which lost the items of the
    batch not taken in yet: a SIGTERM just after a `--duration` receiver's drain, 168 of 1,050 events reported)."""
    yield from flow
    stopping.read_through()


def _left_out(flow: ColumnFlow, cut: list[str]) -> ColumnFlow:
    """`flow`, with the options that left intervals out of it (`--count`, `--duration`) put in `cut` as their notes
    pass: a source's analysis covers what it read, those intervals too."""
    for item in flow:
        if isinstance(item, CountCut | DurationCut):
            cut.append("--count" if isinstance(item, CountCut) else "--duration")
        yield item


def _stopped(err: BaseException, source: Source | None) -> str:
    """The note that ends a report cut short: by Ctrl-C, SIGTERM, SIGHUP, or its source failing."""
    what = "the source failed" if isinstance(err, SourceError) else \
        "interrupted (Ctrl-C)" if isinstance(err, KeyboardInterrupt) else \
        "hung up (SIGHUP)" if isinstance(err, HungUp) else "terminated (SIGTERM)"
    read = f"{source.name} ran" if source is not None else "the inputs were read"
    return f"{what}: this report covers what was read until then (while {read})"


def _write(acc: Accumulator, sources: Analysed, out_format: str,
           output: str | None, untimed: set[StreamId] | None = None) -> None:
    """The report of `acc` in `out_format`, with the sources' own analysis (e.g. Spark's stragglers: one per input
    read through a source, each headed by its input when there are several; each source with the streams of its
    input shown under another name; `untimed`: the streams whose columns carry no time of their own, which the text
    report gives no rate)."""
    done = [(s, s.analysis() if hasattr(s, "analysis") else {}) for s, _ in sources]
    placed, nowhere, causes = _placed_stragglers(acc, done, [shown for _, shown in sources])
    if out_format not in ("text", "json"):
        notes = [(_analysis_head(s, extra) if len(done) > 1 else "", source_notes(extra)) for s, extra in done]
        write_report(acc, out_format, output, stragglers=placed, unplaced=nowhere, notes=notes, causes=causes)
        return
    if out_format == "json":
        doc = build_report(acc, arrays=True, causes=causes)
        said = [_source_json(s, extra, len(done) > 1) for s, extra in done]
        if len(said) == 1:
            doc["source"] = said[0]
        elif said:
            doc["sources"] = said
        from latencymap.outputs.json_text import dumps  # and json: a JSON report's

        text = dumps(doc) + "\n"
    else:
        lines: list[str] = []
        for s, extra in done:
            if len(done) > 1:
                lines.append(_analysis_head(s, extra))
            lines += source_lines(extra)
        text = report_text(acc, untimed or set(), causes) + "".join(f"{line}\n" for line in lines)
    write_text(text, output)


def _source_json(source: Source, extra: dict[str, Any], named: bool) -> dict[str, Any]:
    """A source's part of the JSON report: what it ran on (URL, metric, ...; the input read when `named`) and its
    analysis."""
    said = {k: v for k, v in source.describe().items() if k != "source"}
    if named:
        said["input"] = str(source.options.get("target", ""))
    return {"name": source.name, **said, **extra}


def _analysis_head(source: Source, extra: dict[str, Any]) -> str:
    """The line that heads one input's analysis when several inputs have one: the input, and its application."""
    return clean_text(f"== {source.name} analysis of {run_name(source, extra)}:", 1000)


def _placed_stragglers(acc: Accumulator, done: list[tuple[Source, dict[str, Any]]],
                       shown: list[dict[StreamId, StreamId]]) -> tuple[Stragglers, Unplaced, Causes]:
    """Each source's stragglers on the stream it counted their tasks under (`straggler_stream`), as shown (`shown`:
    the streams each input showed under another name), for SVG and HTML: one (run, list) per input whose stragglers
    the stream holds (`run` names the input and its application where a stream holds several: a log and the next
    one of the same application go on in one stream); headed by their input, those on no stream shown; and by
    stream, those whose findings may name their cause (`Causes`: of an analysis that measured the values mapped)."""
    runs: dict[StreamId, dict[int, list[dict[str, Any]]]] = {}
    nowhere: Unplaced = []
    causes: Causes = {}
    for k, (source, extra) in enumerate(done):
        left = []
        stream_of = _stream_of(acc, source, shown[k])
        for straggler in extra.get("stragglers") or []:
            stream = stream_of(straggler)
            if stream is not None:
                runs.setdefault(stream, {}).setdefault(k, []).append(straggler)
            else:
                left.append(straggler)
        if left:
            nowhere.append((_analysis_head(source, extra), left))
        for stream, found in analysis_causes(extra, stream_of).items():
            causes.setdefault(stream, []).extend(found)
    return {stream: [(clean_text(run_name(*done[k]), 1000) if len(by) > 1 else "", found) for k, found in by.items()]
            for stream, by in runs.items()}, nowhere, causes


def _stream_of(acc: Accumulator, source: Source,
               shown: dict[StreamId, StreamId]) -> Callable[[dict[str, Any]], StreamId | None]:
    """The stream shown that counted a straggler's task (`straggler_stream`, under the name its input showed it:
    `shown`); None where none did."""

    def stream_of(straggler: dict[str, Any]) -> StreamId | None:
        stream = shown_stream(source, shown, straggler)
        return stream if stream is not None and stream in acc.streams else None

    return stream_of


def _untimed(readers: list[TextFormat]) -> set[StreamId]:
    """The streams the inputs' formats read without time of their own (raw values without timestamps)."""
    return {stream for reader in readers for stream in reader.untimed_streams()}


def _analysed(source: Source | None, readers: list[TextFormat]) -> Analysed:
    """The source run, else those the inputs were read through (`analysed_sources`), for their analysis."""
    return [(source, {})] if source is not None else analysed_sources(readers)


def _report_source(args: list[str], kw: dict[str, Any]) -> Source | None:
    """The source named by the first argument of `report`, built from the rest (with `report`'s `--count` and
    `--duration` from `kw` when it stops itself: `built`); None for plain inputs."""
    if args and args[0] in REGISTRY.sources:
        reason = REGISTRY.sources[args[0]].unavailable()
        if reason:  # the source cannot run here: a failed source (1), as `latencymap SOURCE` says it
            raise SourceError(f"{args[0]}: {reason}")
    named = report_source_options(args)
    return None if named is None else built(*named, kw)


def report_source_options(args: list[str]) -> tuple[type[Source], dict[str, Any]] | None:
    """The source named by the first argument of `report` and its options parsed from the rest; None for plain
    inputs. An option that neither `report` nor the source has is a usage error."""
    if not args or args[0] not in REGISTRY.sources:
        for arg in args:
            if arg.startswith("-") and arg != "-":
                raise click.NoSuchOption(arg, f"no such option: {arg}.", ctx=click.get_current_context())
        return None
    src = REGISTRY.sources[args[0]]
    cmd = click.Command(src.name, params=src.params())
    return src, cmd.make_context(f"latencymap report {src.name}", args[1:]).params


def write_report(acc: Accumulator, out_format: str, output: str | None, stragglers: Stragglers | None = None,
                 unplaced: Unplaced | None = None, notes: Notes | None = None, causes: Causes | None = None) -> None:
    """Render `acc` as svg/html/parquet/openmetrics/prometheus to `output` (stdout for text formats when None); SVG
    and HTML with the stragglers on their streams (the findings naming their `causes`), those of no stream shown
    apart, and the sources' other `notes` after."""
    if out_format == "parquet":
        if not output:
            raise InputError(PARQUET_NEEDS_OUTPUT)
        from latencymap.outputs.exports import write_parquet

        with writing(output):
            write_parquet(acc, output)
        return
    if out_format == "svg":
        from latencymap.views.svg import render_svg

        text = render_svg(acc, stragglers, unplaced, notes, causes)
    elif out_format == "html":
        from latencymap.views.html import render_html

        text = render_html(acc, stragglers, unplaced=unplaced, notes=notes, causes=causes)
    elif out_format in ("openmetrics", "prometheus"):
        from latencymap.outputs.metrics import report_openmetrics

        text = report_openmetrics(acc, openmetrics=out_format == "openmetrics")
    else:
        raise ValueError(f"unknown report format {out_format!r}")
    write_text(text, output)
