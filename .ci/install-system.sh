#!/usr/bin/env bash
# Install what the BPF source and its tests need on a Debian bookworm machine (run as root).
#
# Idempotent and quick when everything is already there:
#   - bpfcc-tools, python3-bpfcc, libbpfcc, bpftrace, plus tmux (TUI tests in a real terminal), chromium
#     (static reports opened headless) and prometheus (the server the Prometheus source tests start on a loopback
#     port themselves; the package's own service is stopped and disabled) (apt-get update at most once per run);
#   - tracefs mounted at /sys/kernel/tracing;
#   - Debian 6.12 kernel headers unpacked (not installed) into one tree under $LATENCYMAP_KHEADERS
#     (default /opt/latencymap-kheaders), merged into one directory with a stable link `current`,
#     which is what BCC_KERNEL_SOURCE must point at (bcc needs headers even with BTF);
#   - the system `bcc` module made importable from the repo venv `.venv` through a .pth file that
#     points at a folder holding only a link to the system package (never pip's unrelated `bcc`).
# Never prompts (CI has no stdin).
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KHEADERS="${LATENCYMAP_KHEADERS:-/opt/latencymap-kheaders}"
VENV="${LATENCYMAP_VENV:-$REPO/.venv}"
PACKAGES=(bpfcc-tools python3-bpfcc libbpfcc bpftrace tmux chromium prometheus)

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
    log "apt-get install ${missing[*]}"
    apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null >/dev/null
fi
# The tests start their own Prometheus; the Debian service (port 9090) is not wanted running.
if command -v systemctl >/dev/null 2>&1 && systemctl is-enabled prometheus >/dev/null 2>&1; then
    log "systemctl disable --now prometheus"
    systemctl disable --now prometheus >/dev/null 2>&1 || true
fi

# 2. tracefs (tracepoints need it).
if ! mountpoint -q /sys/kernel/tracing; then
    log "mount -t tracefs tracefs /sys/kernel/tracing"
    mount -t tracefs tracefs /sys/kernel/tracing
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
if [ -x "$VENV/bin/python" ] && ! "$VENV/bin/python" -c 'import torch' 2>/dev/null; then
    log "pip install torch==2.13.0 (CPU)"
    "$VENV/bin/pip" install -q --disable-pip-version-check torch==2.13.0 </dev/null
fi

log "ok (headers: BCC_KERNEL_SOURCE=$KHEADERS/current)"
