#!/usr/bin/env bash
# Install every component the test suite uses on a Debian bookworm machine (run as root), then say what is there.
# Under CI=true a test skipped for a missing component fails (tests/support/skips_support.py), so whatever this
# script leaves out fails CI by name.
#
# Idempotent and quick when everything is already there:
#   - bpfcc-tools, python3-bpfcc, libbpfcc, bpftrace, plus tmux (TUI tests in a real terminal), chromium
#     (static reports opened headless), prometheus (the server the Prometheus source tests start on a loopback
#     port themselves; the package's own service is stopped and disabled), a Java 17 runtime (PySpark), a JDK
#     and Java's HdrHistogram library (libhdrhistogram-java: tests/sources/test_hdrhistogram_java.py writes logs
#     with it) and mount (losetup) (apt-get update at most once per run);
#   - tracefs mounted at /sys/kernel/tracing;
#   - Debian 6.12 kernel headers unpacked (not installed) into one tree under $LATENCYMAP_KHEADERS
#     (default /opt/latencymap-kheaders), merged into one directory with a stable link `current`,
#     which is what BCC_KERNEL_SOURCE must point at (bcc needs headers even with BTF);
#   - the system `bcc` module made importable from the repo venv `.venv` through a .pth file that
#     points at a folder holding only a link to the system package (never pip's unrelated `bcc`);
#   - in the venv: CPU torch 2.13.0, and the dev extra's real parts (py-spy, pyarrow, pyspark, prometheus_client,
#     hdrhistogram, Pillow) checked, `pip install -e '.[dev]'` when one is missing;
#   - PyLatencyMap 1.3 in its own folder ($LATENCYMAP_PYLATENCYMAP, default
#     ~/.cache/latencymap-bench/pylatencymap-1.3.0: where tests/flow/test_recording.py and
#     bench/bench_pylatencymap.py look), never in the venv (its console script is also called `latencymap`);
#   - a block device for the direct-I/O test: the disk under /var/tmp, else a loop device (the test attaches one
#     over a file in /var/tmp; the loop module is loaded here when needed).
# Never prompts (CI has no stdin).
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KHEADERS="${LATENCYMAP_KHEADERS:-/opt/latencymap-kheaders}"
VENV="${LATENCYMAP_VENV:-$REPO/.venv}"
PACKAGES=(bpfcc-tools python3-bpfcc libbpfcc bpftrace tmux chromium prometheus openjdk-17-jre-headless
          openjdk-17-jdk-headless libhdrhistogram-java mount)
PYLATENCYMAP_DIR="${LATENCYMAP_PYLATENCYMAP:-${XDG_CACHE_HOME:-$HOME/.cache}/latencymap-bench/pylatencymap-1.3.0}"
DID=()
did() { DID+=("$*"); log "$*"; }

log() { printf 'install-system: %s\n' "$*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
    log "must run as root (BPF programs and apt need it)"
    exit 1
fi

APT_UPDATED=0
apt_update_once() {
    if [ "$APT_UPDATED" -eq 0 ]; then
        log "apt-get update"
        apt-get update -qq </dev/null
        APT_UPDATED=1
    fi
}

# 1. Packages.
missing=()
for pkg in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$pkg")
    fi
done
if [ "${#missing[@]}" -gt 0 ]; then
    apt_update_once
    apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null >/dev/null
    did "apt-get install ${missing[*]}"
fi
# The tests start their own Prometheus; the Debian service (port 9090) is not wanted running.
if command -v systemctl >/dev/null 2>&1 && systemctl is-enabled prometheus >/dev/null 2>&1; then
    systemctl disable --now prometheus >/dev/null 2>&1 || true
    did "systemctl disable --now prometheus"
fi

# 2. tracefs (tracepoints need it).
if ! mountpoint -q /sys/kernel/tracing; then
    mount -t tracefs tracefs /sys/kernel/tracing
    did "mount -t tracefs tracefs /sys/kernel/tracing"
fi

# 3. Kernel headers for bcc: the newest Debian 6.12 headers, unpacked into one tree.
if [ ! -e "$KHEADERS/current/include/linux/kconfig.h" ] || [ ! -d "$KHEADERS/current/include/generated" ]; then
    newest_version() {
        apt-cache search --names-only '^linux-headers-6\.12\.[0-9]+\+deb[0-9]+-amd64$' </dev/null \
            | awk '{print $1}' | sed -e 's/^linux-headers-//' -e 's/-amd64$//' | sort -V | tail -n 1
    }
    version="$(newest_version)"
    if [ -z "$version" ]; then
        apt_update_once
        version="$(newest_version)"
    fi
    if [ -z "$version" ]; then
        log "no linux-headers-6.12.*-amd64 package found in apt; bcc will not compile programs"
        exit 1
    fi
    log "unpacking kernel headers $version into $KHEADERS"
    tmp="$(mktemp -d)"
    chmod 0755 "$tmp"
    if id _apt >/dev/null 2>&1; then chown _apt "$tmp"; fi
    trap 'rm -rf "$tmp"' EXIT
    (cd "$tmp" && apt-get download -qq "linux-headers-$version-amd64" "linux-headers-$version-common" \
        "linux-kbuild-${version%%-*}" </dev/null)
    mkdir -p "$KHEADERS"
    for deb in "$tmp"/*.deb; do
        dpkg -x "$deb" "$KHEADERS"
    done
    # bcc takes one directory (BCC_KERNEL_SOURCE): merge -common (the headers) and -amd64 (the
    # generated config headers) with hard links; the common Makefile wins, relative links still resolve.
    merged="$KHEADERS/usr/src/linux-merged-$version"
    rm -rf "$merged"
    mkdir -p "$merged"
    cp -al "$KHEADERS/usr/src/linux-headers-$version-common/." "$merged/"
    cp -aln "$KHEADERS/usr/src/linux-headers-$version-amd64/." "$merged/"
    ln -sfn "usr/src/linux-merged-$version" "$KHEADERS/current"
    rm -rf "$tmp"
    trap - EXIT
    did "kernel headers $version unpacked into $KHEADERS"
fi

# 4. The system bcc module, importable from the repo venv.
if [ -x "$VENV/bin/python" ]; then
    bcc_init="$(dpkg -L python3-bpfcc | grep -m1 '/bcc/__init__\.py$' || true)"
    if [ -z "$bcc_init" ]; then
        log "python3-bpfcc does not ship bcc/__init__.py; cannot link bcc into the venv"
        exit 1
    fi
    bcc_dir="$(dirname "$bcc_init")"
    site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    link_dir="$VENV/system-bcc"
    if [ "$(readlink "$link_dir/bcc" 2>/dev/null || true)" != "$bcc_dir" ]; then
        rm -rf "$link_dir"
        mkdir -p "$link_dir"
        ln -s "$bcc_dir" "$link_dir/bcc"
        did "linked the system bcc module into $VENV"
    fi
    if [ "$(cat "$site/latencymap-system-bcc.pth" 2>/dev/null || true)" != "$link_dir" ]; then
        printf '%s\n' "$link_dir" >"$site/latencymap-system-bcc.pth"
    fi
    if ! "$VENV/bin/python" -c 'import bcc, sys; sys.exit(0 if hasattr(bcc, "BPF") else 1)' 2>/dev/null; then
        log "bcc is not importable from $VENV (is the PyPI package 'bcc' installed there? pip uninstall bcc)"
        exit 1
    fi
else
    log "no venv at $VENV; skipped linking the system bcc module into it"
fi

# 5. CPU PyTorch for the training-loop tests: exactly 2.13.0 (a local CPU wheel here; any other spec pulls CUDA).
pip_venv() { "$VENV/bin/python" -m pip install -q --disable-pip-version-check "$@" </dev/null; }
if [ -x "$VENV/bin/python" ] && ! "$VENV/bin/python" -c 'import torch' 2>/dev/null; then
    pip_venv torch==2.13.0
    did "pip install torch==2.13.0 (CPU)"
fi

# 6. The dev extra's real components (CI installs '.[dev]' before this script; this makes the script enough alone).
DEV_MODULES=(pyarrow pyspark prometheus_client hdrh PIL)
if [ -x "$VENV/bin/python" ]; then
    absent=()
    for module in "${DEV_MODULES[@]}"; do
        "$VENV/bin/python" -c "import $module" 2>/dev/null || absent+=("$module")
    done
    [ -x "$VENV/bin/py-spy" ] || absent+=(py-spy)
    if [ "${#absent[@]}" -gt 0 ]; then
        pip_venv -e "$REPO[dev]"
        did "pip install -e '.[dev]' (missing: ${absent[*]})"
    fi
fi

# 7. PyLatencyMap 1.3 in its own folder (staged, then renamed: a half-done install is never taken for one).
if [ ! -f "$PYLATENCYMAP_DIR/LatencyMap.py" ]; then
    python="$VENV/bin/python"
    [ -x "$python" ] || python=python3
    mkdir -p "$(dirname "$PYLATENCYMAP_DIR")"
    staging="$(mktemp -d "$PYLATENCYMAP_DIR.XXXXXX")"
    "$python" -m pip install -q --disable-pip-version-check --no-deps --target "$staging" pylatencymap==1.3.0 </dev/null
    rm -rf "$PYLATENCYMAP_DIR"
    mv "$staging" "$PYLATENCYMAP_DIR"
    did "pip install --no-deps --target $PYLATENCYMAP_DIR pylatencymap==1.3.0"
fi

# 8. A block device for the direct-I/O test: the disk /var/tmp lies on, else a loop device (the test makes one).
block_of_var_tmp() {
    local dev
    dev="$(stat -c '%Hd:%Ld' /var/tmp)"
    [ -e "/sys/dev/block/$dev" ] && basename "$(readlink -f "/sys/dev/block/$dev")"
}
if disk="$(block_of_var_tmp)"; then
    block="disk $disk (under /var/tmp)"
else
    if [ ! -e /dev/loop-control ] && modprobe loop 2>/dev/null; then
        did "modprobe loop"
    fi
    if ! losetup --find >/dev/null 2>&1; then
        log "no disk under /var/tmp and no free loop device (losetup --find): the block-I/O test cannot run here"
        exit 1
    fi
    block="loop device (no disk under /var/tmp; the test attaches one over a file there)"
fi

# What is there now.
version_of() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo "not installed"; }
python_version() {
    "$VENV/bin/python" -c "import importlib.metadata as m; print(m.version('$1'))" 2>/dev/null || echo "not installed"
}
log "components:"
for pkg in tmux chromium bpftrace prometheus openjdk-17-jre-headless; do
    log "  $pkg $(version_of "$pkg")"
done
if [ -x "$VENV/bin/python" ]; then
    for dist in torch py-spy pyarrow pyspark prometheus_client hdrhistogram pillow; do
        log "  $dist $(python_version "$dist") (venv)"
    done
fi
log "  PyLatencyMap 1.3 in $PYLATENCYMAP_DIR"
log "  block device: $block"
log "  kernel headers: BCC_KERNEL_SOURCE=$KHEADERS/current"
if [ "${#DID[@]}" -eq 0 ]; then
    log "ok: everything was already in place (nothing done)"
else
    log "ok: did ${#DID[@]} things: $(IFS=';'; echo "${DID[*]}")"
fi
