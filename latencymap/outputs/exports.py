"""Report formats beyond text/json: svg, html, parquet, openmetrics, prometheus; and the Parquet table.

Parquet (optional extra `latencymap[export]`, pyarrow imported only here): one row per column x
bucket of every stream, buckets being the report's (the slots from the fastest to the slowest ever
used), so the `frequency`/`intensity` columns reshape to the JSON report's matrices. Columns:
`label`, `datasource`, `unit` (stream identity), `column` (index in the stream's history),
`start`, `end` (epoch seconds), `duration_s`, `bucket_low_s`, `bucket_high_s`, `count`, `time_s`,
`frequency` (events/s), `intensity` (s/s), `intensity_exact`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from latencymap.core.accumulator import Accumulator
from latencymap.core.errors import InputError

BINARY_FORMATS = ("parquet",)
STATIC_FORMATS = ("svg", "html", "parquet", "openmetrics", "prometheus")


def parquet_columns(acc: Accumulator) -> dict[str, list[Any] | np.ndarray]:
    """The Parquet table's columns as NumPy arrays / lists (no pyarrow needed)."""
    parts: dict[str, list[Any]] = {k: [] for k in (
        "label", "datasource", "unit", "column", "start", "end", "duration_s", "bucket_low_s", "bucket_high_s",
        "count", "time_s", "frequency", "intensity", "intensity_exact")}
    for hist in acc.streams.values():
        used = hist.used_slots()
        if used is None:
            continue
        lo, hi = used
        ncols, nb = hist.n, hi - lo + 1
        size = ncols * nb
        s = hist.stream
        parts["label"].append(np.full(size, s.label, dtype=object))
        parts["datasource"].append(np.full(size, s.datasource, dtype=object))
        parts["unit"].append(np.full(size, s.unit, dtype=object))
        parts["column"].append(np.repeat(np.arange(ncols, dtype=np.int64), nb))
        for name, arr in (("start", hist.start), ("end", hist.end), ("duration_s", hist.durations)):
            parts[name].append(np.repeat(arr, nb))
        parts["bucket_low_s"].append(np.tile(hist.low[lo: hi + 1], ncols))
        parts["bucket_high_s"].append(np.tile(hist.high[lo: hi + 1], ncols))
        parts["count"].append(hist.counts[:, lo: hi + 1].reshape(-1).astype(np.int64))
        parts["time_s"].append(hist.time[:, lo: hi + 1].reshape(-1))
        parts["frequency"].append(hist.frequency(slots=slice(lo, hi + 1)).reshape(-1))
        parts["intensity"].append(hist.intensity(slots=slice(lo, hi + 1)).reshape(-1))
        parts["intensity_exact"].append(np.repeat(hist.exact_columns(), nb))
    empty = {"label": object, "datasource": object, "unit": object, "column": np.int64, "count": np.int64,
             "intensity_exact": bool}
    return {k: np.concatenate(v) if v else np.zeros(0, dtype=empty.get(k, np.float64)) for k, v in parts.items()}


def write_parquet(acc: Accumulator, path: str) -> None:
    """Write the table; a missing pyarrow is an InputError naming the extra to install."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError("--format parquet needs pyarrow: pip install 'latencymap[export]'") from None
    cols = parquet_columns(acc)
    arrays = {}
    for name, values in cols.items():
        kind = pa.string() if name in ("label", "datasource", "unit") else None
        arrays[name] = pa.array(list(values) if kind is not None else values, type=kind)
    pq.write_table(pa.table(arrays), path)
