"""Every threshold of the diagnosis, in one place: `Thresholds()` are the defaults, `replace(...)` tunes them.

`diagnose(..., thresholds=...)`, `find_peers(..., thresholds=...)` and `find_stragglers(..., thresholds=...)`
take one. Each value says what it decides and why it has its default; the README's "Findings" section
repeats them for users. No finding is emitted that would hold for any stream: a tail is a minority of the
events, a band is a share of events or time that a single population would not have, a stall is far above
every band that holds a real share of the events, a slow peer is slower than its peers by more than their
spread explains.
"""

from __future__ import annotations

from latencymap.core.lean import dataclass


@dataclass(frozen=True)
class Thresholds:
    """Tunable cut-offs of bands, tail, episodes, stalls, drift, peers and stragglers (see field comments)."""

    # Bands (bands.py): modes of the pooled log2 histogram.
    #: Neighbouring modes merge when the valley between them is above this fraction of the smaller peak ...
    max_valley_ratio: float = 0.5
    #: ... or within this many Poisson sigmas of a flat run (sparse tails do not split).
    min_valley_z: float = 3.0
    #: Slots holding at most this fraction of the smaller peak (empty octaves) form a gap ...
    deep_valley_ratio: float = 0.1
    #: ... that splits, noise test or not, when a monotonically decaying tail would leave it that empty with
    #: at most this probability: a few far events after empty octaves are a band, not their neighbour's tail.
    gap_alpha: float = 0.05
    #: ... and a gap *below* the smaller peak (a fast group, which owns no time) with at most this one, the fast group
    #: holding more than one event (two in a bucket need five empty octaves, five two): a wide population's low tail
    #: scatters a few fast events below empty octaves, and at this value samples of 30-100 events of a Weibull of
    #: shape 0.5 gain almost no false band.
    fast_gap_alpha: float = 1e-4
    #: A band with less than this share of the events ...
    min_band_share: float = 0.005
    #: ... and less than this share of the time is folded into its closer neighbour (noise in a sparse tail).
    min_band_time_share: float = 0.02
    #: A band counts towards "bimodal" with at least this share of the events ...
    band_events_share: float = 0.03
    #: ... or of the time (a thin slow band that owns the waiting).
    band_time_share: float = 0.10
    #: A slower band holding less than this share of the time, beside a band that holds more than half of it, is a
    #: minor one: that band is the one to look at, not what sends events to this one.
    minor_band_time_share: float = 0.05
    #: A band's printed range leaves out edge slots holding together at most this share of its events and time.
    edge_trim: float = 0.005

    # Tail (tail.py): the slowest buckets holding half of the time.
    #: The tail is the fewest slowest buckets holding this share of the time.
    tail_time_fraction: float = 0.5
    #: A tail finding needs the tail to hold at most this share of the events: a lognormal of two octaves'
    #: spread already has 10% of its events above its time median, so a larger tail says nothing.
    tail_max_events_share: float = 0.10
    #: When it holds more: the slowest events, this share of them, are a heavy tail...
    tail_few_events_share: float = 0.02
    #: ... when they hold at least this share of the time. The slowest 2% of a lognormal's events hold 15% of its
    #: time at a spread (sigma) of 1.0, 22% at 1.3: 30% is a tail heavier than a wide distribution's own.
    tail_few_time_share: float = 0.30

    # Episodes (episodes.py): columns whose latency shape departs from the stream's usual shape.
    #: Chi-square cut-off of a column's deviance, as a one-sided normal z (4: p ~ 3e-5 per column).
    episode_z: float = 4.0
    #: ... and the event shares moved by at least this total variation distance ...
    episode_min_shift: float = 0.05
    #: ... or the time shares by at least this one.
    episode_min_time_shift: float = 0.20
    #: A column is also anomalous when slots that usually hold at most a quarter of their share of its time now hold
    #: at least this share of it, beyond chance: a thin band that appeared (1 MiB writes among 4 KiB ones: <1% of the
    #: events, 15% of the time), which a stream whose usual bands' mix wobbles would hide from the tests above.
    episode_new_band_time_share: float = 0.10
    #: Columns with fewer events are not tested.
    episode_min_column_events: int = 10
    #: An episode spans at least this many anomalous columns ...
    episode_min_columns: int = 2
    #: ... bridging gaps of up to this many normal columns.
    episode_max_gap: int = 1
    #: A median shift of at least this many octaves makes a `move`.
    min_move_octaves: float = 0.75
    #: A `surge` adds events on top of the usual load: the episode's total rate exceeds the usual one by at least this
    #: share of what its gained region added. Where the other slots lost as many as it gained (a jHiccup log samples
    #: at a fixed rate), the total held and the mix changed: a reshape, not "more events/s on top of the usual load".
    surge_min_added: float = 0.5
    #: A band that appears (a latency move, or the usual bands' mix changed) from the recording's first column, and
    #: ends within this share of its columns, is start-up (warm-up: JIT, cold caches, pools filling), not an incident
    #: in the run (`findings.STARTUP_KINDS`).
    startup_share: float = 0.25

    # Stalls (stalls.py): a handful of events far above every normal band, in a few columns.
    #: Latencies up to the slot of the (1 - this) percentile event (the 99th) are normal ...
    stall_normal_share: float = 0.01
    #: ... and a stall event sits at least this many octaves above that slot's upper bound (4x).
    stall_gap_octaves: float = 2.0
    #: A stall spans at most this many columns (with its gaps) beyond those its own waits fill back to back;
    #: longer is a band or an episode.
    stall_max_columns: int = 3
    #: Runs of stall columns closer than this many normal columns join.
    stall_max_gap: int = 1
    #: In its columns, the stall's events hold at least this share of the time spent.
    stall_min_column_time_share: float = 0.25
    #: ... and at least this share of those columns' wall time: shorter waits held nothing up that matters (a
    #: 25 us "pause" in a 1 s column). 1%: 10 ms in a 1 s column, 1 ms in a 100 ms one.
    stall_min_wall_share: float = 0.01
    #: ... and, where the stream's usual rate would have completed at least `MIN_MISSING` (20) events during its waits,
    #: at least this share of those went missing around it: a stream that kept completing was not held up (one 20 s
    #: request among 1,000/s that went on, a far value of a power law).
    stall_min_lost_share: float = 1 / 3
    #: Far events in more than this share of the columns (or `stall_max_columns`) are a steady thin band or
    #: a scatter, not stalls; a slot with events in that many columns is normal.
    stall_max_column_share: float = 0.10
    #: ... unless each of those columns is a stall that shows the events it held back (a recurring stall: every
    #: epoch's start); far events in more than this share of the columns are a band however long (most columns).
    stall_band_column_share: float = 0.5

    # Drift (drift.py): the median latency trending over the columns.
    #: The fitted trend moves the median by at least this many octaves over the range ...
    drift_min_octaves: float = 1.0
    #: ... and explains at least this share of the variance of the column medians (a trend, not noise).
    drift_min_r2: float = 0.5
    #: Fewer testable columns than this have no trend.
    drift_min_columns: int = 10
    #: A single jump that leaves at most this share of the line's residual is a `shift`, not a drift.
    drift_step_ratio: float = 0.5

    # Peers (peers.py): streams that should behave alike (ranks, disks, instances, executors).
    #: A peer is slow when its mean latency is at least this many times the median of its peers' means.
    peer_min_ratio: float = 1.25
    #: Peers with fewer events are left out.
    peer_min_events: int = 20
    #: "Consistently slowest": slowest in more intervals than chance, one-sided binomial p at most this.
    peer_max_p: float = 0.01

    # Stragglers (stragglers.py): items much slower than the others of their group.
    #: At least this many times the group's reference (Spark's speculation multiplier) ...
    straggler_min_ratio: float = 1.5
    #: ... and this modified z-score (Iglewicz-Hoaglin) above it.
    straggler_min_mad_score: float = 3.5
    #: Groups with fewer items have no meaningful median.
    straggler_min_group: int = 4

    # Epoch start-up (epochs.py): a `timed_iter` loop's epoch starts against its batches' waits.
    #: The epochs' starts hold at least this share of the time waiting for data (starts and batch waits), with and
    #: without the slowest start (the first epoch's, paid once even where workers persist): a quarter of the waiting,
    #: so that sparing them would cut it by about that much; less, and the batches' own waits are the larger part.
    epoch_start_share: float = 0.25
    #: ... and the starts after the slowest hold at least this share of the writer's wall time (the stall's 1%): a
    #: few ms of them in a long run matter to nobody.
    epoch_min_wall_share: float = 0.01
    #: The workers start anew every epoch when the epochs' ends (the `next()` that raises StopIteration, where a
    #: DataLoader without persistent workers shuts them down) take at least this long at the median (2 workers: ~9 ms
    #: here; an end that shuts nothing down: 50-200 µs) ...
    epoch_shutdown_s: float = 1e-3
    #: ... and the starts after the slowest are at least this many times a batch wait (two octaves, as a stall's gap):
    #: the start is more than the first batch's load.
    epoch_restart_ratio: float = 4.0


DEFAULT_THRESHOLDS = Thresholds()
