"""The stragglers panel: a real Spark event log's straggler tasks and stage skew in the TUI, as the report has them."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from frames_support import generated
from tui_support import analysis_shown, told, wait_ended

from latencymap.flow.pipeline import diffed
from latencymap.outputs.report import straggler_lines
from latencymap.sources.spark.source import SparkSource
from latencymap.tui.app import LatencyMapApp
from latencymap.tui.stragglers import MAX_STRAGGLERS, StragglersPanel, straggler_line, stragglers_text

SPARK = Path(__file__).resolve().parents[2] / "fixtures" / "spark" / "plain"
EXAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "pylatencymap" / "example_latency_data.txt"


def spark_app() -> tuple[LatencyMapApp, SparkSource]:
    source = SparkSource(target=str(SPARK))
    return LatencyMapApp(diffed(source.items(), "spark"), color_mode="truecolor", analysis=source.analysis), source


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_panel_lists_the_reports_stragglers_when_the_log_is_read(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    app, source = spark_app()

    async def main() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            await wait_ended(pilot)
            panel = app.query_one(StragglersPanel)
            found = source.analysis()
            assert panel.found == found and found["stragglers"]
            lines = panel.plain_lines()
            assert f"{len(found['stragglers'])} straggler" in lines[0]
            first = found["stragglers"][0]
            assert lines[1].strip() == straggler_line(first)
            assert f"task {first['index']} (id {first['task_id']})" in lines[1] and "× the stage median" in lines[1]
            assert any(line.strip().startswith("stage ") and "skew" in line for line in lines)
            await pilot.press("s")  # saved frames hold the panel too
            await pilot.pause()
            assert "stragglers" in app.saved[1].read_text()

    asyncio.run(main())


@pytest.mark.parametrize("command", [[], ["replay", "--max"]])
def test_latencymap_log_shows_the_stragglers_latencymap_spark_log_shows(command: list[str], tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """`latencymap LOG` (the view command, the log read as an input format) and `latencymap replay LOG` open the TUI
    with the same stragglers panel and findings as `latencymap spark LOG`; they had none."""
    monkeypatch.chdir(tmp_path)
    spark = analysis_shown(["spark", str(SPARK)], monkeypatch)
    view = analysis_shown([*command, str(SPARK)], monkeypatch)
    assert spark["stragglers"] is not None and spark["stragglers"][0] and spark["stragglers"][1]["stragglers"]
    assert view == spark


def test_no_panel_for_an_input_read_through_no_source(monkeypatch: pytest.MonkeyPatch) -> None:
    """`latencymap FILE` of another format: no stragglers panel shown."""
    shown = analysis_shown([str(EXAMPLE)], monkeypatch)
    assert len(shown) == 2 and (shown["stragglers"] is None or not shown["stragglers"][0])  # none, or not displayed


def test_no_analysis_no_panel_and_a_failing_one_is_a_notice() -> None:
    def broken() -> dict:
        raise RuntimeError("boom")

    source = SparkSource(target=str(SPARK))
    app = LatencyMapApp(diffed(source.items(), "spark"), color_mode="truecolor", analysis=broken)

    async def main() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            await wait_ended(pilot)
            assert app.query_one(StragglersPanel).found is None
            assert any("analysis failed: boom" in m for m in told(app))

    asyncio.run(main())


def test_t_selects_stragglers_and_moves_the_cursor_to_the_column_each_finished_in() -> None:
    app, source = spark_app()

    async def main() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            await wait_ended(pilot)
            panel = app.query_one(StragglersPanel)
            shown = source.analysis()["stragglers"][:MAX_STRAGGLERS]
            assert len(shown) >= 2 and panel.placed() == list(range(len(shown)))
            hist = app.current()
            assert hist is not None
            starts, ends = hist.start, hist.end
            for step, want in (("t", 0), ("t", 1), ("T", 0), ("T", len(shown) - 1)):
                await pilot.press(step)
                await pilot.pause()
                assert panel.selected == want
                column = app.view.cursor
                assert column is not None
                finished = shown[want]["end"]
                assert starts[column] <= finished < ends[column] or (column == hist.n - 1 and finished == ends[-1])
                line = panel.plain_lines()[1 + want]
                assert line.startswith("▶ ") and line[2:] == straggler_line(shown[want])
            assert sum(line.startswith("▶") for line in panel.plain_lines()) == 1

    asyncio.run(main())


def test_t_without_stragglers_says_so() -> None:
    app = LatencyMapApp(iter(generated(30, seed=3)), color_mode="truecolor")

    async def main() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            await wait_ended(pilot)
            cursor = app.view.cursor
            await pilot.press("t")
            await pilot.pause()
            assert app.view.cursor == cursor
            assert any("no straggler" in m for m in told(app))

    asyncio.run(main())


def test_column_of_a_time() -> None:
    import numpy as np

    from latencymap.tui.actions import column_of

    starts, ends = np.array([10.0, 11.0, 13.0]), np.array([11.0, 12.0, 14.0])  # a gap from 12 to 13
    assert [column_of(starts, ends, t) for t in (10.0, 10.5, 11.0, 11.99, 12.5, 13.0, 14.0)] == [0, 0, 1, 1, 2, 2, 2]
    assert column_of(starts, ends, 9.99) is None and column_of(starts, ends, 14.01) is None
    assert column_of(starts[:0], ends[:0], 1.0) is None


def test_hostile_fields_are_cleaned() -> None:
    text = stragglers_text({"stragglers": [{"key": "t\x1b[31m1", "group": "g\x07", "duration_s": 2.0,
                                            "reference_s": 1.0, "group_median_s": 1.0, "ratio": 2.0}],
                            "stages": []}).plain
    assert "\x1b" not in text and "\x07" not in text and "2.0× the group median (1s)" in text


def test_spark_stragglers_panel_snapshot(snap_compare, utc) -> None:
    app, _ = spark_app()
    assert snap_compare(app, terminal_size=(160, 50), run_before=wait_ended)


def test_panel_lines_are_cut_to_the_width_and_the_legends_stay_whole_after_t() -> None:
    app, _ = spark_app()

    async def main() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_ended(pilot)
            await pilot.press("t")
            await pilot.pause(0.4)
            lines = [strip.text for strip in app.screen._compositor.render_strips()]
            top = next(k for k, line in enumerate(lines) if line.startswith(" stragglers "))
            panel = lines[top + 1: top + app.query_one(StragglersPanel).outer_size.height]
            assert any(line.startswith("▶ task") for line in panel)
            assert all(line.startswith(("▶ ", "  ")) for line in panel)  # no line wrapped to column 0
            assert any("…" in line for line in panel)
            assert sum("max " in line for line in lines[:top]) == 2  # both maps' legends end with their maximum

    asyncio.run(main())


def test_the_header_counts_the_stage_attempts_the_stragglers_are_in() -> None:
    """Five stragglers in two of five stage attempts (the real Spark log's analysis, read in a real app above, is
    the same shape): the header counts the stage attempts holding stragglers, of those analysed."""
    found = SparkSource(target=str(SPARK))
    list(found.items())
    analysis = found.analysis()
    stages = analysis["stages"]
    first, second = stages[1], stages[2]
    stragglers = [dict(analysis["stragglers"][0], stage=st["stage"], attempt=st["attempt"], task_id=k)
                  for k, st in enumerate([first] * 4 + [second])]
    line = stragglers_text({**analysis, "stragglers": stragglers}).plain.splitlines()[0]
    assert f"5 stragglers in 2 of {len(stages)} stage attempts" in line
    one = stragglers_text(analysis).plain.splitlines()[0]
    held = {(s["stage"], s["attempt"]) for s in analysis["stragglers"]}
    assert f"{len(analysis['stragglers'])} stragglers in {len(held)} of {len(stages)} stage attempts" in one


#: The analysis of a real PySpark 4 application on local-cluster[3,1,768] (speculation on; partition 7 of stage 1
#: slow): a straggler measured against its warm-up wave's fastest task, and a stage whose skew is its warm-up's.
WAVE = {"stage": 1, "attempt": 0, "index": 2, "task_id": 11, "task_attempt": 0, "executor": "1", "duration_s": 2.807,
        "ratio": 2.683556405353728, "reference_s": 1.046, "reference": "wave", "stage_median_s": 0.8035,
        "warmup": False}
STAGES = [{"stage": 0, "attempt": 0, "tasks": 9, "succeeded": 9, "median_s": 0.51, "max_s": 16.834, "skew": 33.0078,
           "warmup_tasks": 3, "skew_after_warmup": 1.3831, "max_after_warmup_s": 0.63},
          {"stage": 1, "attempt": 0, "tasks": 18, "succeeded": 18, "median_s": 0.8035, "max_s": 5.545, "skew": 6.9011,
           "warmup_tasks": 2, "skew_after_warmup": 7.1595, "max_after_warmup_s": 5.545}]


def test_a_straggler_against_its_warm_up_wave_reads_as_the_report_says_it() -> None:
    """Not `2.7× the median 1.05s` (the stage median is 804ms): the report's words, from the same code."""
    line = straggler_line(WAVE)
    assert line.startswith("task 2 (id 11) in stage 1.0: 2.81s, 2.7× its warm-up wave's fastest (1.05s)"), line
    assert "median" not in line
    (_, reported) = straggler_lines([WAVE])
    assert reported.strip().startswith(line.split(" · ")[0].replace("2.7×", "2.7x")), (reported, line)


def test_the_most_skewed_stages_are_so_without_their_warm_up_as_the_report_reads_them() -> None:
    """Stage 0's 33× is its 3 warm-up tasks' (1.4× without them): stage 1 (6.9×) is the most skewed, listed first."""
    lines = stragglers_text({"stragglers": [], "stages": STAGES}).plain.splitlines()
    assert lines[1].strip() == "stage 1.0: 18 tasks, median 804ms, max 5.54s, skew 6.9×", lines
    assert lines[2].strip() == ("stage 0.0: 9 tasks, median 510ms, max 16.8s, skew 33.0×; without its 3 warm-up "
                                "tasks: skew 1.4×, max 630ms"), lines
