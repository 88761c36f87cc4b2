"""The TUI's findings panel names what made a Spark stage's stragglers slow in the words `latencymap report` writes for
the same log (a partition that read many times its stage's median bytes, an executor slow in the stage), and nothing
where the log gives no cause: real PySpark (cause_job.py, `local-cluster`), through the running TUI (Pilot)."""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from skips_support import requires_binary, requires_module
from spark_support import cluster_job_log
from tmux_support import Pane
from tui_support import analysis_shown, run_ended

from latencymap.analysis.findings import WHY, why
from latencymap.cli.main import main
from latencymap.flow.pipeline import diffed
from latencymap.sources.spark.source import SparkSource
from latencymap.tui.app import LatencyMapApp
from latencymap.tui.findings import FindingsPanel

pytestmark = [pytest.mark.slow, requires_module("pyspark")]

ROOT = Path(__file__).resolve().parents[2]
JOB = ROOT / "tests" / "sources" / "spark" / "cause_job.py"
#: The report's whys that name the cause the log gives (`analysis.findings.with_cause`), in Spark's words.
KNOWN = [why(key, "spark") for key in WHY["spark"] if key.endswith(" known")]


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The job's event log."""
    return cluster_job_log(JOB, tmp_path_factory.mktemp("causes"))


def reported(log: Path, *options: str) -> dict[str, list[dict]]:
    """The JSON report's findings of each stage's stream (`--per-stage`, or as `options` say), by label."""
    r = CliRunner().invoke(main, ["report", "--format", "json", "spark", *(options or ("--per-stage",)), str(log)])
    assert r.exit_code == 0, r.output
    return {s["stream"]["label"]: s["findings"] for s in json.loads(r.stdout)["streams"]}


def cause_in(why: str, cause: str) -> bool:
    """Whether the report's `why` is the one that names `cause` (one of `KNOWN`, filled with it; or a minor band's,
    which keeps saying it is minor before it: `findings.minor_lead`)."""
    return any(known.format(cause=cause) == why for known in KNOWN) or \
        why.endswith(f", the band to look at first; {cause}")


def named(why: str) -> bool:
    """Whether a finding's why says its tasks are stragglers (or warm-up tasks) of a cause the log gives
    (`report.findings_cause`)."""
    return "is a straggler" in why or "are stragglers" in why or "warm-up task" in why


@pytest.mark.timeout(300)
def test_the_findings_panel_names_the_stragglers_causes_the_report_names(log: Path, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Each stage's findings in the panel, over the whole stage, in the report's words (`what — why`): those the
    report explains by the log's stragglers say the same cause in the same why, shown whole when selected. The panel
    said no cause at all, then the cause alone after the what (not the report's why around it)."""
    monkeypatch.chdir(tmp_path)
    report = reported(log)
    assert sum(named(f["why"]) for found in report.values() for f in found) >= 2  # the skewed partition, the executor
    source = SparkSource(target=str(log), per_stage=True)
    app = LatencyMapApp(diffed(source.items(), "spark"), color_mode="truecolor", analysis=source.analysis,
                        straggler_stream=source.straggler_stream)
    lines = {label: {f"{f['what']} — {f['why']}" for f in found if named(f["why"])} for label, found in report.items()}
    seen: dict[str, tuple[list[str], str]] = {}

    async def scenario(pilot) -> None:
        for k, hist in enumerate(app.acc.streams.values()):
            app.open_stream(k)
            await pilot.pause()
            panel = app.query_one(FindingsPanel)
            assert panel.win is not None and panel.win.first == 0 and panel.win.stop >= hist.n  # the whole stage
            texts = [item.text for item in panel.items]
            told = [i for i, text in enumerate(texts) if text in lines[hist.stream.label]]
            rendered = ""
            if told:  # the first one selected (e goes through the items): shown whole, wrapped
                for _ in range(told[0] + 1):
                    await pilot.press("e")
                rendered = " ".join(" ".join(panel.plain_lines()).split())
            seen[hist.stream.label] = (texts, rendered)

    run_ended(app, scenario, size=(160, 50))
    assert seen.keys() == report.keys()
    causes = []
    for label, found in report.items():
        texts, rendered = seen[label]
        assert lines[label] <= set(texts), (label, texts, found)  # the report's lines, exactly
        whys = {f["what"]: f["why"] for f in found}
        # the findings (the modes line first says a pair's band why too): a cause only where the report gives it
        told = dict(text.split(" — ", 1) for text in texts[1:] if named(text.partition(" — ")[2]))
        for what, said in told.items():
            assert whys.get(what) == said, (label, what, said)  # no cause the report does not give
        if lines[label]:
            first = next(text for text in texts if text in lines[label])
            assert first in rendered, (first, rendered)
        causes += [told_cause(said) or "" for said in told.values()]
    assert any(" on executor " in c for c in causes) and any("a skewed, larger partition" in c for c in causes), causes


@pytest.mark.timeout(300)
def test_latencymap_log_names_the_stragglers_and_causes_latencymap_spark_log_names(log: Path, tmp_path: Path,
                                                                                   monkeypatch: pytest.MonkeyPatch
                                                                                   ) -> None:
    """`latencymap LOG` (the default command: the log read as an input) opens the TUI with the stragglers panel and
    the findings naming their causes that `latencymap spark LOG` shows. It had neither."""
    monkeypatch.chdir(tmp_path)
    wide = (320, 50)  # every column of the job on screen at one a cell: the findings are those of the whole run
    spark = analysis_shown(["spark", str(log)], monkeypatch, wide)
    view = analysis_shown([str(log)], monkeypatch, wide)
    assert spark["stragglers"] is not None
    displayed, found, lines = spark["stragglers"]
    assert displayed and found["stragglers"] and " straggler" in lines[0]
    told = [text.split(" — ", 1)[1] for label, texts in spark.items() if label != "stragglers" for text in texts
            if " — " in text]
    # a cause the log gives, in the report's words: the slow executor, or the skewed partition (which findings of
    # the whole run take in depends on how the job's timing shaped its tail: the partition is always in it)
    assert any(" on executor " in cause or "its stage's median task's bytes" in cause for cause in told), told
    assert view == spark


def told_cause(why: str) -> str | None:
    """The cause a report's why names (what `KNOWN` fills in), None where it names none."""
    heads = [known.split("{cause}")[0] for known in KNOWN]
    found = [why[len(head):] for head in heads if why.startswith(head) and named(why[len(head):])]
    return min(found, key=len) if found else None


def text_with(pane: Pane, text: str, timeout: float) -> str:
    """The pane's text (lines joined, spaces collapsed: wrapped lines read on) once it holds `text`, or after
    `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        screen = " ".join(pane.capture().split())
        if text in screen or time.monotonic() > deadline:
            return screen
        time.sleep(0.1)


@requires_binary("tmux", remedy="apt-get install tmux (.ci/install-system.sh)")
@pytest.mark.timeout(300)
def test_latencymap_spark_in_a_terminal_names_a_slow_executor_in_its_findings(log: Path, tmp_path: Path) -> None:
    """`latencymap spark --stage N LOG` in tmux (the command passes the source's streams of its stragglers to the
    TUI): the stage slowed by one executor; `e` selects each finding in turn until one is shown whole with the
    cause the report gives for the same stage and options."""
    stages = sorted({json.loads(line)["Stage ID"] for line in log.read_text().splitlines()
                     if '"SparkListenerTaskEnd"' in line})
    for stage in stages:  # the stage the report explains by a slow executor
        found = next(iter(reported(log, "--stage", str(stage)).values()))
        said = [(f["what"], cause) for f in found if (cause := told_cause(f["why"])) and " on executor " in cause]
        if said:
            break
    assert said, "no stage's findings name a slow executor"
    what, cause = said[0]
    line = f"{what} — {next(f['why'] for f in found if f['what'] == what)}"  # the report's, as the panel says it
    command = (f"cd {shlex.quote(str(tmp_path))} && PYTHONPATH={shlex.quote(str(ROOT))} TERM=xterm-256color "
               f"COLORTERM=truecolor {shlex.quote(sys.executable)} -m latencymap spark --stage {stage} "
               f"{shlex.quote(str(log))}")
    pane = Pane(command, (240, 60))  # wide enough for the band line and the start of its cause
    try:
        pane.wait_for("ENDED", timeout=60)
        pane.keys("v")  # no inspector: the findings' lines are the panel's alone
        screen = text_with(pane, line[:len(what) + 20], 10)  # not selected: cut at the width, the why begun
        assert line[:len(what) + 20] in screen, (line, screen)
        for _ in range(8):  # each finding selected in turn, shown whole: wrapped, not cut
            pane.keys("e")
            screen = text_with(pane, line, 1)
            if line in screen:
                break
        assert line in screen and cause in line, (line, cause, screen)
    finally:
        pane.close()
