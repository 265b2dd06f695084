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
    # lab tier's driver part: counts a tool's system calls (rc_pingpong_sys);
    # UCX's perftest on its verbs transports (ucx_rc, ucx_ud); Open MPI (pml
    # ucx) and NetPIPE's MPI ping-pong over UCX (mpi_pingpong)
    strace ucx-utils openmpi-bin netpipe-openmpi
    # lab tier's nvme part: NVMe over RDMA host tools and the I/O checker
    nvme-cli fio
    # lab tier's suite part: pyverbs from rdma-core's source (Cython)
    cython3 python3-dev
    # virtio-rdma backend=ibverbs (QEMU -Dvirtio_rdma_ibverbs) and
    # guest/tests/vrdma-abuse, built on the host against libibverbs; zstd
    # unpacks the 6.12 lab kernel (bookworm-backports compresses it so)
    libibverbs-dev zstd
    # contrib/rdmacm-mux, the CM MAD multiplexer (libibumad; without it
    # meson skips the daemon): apt-get install -y libibumad-dev
    libibumad-dev
    # guest provider (scripts/build-guest.sh): what configuring rdma-core's
    # source needs (no man pages, no pyverbs); the kernel module's headers
    # are kernel_headers below
    cmake libnl-3-dev libnl-route-3-dev libudev-dev
)
# The lab's libvirt part (tests/lab/libvirt.sh): libvirtd with its QEMU
# driver, virtlogd and virsh.  Without recommends: they would add Debian's
# qemu-system (the test's <emulator> is ours) and other hypervisors' drivers.
# The test makes its own bridge with iproute2 and starts the daemons itself
# (no libvirt-daemon-system, whose set-up would start a host libvirtd).
norecommends=(libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients)
# meson: QEMU 10.0 needs >= 1.5.  qemu-system-data: the option ROMs
# (kvmvapic, linuxboot_dma, ...) of the same QEMU release, for our uninstalled binary.
backports=(meson qemu-system-data)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"; }

# Headers of the guest kernels the module is built for: the one bookworm's
# linux-image-amd64 points at (the lab kernel) and bookworm-backports' 6.12.
# The 6.12 headers package pulls in its kernel image; harmless on a build host.
kernel_headers() {
    local rel kpkg t
    for rel in bookworm bookworm-backports; do
        t=()
        [ $rel = bookworm ] || t=(-t "$rel")
        kpkg=$(timeout 60 apt-cache depends "${t[@]}" linux-image-amd64 2>/dev/null |
               awk '/Depends: linux-image-[0-9]/ && !f { print $2; f = 1 }')
        [ -n "$kpkg" ] && echo "$rel linux-headers-${kpkg#linux-image-}"
    done
}

missing=() missing_norec=()
for p in "${packages[@]}"; do
    installed "$p" || missing+=("$p")
done
for p in "${norecommends[@]}"; do
    installed "$p" || missing_norec+=("$p")
done
mapfile -t kheaders < <(kernel_headers)
kheaders_ok=1
[ ${#kheaders[@]} = 2 ] || kheaders_ok=0
for p in "${kheaders[@]}"; do
    installed "${p#* }" || kheaders_ok=0
done
# rdma-core's source of the installed libibverbs1 (scripts/fetch-rdma-core.sh)
# needs the bookworm deb-src line.  (grep without -q: with pipefail, -q quitting
# early kills apt-cache with SIGPIPE and the test fails.)
ibv=$(dpkg-query -W -f='${Version}' libibverbs1 2>/dev/null || true)
rdma_src_ok=1
[ -n "$ibv" ] && apt-cache showsrc rdma-core 2>/dev/null | grep -x "Version: $ibv" >/dev/null || rdma_src_ok=0
meson_ok=1
for p in "${backports[@]}"; do
    dpkg-query -W -f='${Version}' "$p" 2>/dev/null | grep -q bpo || meson_ok=0
done

sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
if [ ${#missing[@]} -gt 0 ] || [ ${#missing_norec[@]} -gt 0 ] || [ $meson_ok = 0 ] || [ $kheaders_ok = 0 ] || [ $rdma_src_ok = 0 ] ||
   ! apt-cache showsrc qemu 2>/dev/null | grep '^Version: 1:10\.0' >/dev/null; then
    $sudo bash "$top/scripts/apt-sources.sh"
    echo "deps: apt-get update"
    $sudo apt-get update -q >/dev/null
    if [ ${#missing[@]} -gt 0 ]; then
        echo "deps: installing ${missing[*]}"
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
    fi
    if [ ${#missing_norec[@]} -gt 0 ]; then
        echo "deps: installing ${missing_norec[*]} (without recommends)"
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing_norec[@]}" >/dev/null
    fi
    if [ $meson_ok = 0 ]; then
        echo "deps: installing ${backports[*]} from bookworm-backports"
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q -t bookworm-backports "${backports[@]}" >/dev/null
    fi
    mapfile -t kheaders < <(kernel_headers)
    if [ ${#kheaders[@]} != 2 ]; then
        echo "deps: cannot tell the guest kernels' header packages from" \
             "linux-image-amd64 in bookworm and bookworm-backports (got: ${kheaders[*]:-none})" >&2
        exit 1
    fi
    for p in "${kheaders[@]}"; do
        rel=${p%% *} p=${p#* }
        installed "$p" && continue
        echo "deps: installing $p from $rel"
        t=()
        [ $rel = bookworm ] || t=(-t "$rel")
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${t[@]}" "$p" >/dev/null
    done
fi
