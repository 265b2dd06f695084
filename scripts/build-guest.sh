#!/usr/bin/env bash
# Build the guest driver: the rdma-core provider (once) and the kernel module
# (once per guest kernel).
#
#   scripts/build-guest.sh [KVER...]
#
# Provider: guest/rdma-core/providers/virtio_rdma is linked into Debian's
# rdma-core source (scripts/fetch-rdma-core.sh) and built as one target of
# it; out: build/guest/rdma-core/libvirtio_rdma-rdmav<PABI>.so and
# virtio_rdma.driver (for /etc/libibverbs.d).  Its post_test runs here.
# Module: guest/linux/drivers/infiniband/hw/virtio_rdma is copied to
# build/guest/<KVER>/src and built there with kbuild against
# /usr/src/linux-headers-<KVER>; out: build/guest/<KVER>/virtio_rdma.ko
# (without debug info; build/guest/<KVER>/src/virtio_rdma.ko has it).
# Without KVER: the lab's kernel (build/lab/kver) and every installed
# /usr/src/linux-headers-*-amd64.
# Run it under the build lock: flock /tmp/vrdma-build.lock scripts/build-guest.sh
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
JOBS=${JOBS:-2}
out=$top/build/guest
rc=$top/subprojects/rdma-core
rcb=$out/rdma-core-build
mod_src=$top/guest/linux/drivers/infiniband/hw/virtio_rdma
prov_src=$top/guest/rdma-core/providers/virtio_rdma

# ---- provider ---------------------------------------------------------
bash "$top/scripts/fetch-rdma-core.sh"
pabi=$(sed -n 's/^set(IBVERBS_PABI_VERSION "\([0-9]*\)")$/\1/p' "$rc/CMakeLists.txt")
[ -n "$pabi" ] || { echo "build-guest: no IBVERBS_PABI_VERSION in $rc/CMakeLists.txt" >&2; exit 1; }

# Overlay: our provider directory as one more providers/ entry.
ln -sfn "$prov_src" "$rc/providers/virtio_rdma"
if ! grep -q '^add_subdirectory(providers/virtio_rdma)$' "$rc/CMakeLists.txt"; then
    sed -i '/^add_subdirectory(providers\/siw)$/a add_subdirectory(providers/virtio_rdma)' "$rc/CMakeLists.txt"
    grep -q '^add_subdirectory(providers/virtio_rdma)$' "$rc/CMakeLists.txt" ||
        { echo "build-guest: could not add providers/virtio_rdma to $rc/CMakeLists.txt" >&2; exit 1; }
fi

# Configure once per unpacked source (a new libibverbs1 re-fetches it).  No
# build-tree RUNPATH: the provider must bind to the installed libibverbs.so.1.
cmake_args=(-G Ninja -DNO_MAN_PAGES=1 -DNO_PYVERBS=1 -DCMAKE_SKIP_BUILD_RPATH=ON
            -DPYTHON_EXECUTABLE=/usr/bin/python3)
stamp="$(cat "$rc/.virtio-rdma-source") ${cmake_args[*]}"
if [ ! -f "$rcb/build.ninja" ] || [ "$(cat "$rcb/.virtio-rdma-config" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$rcb"
    mkdir -p "$rcb"
    echo "build-guest: configuring rdma-core $(cat "$rc/.virtio-rdma-source")"
    if ! cmake -S "$rc" -B "$rcb" "${cmake_args[@]}" >"$rcb/configure.log" 2>&1; then
        cat "$rcb/configure.log" >&2
        echo "build-guest: rdma-core's cmake failed (scripts/deps.sh installs what it needs)" >&2
        exit 1
    fi
    echo "$stamp" > "$rcb/.virtio-rdma-config"
fi
target=virtio_rdma-rdmav$pabi
echo "build-guest: provider ($target)"
ninja -C "$rcb" -j"$JOBS" "$target" virtio_rdma_post_test >"$rcb/ninja.log" 2>&1 ||
    { cat "$rcb/ninja.log" >&2; exit 1; }
# Host-side test of the provider's rings data path (no device needed).
"$rcb/providers/virtio_rdma/virtio_rdma_post_test"
mkdir -p "$out/rdma-core"
so=$out/rdma-core/lib$target.so
cp "$rcb/lib/lib$target.so" "$so"
echo "driver virtio_rdma" > "$out/rdma-core/virtio_rdma.driver"

# The provider runs against the installed libibverbs.so.1, not the one just
# built beside it: every versioned symbol it imports must be exported there,
# and the dynamic loader must bind it (RTLD_NOW) with nothing else around.
# (awk reads all of ldconfig's output: an early exit would SIGPIPE it, and
# under pipefail + errexit that silently ended this script.)
sys_ibverbs=$(ldconfig -p | awk '/libibverbs\.so\.1 .*x86-64/ && !f { print $NF; f = 1 }')
syms() { objdump -T "$1" | awk -v want="$2" '$0 ~ want && /IBVERBS_/ { print $NF "@" $(NF-1) }' | tr -d '()' | sort -u; }
missing=$(comm -23 <(syms "$so" '\\*UND\\*') <(syms "$sys_ibverbs" '\\.text'))
if [ -n "$missing" ]; then
    echo "build-guest: $so needs symbols $sys_ibverbs does not export:" >&2
    echo "$missing" >&2
    exit 1
fi
if readelf -d "$so" | grep -q 'R\(UN\)\?PATH'; then
    echo "build-guest: $so has an RPATH/RUNPATH" >&2
    exit 1
fi
/usr/bin/python3 -c 'import ctypes, os, sys; ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW)' "$so" ||
    { echo "build-guest: $so does not load against $sys_ibverbs" >&2; exit 1; }
echo "build-guest: $so (imports $(syms "$so" '\\*UND\\*' | wc -l) libibverbs symbols, all in $sys_ibverbs)"

# ---- kernel module ----------------------------------------------------
if [ $# -eq 0 ]; then
    kvers=()
    [ -f "$top/build/lab/kver" ] && kvers+=("$(cat "$top/build/lab/kver")")
    for d in /usr/src/linux-headers-*-amd64; do
        [ -d "$d" ] && kvers+=("${d#/usr/src/linux-headers-}")
    done
    mapfile -t kvers < <(printf '%s\n' "${kvers[@]}" | sort -u)
    if [ ${#kvers[@]} -eq 0 ]; then
        echo "build-guest: no kernel headers installed (/usr/src/linux-headers-*-amd64);" \
             "scripts/deps.sh installs them" >&2
        exit 1
    fi
else
    kvers=("$@")
fi
if [ ! -f "$mod_src/Kbuild" ]; then
    echo "build-guest: $mod_src/Kbuild is missing" >&2
    exit 1
fi
for kver in "${kvers[@]}"; do
    hdr=/usr/src/linux-headers-$kver
    if [ ! -f "$hdr/Makefile" ]; then
        echo "build-guest: $hdr is missing: apt-get install linux-headers-$kver" \
             "(scripts/deps.sh installs the lab kernel's and bookworm-backports' 6.12)" >&2
        exit 1
    fi
    src=$out/$kver/src
    mkdir -p "$src"
    # A copy kbuild can write its objects into; mtimes kept, so it is incremental.
    for f in "$src"/*; do
        [ -e "$f" ] || continue
        case $f in *.c | *.h | */Kbuild | */Makefile) [ -e "$mod_src/${f##*/}" ] || rm -f "$f" ;; esac
    done
    cp -p "$mod_src"/* "$src/"
    echo "build-guest: module for $kver"
    if ! make -C "$hdr" M="$src" VRDMA_INCLUDE="$top/include" -j"$JOBS" modules \
            >"$out/$kver/build.log" 2>&1; then
        cat "$out/$kver/build.log" >&2
        echo "build-guest: virtio_rdma.ko failed to build for $kver" >&2
        exit 1
    fi
    # Debian's kbuild compiles with -g: the guest gets the module without its
    # DWARF (70-100 KiB, not 3.5-4 MiB); src/virtio_rdma.ko keeps it.
    strip --strip-debug -o "$out/$kver/virtio_rdma.ko" "$src/virtio_rdma.ko"
done
