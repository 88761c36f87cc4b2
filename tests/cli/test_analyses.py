"""The analysis of the sources inputs are read through, as the view hands it to the TUI: none until an input read
through one (a Spark event log) has given its columns; several inputs' stragglers together, each on its stream."""

from __future__ import annotations

import shutil
from pathlib import Path

from latencymap.cli.analyses import InputAnalyses, analysed_sources
from latencymap.cli.common import REGISTRY
from latencymap.core.model import Interval
from latencymap.flow.pipeline import input_flow
from latencymap.outputs.report import analysis_causes
from latencymap.plugins import TextFormat
from latencymap.sources.spark.source import SparkSource

ROOT = Path(__file__).resolve().parents[2]
PLAIN, ZSTD, WARMUP = (str(ROOT / "fixtures" / "spark" / kind) for kind in ("plain", "zstd", "warmup"))
OTHER = str(ROOT / "fixtures" / "pylatencymap" / "example_latency_data.txt")


def read(*inputs: str) -> tuple[InputAnalyses, set]:
    """The analyses of `inputs` once read whole, and the streams they gave."""
    readers: list[TextFormat] = []
    found = InputAnalyses(readers)
    flow = input_flow(list(inputs), REGISTRY, readers=readers)
    assert found.analysis() is None  # nothing read yet
    streams = {item.stream for item in flow if isinstance(item, Interval)}
    return found, streams


def test_one_log_has_its_sources_analysis_and_streams() -> None:
    found, streams = read(PLAIN)
    analysis = found.analysis()
    source = SparkSource(target=PLAIN)
    list(source.items())
    assert analysis == source.analysis() and analysis["stragglers"]
    assert {found.straggler_stream(s) for s in analysis["stragglers"]} == streams
    assert found.straggler_stream(dict(analysis["stragglers"][0])) is None  # only those it listed


def test_an_input_read_through_no_source_has_none() -> None:
    found, streams = read(OTHER)
    assert streams and found.analysis() is None and not analysed_sources(found.readers)


def test_several_logs_list_each_ones_stragglers_on_its_own_stream() -> None:
    """Two logs of one application (two streams, the second named by its input): each one's stragglers, named by
    their input, the slowest first, each on the stream its input gave; the findings' causes on both."""
    found, streams = read(PLAIN, ZSTD)
    analysis = found.analysis()
    assert analysis is not None and len(streams) == 2
    stragglers = analysis["stragglers"]
    ratios = [s["ratio"] for s in stragglers]
    assert len(stragglers) == 4 and ratios == sorted(ratios, reverse=True)
    on = {}
    for s in stragglers:
        on.setdefault(found.straggler_stream(s), []).append(s["group"].split(" stage ")[0])
    assert set(on) == streams and sorted(map(sorted, on.values())) == [[PLAIN] * 2, [ZSTD] * 2]
    assert set(analysis_causes(analysis, found.straggler_stream)) == streams


def test_the_warm_up_tasks_of_each_log_are_among_the_causes_of_its_stream(tmp_path: Path) -> None:
    """The view's findings name warm-up tasks as the report's do (`analysis_causes`): one log's, and of two logs each
    one's on the stream its input gave. They were left out: the findings guessed at their cause."""
    source = SparkSource(target=WARMUP)
    list(source.items())
    warmup = source.analysis()["warmup"]
    cold = sorted(w["task_id"] for w in warmup)
    assert sorted(w["task_id"] for w in warmup if w["warmup_reason"] == "cold") == [0, 1, 2]  # an executor's first
    again = tmp_path / "again"
    shutil.copytree(WARMUP, again)
    for inputs in ((WARMUP,), (WARMUP, str(again))):
        found, streams = read(*inputs)
        analysis = found.analysis()
        assert analysis is not None and len(streams) == len(inputs)
        causes = analysis_causes(analysis, found.straggler_stream)
        assert set(causes) == streams
        for stream in streams:
            assert sorted(s["task_id"] for s in causes[stream] if s["warmup"]) == cold
