"""What the kernel owes a BPF block tracer: the I/O a disk completed (/proc/diskstats) and, of it, the completions it
handed to BPF programs at all.

On a loaded machine the kernel completes some requests without running any BPF program on their
`block_rq_complete` and counts no skip (kernel 6.18 on a 2-CPU VM: a burst of up to 70 of 400 with other BPF tools
at work beside): a witness program beside the source, which only counts, tells those apart from events latencymap
lost.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from latencymap.sources.bpf import bcc_backend
from latencymap.sources.bpf.spec import TraceSpec

#: Counts each run of a BPF program on the block_rq_complete tracepoint for the disk, per --split rw class, in an
#: array (no pairing, no map entry to create).
WITNESS = bcc_backend.REQUEST + r"""
BPF_ARRAY(lm_done, u64, 4);
RAW_TRACEPOINT_PROBE(block_rq_complete) {
    u64 rq = ctx->args[LM_ARG_COMPLETE];
    if (lm_dev(rq) != LM_DEV)
        return 0;
    int k = lm_op(rq);
    u64 *n = lm_done.lookup(&k);
    if (n)
        __sync_fetch_and_add(n, 1);
    return 0;
}
"""


def diskstats(disk: str) -> dict[str, int]:
    """Completed reads, writes and flushes of `disk` (Documentation/admin-guide/iostats.rst fields 1, 5, 15)."""
    with open("/proc/diskstats") as f:
        for line in f:
            fields = line.split()
            if fields[2] == disk:
                return {"read": int(fields[3]), "write": int(fields[7]), "flush": int(fields[18])}
    raise AssertionError(f"{disk} not in /proc/diskstats")


@contextmanager
def completions_witness(disk: str) -> Iterator[Callable[[], dict[str, dict[str, int]]]]:
    """The call giving the reads and writes `disk` completed since the block opened, and those of them the kernel
    handed to BPF programs (`{"completed": {"read": n, "write": n}, "handed to BPF": {...}}`). Read in that order at
    the start (one completing between the two reads counts as not handed over: the bound only loosens), the reverse
    at the end."""
    spec = TraceSpec.from_options({"mode": "block", "disk": disk, "split": "rw"})
    witness = bcc_backend.compiled(WITNESS, bcc_backend.program(spec)[1])

    def handed() -> dict[str, int]:
        done = witness[b"lm_done"]
        return {"read": int(done[1].value), "write": int(done[2].value)}

    start_completed = diskstats(disk)
    start_handed = handed()

    def since() -> dict[str, dict[str, int]]:
        now_handed = handed()
        now_completed = diskstats(disk)
        return {"completed": {op: now_completed[op] - start_completed[op] for op in ("read", "write")},
                "handed to BPF": {op: now_handed[op] - start_handed[op] for op in ("read", "write")}}

    try:
        yield since
    finally:
        witness.cleanup()


def not_handed(seen: dict[str, dict[str, int]], op: str) -> int:
    """The `op` ("read", "write") completions of a witness's reading that no BPF program was run on."""
    return max(0, seen["completed"][op] - seen["handed to BPF"][op])
