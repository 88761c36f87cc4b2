"""The diagnosis of a whole stream history, computed once and shared by reports, gates, replay and views."""

from __future__ import annotations

import weakref

from latencymap.analysis.columns import history_columns
from latencymap.analysis.diagnosis import Diagnosis, diagnose
from latencymap.core.accumulator import GAP, StreamHistory

_DIAGNOSES: weakref.WeakKeyDictionary[StreamHistory, tuple[tuple[int, str], Diagnosis]] = weakref.WeakKeyDictionary()


def stream_diagnosis(hist: StreamHistory) -> Diagnosis:
    """Bands, bimodality, tail and episodes of a stream's whole history (computed once per history state).

    The report, the gates and the static renderers all ask for it; episode detection is the costly part. The
    columns are read from the history a chunk at a time (`history_columns`): no dense matrix of them all is built.
    """
    # the columns added (they only grow) and what the values measure (`Notice.measures`) mark the history's state
    state = (hist.n + hist.dropped, hist.measures)
    cached = _DIAGNOSES.get(hist)
    if cached is None or cached[0] != state:
        cached = _DIAGNOSES[hist] = (state, diagnose(history_columns(hist), None, hist.low, hist.high,
                                                     hist.meta_in("start"), hist.meta_in("end"),
                                                     datasource=hist.stream.datasource, label=hist.stream.label,
                                                     measures=hist.measures, exact=hist.exact,
                                                     gaps=(hist.meta_in("flags") & GAP) != 0,
                                                     seen_max=(hist.seen or (None, None))[1],
                                                     seen_min=(hist.seen or (None, None))[0],
                                                     dropped=hist.dropped))
    return cached[1]
