"""The diagnosis of a whole stream history, computed once and shared by reports, gates, replay and views."""

from __future__ import annotations

import math
import weakref

from latencymap.analysis.columns import history_columns
from latencymap.analysis.diagnosis import Diagnosis, diagnose
from latencymap.core.accumulator import GAP, StreamHistory
from latencymap.core.source_totals import SourceTotals, source_use
from latencymap.core.units import unit_seconds

_DIAGNOSES: weakref.WeakKeyDictionary[StreamHistory, tuple[tuple[int, str, float | None], Diagnosis]] = \
    weakref.WeakKeyDictionary()


def header_p50(hist: StreamHistory, source: SourceTotals | None) -> float | None:
    """The p50 (s) the report's header prints for a stream where it is not its rows': its source's own buckets',
    when they hold every event of the columns kept (`source_use`, as `outputs.report.stream_total` reads them); None
    otherwise, or with no events."""
    totals = hist.totals(fast=True)
    if source is None or not source_use(source, totals.events, hist.n)[0]:
        return None
    scale = unit_seconds(hist.stream.unit)
    p50 = source.estimate(0.5, totals.percentiles[0.5] / scale) * scale
    return p50 if math.isfinite(p50) else None


def stream_diagnosis(hist: StreamHistory, source: SourceTotals | None = None) -> Diagnosis:
    """Bands, bimodality, tail and episodes of a stream's whole history (computed once per history state).

    The report, the gates and the static renderers all ask for it; episode detection is the costly part. The
    columns are read from the history a chunk at a time (`history_columns`): no dense matrix of them all is built.
    `source`: the stream's own buckets (`Accumulator.sources`), whose p50, where it is the header's, a stall is
    compared with (`header_p50`).
    """
    median_s = header_p50(hist, source)
    # the columns added (they only grow), what the values measure (`Notice.measures`) and the header's p50 mark the
    # history's state
    state = (hist.n + hist.dropped, hist.measures, median_s)
    cached = _DIAGNOSES.get(hist)
    if cached is None or cached[0] != state:
        cached = _DIAGNOSES[hist] = (state, diagnose(history_columns(hist), None, hist.low, hist.high,
                                                     hist.meta_in("start"), hist.meta_in("end"),
                                                     datasource=hist.stream.datasource, label=hist.stream.label,
                                                     measures=hist.measures, exact=hist.exact,
                                                     gaps=(hist.meta_in("flags") & GAP) != 0,
                                                     seen_max=(hist.seen or (None, None))[1],
                                                     seen_min=(hist.seen or (None, None))[0],
                                                     dropped=hist.dropped, median_s=median_s))
    return cached[1]
