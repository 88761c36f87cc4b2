"""`diff` of streams whose rows are placed within their source's own buckets: `.hgrm` percentile printouts of the
real HdrHistogram library (Python's, and Java's HistogramLogProcessor), Prometheus buckets of a real exporter."""

from __future__ import annotations

import io
import itertools
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hdr_support import Logged, library_histogram, write_library_log
from prometheus_support import scraped_intervals
from skips_support import need_binary, skip_missing

from latencymap.cli.main import main
from latencymap.core.accumulator import Accumulator
from latencymap.outputs.compare import ALPHA, compare, compare_text

#: Nanoseconds: a service's requests around 200 µs (log-normal, sigma 0.3), as the hunter's generator draws them.
MEDIAN_NS, SIGMA, EVENTS = 200_000, 0.3, 60_000


def sample(seed: int, scale: float = 1.0, band: int = 0) -> np.ndarray:
    """`EVENTS` values (ns) of the one distribution, `scale`d, with `band` more around 20 ms."""
    rng = np.random.default_rng(seed)
    values = np.exp(np.log(MEDIAN_NS) + SIGMA * rng.standard_normal(EVENTS)) * scale
    if band:
        values = np.concatenate([values, np.exp(np.log(20_000_000) + 0.1 * rng.standard_normal(band))])
    return np.round(values).astype(np.int64)


def printout(path: Path, values: np.ndarray) -> Path:
    """The library's percentile distribution of `values` in milliseconds (what `.hgrm` files hold), written to
    `path`."""
    out = io.BytesIO()
    library_histogram(values.tolist()).output_percentile_distribution(out, 1e6)
    path.write_bytes(out.getvalue())
    return path


@pytest.fixture(scope="module")
def printouts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("hgrm")
    made = {f"seed{s}": printout(folder / f"seed{s}.hgrm", sample(s)) for s in range(1, 6)}
    made["x1.3"] = printout(folder / "x1.3.hgrm", sample(11, scale=1.3))
    made["x1.05"] = printout(folder / "x1.05.hgrm", sample(12, scale=1.05))
    made["band"] = printout(folder / "band.hgrm", sample(13, band=EVENTS // 50))
    return made


def diff(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["diff", *map(str, args)])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, result.stdout


def test_printouts_of_one_distribution_read_unchanged(printouts: dict[str, Path]) -> None:
    """Two `.hgrm` printouts of one distribution read `changed` (G-test p = 4e-119, 1e-177 for two seeds of five;
    `--fail-on-change` exited 1): the events from a printout's minimum up to its next point (its 10th percentile) were
    spread log-uniformly over that range, which starts where each sample's minimum falls, and the test counted the
    spreading as observed (1.5% against 0.4% of the events in 32–64 µs, where 0.02% lie). Only what the points
    observe is tested now."""
    seeds = [printouts[f"seed{s}"] for s in range(1, 6)]
    for base, cand in itertools.pairwise(seeds):
        code, text = diff("--fail-on-change", "--format", "json", base, cand)
        (pair,) = json.loads(text)["pairs"]
        assert (code, pair["changed"]) == (0, False), (base.name, cand.name, pair["test"])
        assert pair["test"]["p"] >= ALPHA and pair["rows_placed"] == ["baseline", "candidate"]
    text = diff(seeds[0], seeds[1])[1]
    assert ("   rows placed within the baseline's and the candidate's own buckets (percentile points, bounds): tested "
            "only beyond where their events may lie\n   no change beyond chance: ") in text


@pytest.mark.parametrize("name", ["x1.3", "x1.05", "band"])
def test_a_shift_or_a_band_between_printouts_still_reads_changed(printouts: dict[str, Path], name: str) -> None:
    """×1.3 and ×1.05 of the latency, and 2% more events around 20 ms: changed by the bucket shares beyond chance,
    each as what the points observe allows the least."""
    code, text = diff("--fail-on-change", "--format", "json", printouts["seed1"], printouts[name])
    (pair,) = json.loads(text)["pairs"]
    assert code == 1 and pair["changed"] is True
    assert pair["test"]["p"] < ALPHA and "events_share" in pair["test"]["effects"], pair["test"]
    if name == "band":
        assert pair["bands_appeared"] and "bands" in pair["test"]["effects"]


def _hdrhistogram_jar() -> str:
    """The Java HdrHistogram jar: $HDRHISTOGRAM_JAR or Debian's."""
    for jar in (os.environ.get("HDRHISTOGRAM_JAR", ""), "/usr/share/java/hdrhistogram.jar"):
        if jar and Path(jar).is_file():
            return jar
    skip_missing("the Java HdrHistogram library", "apt-get install libhdrhistogram-java (.ci/install-system.sh)")


@pytest.mark.slow
def test_java_log_processor_printouts_of_one_distribution_read_unchanged(tmp_path: Path) -> None:
    """As the hunter's: logs of 60 one-second intervals of 1,000 values, each printed by Java's HistogramLogProcessor
    (`-outputValueUnitRatio 1e6`, ms). Two seeds read `changed` (p = 4e-119) and `--fail-on-change` exited 1."""
    java = need_binary("java", remedy="apt-get install default-jre-headless")
    jar = _hdrhistogram_jar()
    start = 1_795_651_200.25
    hgrm = []
    for seed in (1, 2):
        values = sample(seed).reshape(60, EVENTS // 60)
        log = write_library_log(tmp_path / f"seed{seed}.hlog",
                                [Logged(None, start + k, 1.0, row.tolist()) for k, row in enumerate(values)],
                                start, start)
        out = tmp_path / f"seed{seed}"
        subprocess.run([java, "-Duser.timezone=UTC", "-cp", jar, "org.HdrHistogram.HistogramLogProcessor", "-i",
                        str(log), "-o", str(out), "-outputValueUnitRatio", "1e6"], check=True, capture_output=True,
                       timeout=120, env={**os.environ, "LC_ALL": "C"})
        hgrm.append(out.with_suffix(".hgrm"))
    code, text = diff("--fail-on-change", "--format", "json", *hgrm)
    (pair,) = json.loads(text)["pairs"]
    assert (code, pair["changed"]) == (0, False) and pair["test"]["p"] >= ALPHA, pair["test"]
    assert pair["baseline"]["events"] == pair["candidate"]["events"] == EVENTS


@pytest.mark.slow
def test_a_move_between_two_buckets_of_one_prometheus_layout_inside_a_row_is_found() -> None:
    """Real prometheus_client histograms of one bucket set, 25 ms between two row edges (16.4 ms, 32.8 ms): a
    quarter of the events moved from (10, 25] ms to (25, 50] ms. Around the row edges both sides' buckets allow the
    same shares; at 25 ms, a bound of both, each side's count is exact, and the move is found there."""
    bounds = (0.005, 0.01, 0.025, 0.05, 0.1)
    base = scraped_intervals(bounds, [0.012] * 20 + [0.04] * 20, columns=3)
    cand = scraped_intervals(bounds, [0.012] * 10 + [0.04] * 30, columns=3)
    accs = [Accumulator() for _ in range(2)]
    for acc, items in zip(accs, (base, cand), strict=True):
        acc.add(items)
    (pair,) = compare(*accs)["pairs"]
    assert pair["rows_placed"] == ["baseline", "candidate"] and pair["changed"] is True, pair["test"]
    assert pair["test"]["p"] < ALPHA
    (same,) = compare(accs[0], accs[0])["pairs"]
    assert same["changed"] is False and same["test"]["g"] == 0
    assert "rows placed within" in compare_text(compare(*accs))
