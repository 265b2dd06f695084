#!/usr/bin/env bash
# Install everything the build and the tests need, from Debian's packages.
# Skips apt entirely when all packages are already installed.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

packages=(
    # QEMU build
    build-essential ninja-build pkg-config python3-venv flex bison ccache
    dpkg-dev libglib2.0-dev libpixman-1-dev libslirp-dev libattr1-dev
    libcap-ng-dev libfdt-dev zlib1g-dev
    # firmware for the uninstalled QEMU (the +ds source ships none)
    seabios ipxe-qemu
    # core and its tests; core benchmarks (scripts/bench.sh)
    libgtest-dev libgmock-dev libbenchmark-dev
    # soft-RoCE engine: ICRC (crc32_gzip_refl)
    libisal-dev
    # fuzz tier (tests/fuzz): clang's libFuzzer and sanitizer runtimes
    clang libclang-rt-14-dev
    # lab tier (tests/lab): rdma-core/perftest tools the rxe guests run from
    # the host root over 9p; tshark dissects the captured RoCE frames
    rdma-core ibverbs-utils ibverbs-providers rdmacm-utils perftest iproute2
    tshark
)
# meson: QEMU 10.0 needs >= 1.5.  qemu-system-data: the option ROMs
# (kvmvapic, linuxboot_dma, ...) of the same QEMU release, for our uninstalled binary.
backports=(meson qemu-system-data)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
meson_ok=1
for p in "${backports[@]}"; do
    dpkg-query -W -f='${Version}' "$p" 2>/dev/null | grep -q bpo || meson_ok=0
done

sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
if [ ${#missing[@]} -gt 0 ] || [ $meson_ok = 0 ] || ! apt-cache showsrc qemu 2>/dev/null | grep -q '^Version: 1:10\.0'; then
    $sudo bash "$top/scripts/apt-sources.sh"
    echo "deps: apt-get update"
    $sudo apt-get update -q >/dev/null
    if [ ${#missing[@]} -gt 0 ]; then
        echo "deps: installing ${missing[*]}"
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
    fi
    if [ $meson_ok = 0 ]; then
        echo "deps: installing ${backports[*]} from bookworm-backports"
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q -t bookworm-backports "${backports[@]}" >/dev/null
    fi
fi
