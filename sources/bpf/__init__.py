"""BPF source: block I/O and syscall latency from the kernel (bcc and bpftrace backends)."""
