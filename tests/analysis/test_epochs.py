"""Epoch start-up (analysis/epochs.py) of real DataLoader loops timed by `timed_iter`: the report says when the epochs'
starts are a large share of the time waiting for data, and that persistent workers keep them only where the data
says the workers start anew every epoch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from epochs_support import PHASES, record_loop
from formats_support import report_json
from skips_support import requires_module

from latencymap.analysis.epochs import PhaseSums, epoch_startup, starts_of
from latencymap.analysis.thresholds import DEFAULT_THRESHOLDS
from latencymap.cli.main import main
from latencymap.core.buckets import NSLOTS
from latencymap.core.model import StreamId

TORCH = requires_module("torch", remedy=".ci/install-system.sh installs torch==2.13.0 (CPU)")
ADVICE = "persistent_workers=True keeps them"


def report_text(path: Path, *options: str) -> str:
    result = CliRunner().invoke(main, ["report", *options, str(path)])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def loops(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, tuple[Path, dict[str, list[int]]]]:
    """The same loop, 2 workers, 5 epochs of 40 batches, with workers persistent (True) or not (False): its
    recording and the truth."""
    out = {}
    for persistent in (False, True):
        path = tmp_path_factory.mktemp("epochs") / "rec.txt"
        out[persistent] = (path, record_loop(path, persistent=persistent))
    return out


@pytest.mark.slow
@TORCH
def test_workers_that_start_anew_every_epoch_are_said_with_the_numbers_and_persistent_workers(loops) -> None:
    """2 workers without persistent_workers start again at each epoch's `iter()` (~30 ms here, ~170 ms on a loaded
    VM) and shut down in its last `next()` (~9 ms), against batch waits of ~0.6 ms: the epochs' starts were half or
    more of the time waiting for data, and nothing said so (the report had three streams, each fine on its own)."""
    path, truth = loops[False]
    starts, waits, ends = (np.array(truth[phase]) * 1e-9 for phase in PHASES)
    share = starts.sum() / (starts.sum() + waits.sum())
    assert len(starts) == 5 and len(waits) == 5 * 39 and len(ends) == 5
    assert share >= 0.35 and np.median(ends) >= 2e-3, (share, ends)  # the loop is what the test is about
    [epochs] = report_json(path)["epochs"]
    assert epochs["label"] == "dl/rank0/data_wait" and epochs["restart"] is True
    assert (epochs["epochs"], epochs["waits"], epochs["ends"]) == (5, 195, 5)
    assert epochs["start_s"] == pytest.approx(starts.sum()) and epochs["wait_s"] == pytest.approx(waits.sum())
    assert epochs["share"] == pytest.approx(share)
    finding = epochs["finding"]
    assert finding["kind"] == "epoch_startup" and finding["time_share"] == pytest.approx(share)
    assert finding["what"].startswith(f"epoch start-up is {round(100 * share)}% of the time waiting for data: ")
    assert " over 5 epochs, " in finding["what"] and " per batch wait" in finding["what"]
    assert finding["why"].startswith("each epoch's end took ") and finding["why"].endswith(
        "the DataLoader shutting its workers down: its workers start anew every epoch; " + ADVICE)
    line = f"dl/rank0/data_wait: {finding['what']} — {finding['why']}"
    assert line in report_text(path).splitlines()
    page = report_text(path, "--format", "html")
    assert '<section class="epochs">' in page and "persistent_workers=True keeps them</li>" in page


@pytest.mark.slow
@TORCH
def test_persistent_workers_start_once_and_say_nothing(loops) -> None:
    """The same loop with persistent_workers=True: the workers start in the first epoch only; later epochs' starts
    are a first batch's load (~3 ms) among 39 batch waits: no finding, no line, and the ends shut nothing down."""
    path, truth = loops[True]
    starts, ends = np.array(truth[PHASES[0]]) * 1e-9, np.array(truth[PHASES[2]]) * 1e-9
    assert len(starts) == 5 and np.median(ends) < DEFAULT_THRESHOLDS.epoch_shutdown_s, ends
    [epochs] = report_json(path)["epochs"]
    assert epochs["finding"] is None and epochs["restart"] is False, epochs
    assert epochs["slowest_start_s"] == pytest.approx(starts.max(), rel=0.5)  # the first epoch's: the workers' start
    for text in (report_text(path), report_text(path, "--format", "html")):
        assert "epoch start-up" not in text.lower() and "persistent_workers" not in text


@pytest.mark.slow
@TORCH
def test_persistent_workers_with_slow_reads_are_said_without_the_advice(tmp_path: Path) -> None:
    """Persistent workers, items of 20 ms, steps of 30 ms: the batches come prefetched (~1 ms waits) but each epoch's
    first batch loads with nothing prefetched (~45 ms): the starts are most of the waiting, and much slower than a
    batch wait, yet the workers persist (the ends, ~0.2 ms, shut nothing down): no persistent_workers advice."""
    path = tmp_path / "rec.txt"
    record_loop(path, persistent=True, epochs=4, batches=8, read_s=0.02, step_s=0.03)
    [epochs] = report_json(path)["epochs"]
    assert epochs["restart"] is False and epochs["share"] > 0.5, epochs
    assert epochs["start_s"] / 4 > 4 * epochs["wait_s"] / epochs["waits"]  # much slower than a batch wait
    why = epochs["finding"]["why"]
    assert why.startswith("the epochs' ends shut no workers down (") and "persistent_workers" not in why, why


def sums(*values_s: float) -> PhaseSums:
    """The slot sums of durations (s), as the instrument bins them (ns, log2 slots)."""
    counts, times = np.zeros(NSLOTS, dtype=np.int64), np.zeros(NSLOTS)
    for v in values_s:
        slot = int(np.floor(np.log2(v * 1e9))) + 1
        counts[slot] += 1
        times[slot] += v
    return PhaseSums(counts, times)


def test_the_first_epoch_s_start_alone_is_no_finding() -> None:
    """Workers persist: the first epoch's start (their start-up, 300 ms) holds 60% of the waiting, the four after it
    5 ms each against 40 waits of 1 ms each: what repeats is 11% of it, no finding."""
    e = epoch_startup("r/rank0/data_wait", sums(0.3, *[0.005] * 4), sums(*[0.001] * 160), sums(*[1e-4] * 5), 10.0)
    assert e.share > 0.6 and e.finding is None and e.restart is False


def test_a_loop_that_leaves_every_epoch_early_says_it_cannot_tell_whether_workers_restart() -> None:
    """No epoch ran to its end (no `epoch_end`): whether the workers are shut down there is not known."""
    e = epoch_startup("r/rank0/data_wait", sums(*[0.17] * 5), sums(*[0.002] * 100), None, 5.0)
    assert e.restart is None and e.finding is not None
    assert "whether they start anew every epoch is not known" in e.finding.why and ADVICE not in e.finding.why


def test_starts_that_matter_to_nobody_are_no_finding() -> None:
    """Starts of 2 ms against batch waits of 0.1 ms (the waiting is small) in a run of 100 s: under 1% of it."""
    e = epoch_startup("r/rank0/data_wait", sums(*[0.002] * 10), sums(*[1e-4] * 100), sums(*[0.005] * 10), 100.0)
    assert e.share > 0.5 and e.restart is True and e.finding is None


def test_one_epoch_repeats_nothing() -> None:
    e = epoch_startup("r/rank0/data_wait", sums(0.2), sums(*[0.001] * 10), sums(0.01), 1.0)
    assert e.finding is None and e.restart is None


@pytest.mark.parametrize(("label", "starts"), [
    ("r/rank0/data_wait", "r/rank0/data_wait.epoch_start"),
    ("r/rank0/data_wait.epoch_end", "r/rank0/data_wait.epoch_start"),
    ("r/rank0.pid42/load.epoch_start [writer 2]", "r/rank0.pid42/load.epoch_start [writer 2]"),
    ("r/rank0/data_wait [writer 2]", "r/rank0/data_wait.epoch_start [writer 2]"),
])
def test_each_phase_of_a_timed_iter_finds_its_epoch_starts(label: str, starts: str) -> None:
    assert starts_of(StreamId(label, "training", "nanosec")) == StreamId(starts, "training", "nanosec")
    assert starts_of(StreamId(label, "bpf", "nanosec")) is None
