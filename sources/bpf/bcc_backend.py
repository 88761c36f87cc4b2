"""The bcc backend: a generated C program on tracepoints, cumulative count and sum maps read in place.

Block mode attaches the raw block tracepoints, which pass the `struct request *`: issue and completion are paired
by that pointer, so a flush (issued at sector 0, completed at sector -1) and concurrent requests for one sector
are each counted once. The disk and operation are read through the request at offsets from the kernel's BTF.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Generator
from typing import Any

from .btf import BtfError, request_layout
from .collect import Reading
from .preconditions import kernel_headers_dir
from .spec import BpfError, TraceSpec

COMMON = r"""
struct lm_key { u32 group; u16 op; u16 slot; };
BPF_HASH(lm_count, struct lm_key, u64, 16384);
BPF_HASH(lm_sum, struct lm_key, u64, 16384);

static inline void lm_record(u32 group, u16 op, u64 delta) {
    struct lm_key k = {};
    u64 zero = 0;
    u16 slot = delta == 0 ? 0 : bpf_log2l(delta);
    k.group = group;
    k.op = op;
    k.slot = slot > 63 ? 63 : slot;
    u64 *c = lm_count.lookup_or_try_init(&k, &zero);
    if (c)
        __sync_fetch_and_add(c, 1);
    u64 *t = lm_sum.lookup_or_try_init(&k, &zero);
    if (t)
        __sync_fetch_and_add(t, delta);
}
"""

#: What block mode reads through a `struct request *` (offsets from the kernel's BTF, see `program`): its disk, its
#: operation.
REQUEST = r"""
/* kernel dev_t (major << 20 | minor, as block tracepoints report it) of a request's disk: rq->q->disk */
static inline u32 lm_dev(u64 rq) {
    u64 q = 0, disk = 0;
    int major = 0, minor = 0;
    bpf_probe_read_kernel(&q, sizeof(q), (void *)(rq + LM_OFF_Q));
    if (!q)
        return 0;
    bpf_probe_read_kernel(&disk, sizeof(disk), (void *)(q + LM_OFF_DISK));
    if (!disk)
        return 0;
    bpf_probe_read_kernel(&major, sizeof(major), (void *)(disk + LM_OFF_MAJOR));
    bpf_probe_read_kernel(&minor, sizeof(minor), (void *)(disk + LM_OFF_MINOR));
    return ((u32)major << 20) | (u32)minor;
}

/* --split rw class of a request: 1 read, 2 write, 3 other (flush, discard, ...) */
static inline u16 lm_op(u64 rq) {
    u32 flags = 0;
    bpf_probe_read_kernel(&flags, sizeof(flags), (void *)(rq + LM_OFF_CMD_FLAGS));
    u32 req_op = flags & 0xff;  /* REQ_OP_MASK */
    return req_op == LM_OP_READ ? 1 : req_op == LM_OP_WRITE ? 2 : 3;
}
"""

BLOCK = REQUEST + r"""
BPF_HASH(lm_start, u64, u64, 65536);

static inline int lm_begin(u64 rq, int keep_first) {
    if (LM_FILTER_DEV && lm_dev(rq) != LM_DEV)
        return 0;
    u64 ts = bpf_ktime_get_ns();
    if (keep_first)
        lm_start.insert(&rq, &ts);
    else
        lm_start.update(&rq, &ts);
    return 0;
}

#if LM_QUEUED
RAW_TRACEPOINT_PROBE(block_rq_insert) { return lm_begin(ctx->args[LM_ARG_INSERT], 0); }
/* a request merged into another never completes itself: forget its insert time */
RAW_TRACEPOINT_PROBE(block_rq_merge) { u64 rq = ctx->args[LM_ARG_MERGE]; lm_start.delete(&rq); return 0; }
#endif

RAW_TRACEPOINT_PROBE(block_rq_issue) { return lm_begin(ctx->args[LM_ARG_ISSUE], LM_QUEUED); }

RAW_TRACEPOINT_PROBE(block_rq_complete) {
    u64 rq = ctx->args[LM_ARG_COMPLETE];
    u64 *tsp = lm_start.lookup(&rq);
    if (!tsp)
        return 0;
    u64 delta = bpf_ktime_get_ns() - *tsp;
    lm_start.delete(&rq);
    lm_record(LM_PER_DISK ? lm_dev(rq) : 0, LM_SPLIT_RW ? lm_op(rq) : 0, delta);
    return 0;
}
"""

SYSCALL = r"""
struct lm_call { u64 ts; u32 group; };
BPF_HASH(lm_start, u64, struct lm_call, 65536);

static inline int lm_enter(u32 group) {
    u64 id = bpf_get_current_pid_tgid();
    LM_FILTER
    struct lm_call call = {};
    call.ts = bpf_ktime_get_ns();
    call.group = group;
    lm_start.update(&id, &call);
    return 0;
}

static inline int lm_exit(u32 group) {
    u64 id = bpf_get_current_pid_tgid();
    struct lm_call *call = lm_start.lookup(&id);
    if (!call)
        return 0;
    u64 delta = bpf_ktime_get_ns() - call->ts;
    u32 entered = call->group;
    lm_start.delete(&id);
    if (entered == group)
        lm_record(group, 0, delta);
    return 0;
}
"""

#: bcc's tracepoint structs for these syscalls use the kernel type `rwf_t`, which no header bcc reads defines.
RWF_SYSCALLS = ("preadv2", "pwritev2")
RWF_T = "typedef int rwf_t;  /* include/linux/fs.h: typedef __kernel_rwf_t rwf_t (an int) */\n"

PROBES = """
TRACEPOINT_PROBE(syscalls, sys_enter_{name}) {{ return lm_enter({group}); }}
TRACEPOINT_PROBE(syscalls, sys_exit_{name}) {{ return lm_exit({group}); }}
"""


def comm_filter(comm: str) -> str:
    """C statements that return early unless the task's comm is exactly `comm` (UTF-8 bytes, compared unsigned:
    a `char` is signed, so a byte >= 128 read as `char` never equals its value)."""
    data = comm.encode()
    tests = [f"c[{i}] != {b}" for i, b in enumerate(data)] + [f"c[{len(data)}] != 0"]
    return ("unsigned char c[16] = {}; bpf_get_current_comm(&c, sizeof(c)); "
            f"if ({' || '.join(tests)}) return 0;")


def program(spec: TraceSpec) -> tuple[str, list[str]]:
    """The C source and cflags for a spec."""
    if spec.mode == "block":
        try:
            layout = request_layout()
        except BtfError as err:
            raise BpfError(f"bcc block mode pairs each request's issue and completion by the request itself, "
                           f"through the kernel's BTF: {err}") from None
        flags = [f"-DLM_FILTER_DEV={int(spec.disk_dev is not None)}", f"-DLM_DEV={spec.disk_dev or 0}",
                 f"-DLM_QUEUED={int(spec.queued)}", f"-DLM_SPLIT_RW={int(spec.split_rw)}",
                 f"-DLM_PER_DISK={int(spec.per_disk)}", f"-DLM_OFF_Q={layout.q}",
                 f"-DLM_OFF_CMD_FLAGS={layout.cmd_flags}", f"-DLM_OFF_DISK={layout.disk}",
                 f"-DLM_OFF_MAJOR={layout.major}", f"-DLM_OFF_MINOR={layout.first_minor}",
                 f"-DLM_OP_READ={layout.op_read}", f"-DLM_OP_WRITE={layout.op_write}",
                 *(f"-DLM_ARG_{event.removeprefix('block_rq_').upper()}={index}" for event, index in layout.args)]
        return COMMON + BLOCK, ["-w", *flags]
    if spec.pid is not None:
        check = f"if ((id >> 32) != {int(spec.pid)}) return 0;"
    elif spec.comm:
        check = comm_filter(spec.comm)
    else:
        check = ""
    probes = spec.probes()
    text = (RWF_T if any(name in RWF_SYSCALLS for name, _ in probes) else "") + COMMON
    text += SYSCALL.replace("LM_FILTER", check)
    text += "".join(PROBES.format(name=name, group=i) for name, i in probes)
    return text, ["-w"]


def compiled(text: str, cflags: list[str]) -> Any:
    """bcc's BPF object for the C `text`, compiled against the kernel headers found here and attached."""
    headers = kernel_headers_dir()
    if headers and not os.environ.get("BCC_KERNEL_SOURCE"):
        os.environ["BCC_KERNEL_SOURCE"] = headers
    from bcc import BPF

    return BPF(text=text.encode(), cflags=cflags)


def load(spec: TraceSpec) -> Any:
    """Compile and attach the program; BpfError (with bcc's reason) when that fails."""
    text, cflags = program(spec)
    try:
        return compiled(text, cflags)
    except Exception as err:
        raise BpfError(f"bcc could not compile or attach the {spec.mode} program: {err}") from err


def read(bpf: Any, at: float) -> Reading:
    """Copy both cumulative maps."""
    reading = Reading(at)
    for k, v in bpf[b"lm_count"].items():
        reading.add((int(k.group), int(k.op)), int(k.slot), count=int(v.value))
    for k, v in bpf[b"lm_sum"].items():
        reading.add((int(k.group), int(k.op)), int(k.slot), sum_ns=int(v.value))
    return reading


def readings(bpf: Any, spec: TraceSpec, start: float) -> Generator[Reading, None, None]:
    """A reading every `spec.interval` seconds after `start` (no drift); the caller detaches `bpf`."""
    tick = 1
    while True:
        delay = start + tick * spec.interval - time.time()
        if delay > 0:
            time.sleep(delay)
        else:
            tick += int(-delay // spec.interval)
        tick += 1
        yield read(bpf, time.time())


def detach(bpf: Any) -> None:
    """Detach the probes and free the maps (safe to call twice)."""
    with contextlib.suppress(Exception):
        bpf.cleanup()
