#!/usr/bin/env bash
# Build QEMU (x86_64-softmmu, lean device set) with virtio-rdma overlaid.
#   scripts/build.sh          -> build/qemu
#   scripts/build.sh --san    -> build/qemu-san: clang, AddressSanitizer +
#                                UBSan, --enable-fuzzing.  One build for two
#                                tiers: its qemu-system-x86_64 and qtest
#                                binaries are the qtest-san tier's, its
#                                qemu-fuzz-x86_64 (QEMU's libFuzzer harness,
#                                generic-fuzz) the fuzz tier's (scripts/fuzz.sh).
#                                QEMU supports system binaries in a fuzzing
#                                build (they link with -fsanitize=fuzzer-no-link),
#                                and a separate gcc ASan build cost a cold CI
#                                about as long as this whole build.
#   scripts/build.sh --plugins -> build/qemu-plugins: the plain build with TCG
#                                plugins, for the guest-instruction benchmark
#                                only (bench/guest-insns.sh); no test tier
#                                uses it, so CI never builds it.
# Incremental: configure runs once per build directory, then ninja.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/config.sh"

san=0 plugins=0
[ "${1:-}" = "--san" ] && san=1
[ "${1:-}" = "--plugins" ] && plugins=1
bdir=$BUILD_QEMU
[ $san = 1 ] && bdir=$BUILD_QEMU_SAN
[ $plugins = 1 ] && bdir=$BUILD_QEMU_PLUGINS

bash "$top/scripts/fetch-qemu.sh"
bash "$top/scripts/overlay.sh"

q=$top/subprojects/qemu
flags=(
    --python=/usr/bin/python3          # Debian's, which has meson from backports
    --target-list=x86_64-softmmu
    --without-default-features
    --without-default-devices --with-devices-x86_64=virtio-rdma
    --enable-tcg --enable-slirp --enable-attr --enable-virtfs --enable-cap-ng
    --enable-fdt=system
    -Dvirtio_rdma_ibverbs=enabled      # backend=ibverbs (libibverbs-dev)
    --disable-install-blobs --disable-docs
    --cc="ccache gcc" --cxx="ccache g++"
)
# libFuzzer needs clang; the C++ core is then built by clang++ on libstdc++.
if [ $san = 1 ]; then
    flags=("${flags[@]/#--cc=*/--cc=ccache clang}")
    flags=("${flags[@]/#--cxx=*/--cxx=ccache clang++}")
    flags+=(--enable-fuzzing --enable-asan --enable-ubsan --disable-werror)
fi
[ $plugins = 1 ] && flags+=(--enable-plugins)

# Reconfigure when the flags change (or on a fresh directory).
want=$(printf '%s\n' "${flags[@]}")
if [ ! -f "$bdir/build.ninja" ] || [ "$(cat "$bdir/.virtio-rdma-flags" 2>/dev/null)" != "$want" ]; then
    rm -rf "$bdir"
    mkdir -p "$bdir"
    echo "build: configuring $bdir"
    (cd "$bdir" && "$q/configure" "${flags[@]}" >configure.log 2>&1) ||
        { tail -n 40 "$bdir/configure.log" >&2; echo "build: configure failed ($bdir/configure.log)" >&2; exit 1; }
    printf '%s\n' "$want" > "$bdir/.virtio-rdma-flags"
fi

# Firmware for the uninstalled binary: QEMU looks in qemu-bundle/<datadir>.
datadir=$(cd "$bdir" && find qemu-bundle -type d -path '*/share/qemu' | head -n 1)
[ -n "$datadir" ] || { datadir=qemu-bundle/usr/local/share/qemu; mkdir -p "$bdir/$datadir"; }
for f in /usr/share/qemu/* /usr/share/seabios/*.bin /usr/lib/ipxe/qemu/*.rom; do
    [ -e "$bdir/$datadir/$(basename "$f")" ] || ln -s "$f" "$bdir/$datadir/"
done

# Paths relative to the checkout, so a fresh clone (CI) reuses the cache.
export CCACHE_BASEDIR=$top CCACHE_NOHASHDIR=1
echo "build: ninja -C $bdir"
ccache -z >/dev/null 2>&1 || true
main=qemu-system-x86_64
[ $san = 1 ] && main="$main qemu-fuzz-x86_64"
ninja -C "$bdir" -j "$JOBS" $main ${BUILD_TARGETS:-}
