#!/usr/bin/env bash
# Build rdma-core's own test suite (tests/, on pyverbs) from the same source
# the guest provider is built against (subprojects/rdma-core, with our
# providers/virtio_rdma linked in by scripts/build-guest.sh), for the lab's
# suite part (tests/lab/test_suite.py).
#
#   scripts/build-suite.sh
#
# Out: build/guest/rdma-core-suite, an IN_PLACE build of the whole source
# with pyverbs: bin/run_tests.py, python/pyverbs, lib/libibverbs.so.1 and its
# providers (rxe, virtio_rdma, ...) in lib/, their .driver files in
# etc/libibverbs.d.  IN_PLACE makes that libibverbs read etc/libibverbs.d of
# the build tree and load providers from lib/ (CONFIG_DIR and
# VERBS_PROVIDER_DIR), and the build's RUNPATH binds pyverbs to it: the suite,
# libibverbs and both providers are one source, not Debian's 44.0.
# Separate from build/guest/rdma-core-build (NO_PYVERBS, the provider alone,
# no RUNPATH).  Idempotent (ninja); bounded by SUITE_BUILD_TMO seconds
# (default 2400).  Run it under the build lock, after scripts/build-guest.sh:
#   flock /tmp/vrdma-build.lock bash scripts/build-suite.sh
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
JOBS=${JOBS:-2}
TMO=${SUITE_BUILD_TMO:-2400}
rc=$top/subprojects/rdma-core
b=$top/build/guest/rdma-core-suite
die() { echo "build-suite: $*" >&2; exit 1; }

[ -f "$rc/.virtio-rdma-source" ] || die "no rdma-core source in $rc (scripts/build-guest.sh fetches it)"
[ -e "$rc/providers/virtio_rdma/CMakeLists.txt" ] &&
    grep -q '^add_subdirectory(providers/virtio_rdma)$' "$rc/CMakeLists.txt" ||
    die "$rc has no providers/virtio_rdma (run scripts/build-guest.sh first: it links it in)"
PY=/usr/bin/python3   # Debian's (a pyenv python3 may come first in PATH)
$PY -c 'import Cython' 2>/dev/null || die "no Cython for python3 (scripts/deps.sh installs cython3)"
[ -f "$($PY -c 'import sysconfig; print(sysconfig.get_paths()["include"])')/Python.h" ] ||
    die "no Python.h (scripts/deps.sh installs python3-dev)"

cmake_args=(-G Ninja -DIN_PLACE=1 -DNO_MAN_PAGES=1 -DCMAKE_BUILD_TYPE=RelWithDebInfo
            "-DPYTHON_EXECUTABLE=$PY")
stamp="$(cat "$rc/.virtio-rdma-source") ${cmake_args[*]}"
if [ ! -f "$b/build.ninja" ] || [ "$(cat "$b/.virtio-rdma-config" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$b"
    mkdir -p "$b"
    echo "build-suite: configuring rdma-core $(cat "$rc/.virtio-rdma-source") with pyverbs"
    timeout 600 cmake -S "$rc" -B "$b" "${cmake_args[@]}" >"$b/configure.log" 2>&1 ||
        { cat "$b/configure.log" >&2; die "cmake failed"; }
    # Without Cython (or one too old) cmake quietly leaves pyverbs out.
    grep -q 'cython NOT found' "$b/configure.log" &&
        { cat "$b/configure.log" >&2; die "cmake found no usable Cython: pyverbs would not be built"; }
    echo "$stamp" > "$b/.virtio-rdma-config"
fi
echo "build-suite: ninja (log: $b/ninja.log)"
timeout "$TMO" ninja -C "$b" -j"$JOBS" >"$b/ninja.log" 2>&1 ||
    { tail -n 60 "$b/ninja.log" >&2; die "ninja failed or took over ${TMO}s"; }

# What the suite needs, checked: the runner, pyverbs, both providers with
# their .driver files, and a libibverbs of this tree that finds them.
pabi=$(sed -n 's/^set(IBVERBS_PABI_VERSION "\([0-9]*\)")$/\1/p' "$rc/CMakeLists.txt")
for f in bin/run_tests.py lib/libibverbs.so.1 \
         lib/librxe-rdmav$pabi.so lib/libvirtio_rdma-rdmav$pabi.so \
         etc/libibverbs.d/rxe.driver etc/libibverbs.d/virtio_rdma.driver; do
    [ -e "$b/$f" ] || die "$b/$f was not built"
done
ls "$b"/python/pyverbs/device.*.so >/dev/null 2>&1 || die "pyverbs was not built ($b/python/pyverbs)"
so=$(ls "$b"/python/pyverbs/device.*.so)
lib=$(ldd "$so" | awk '$1 == "libibverbs.so.1" { print $3 }')
[ "$lib" = "$b/lib/libibverbs.so.1" ] || die "$so binds libibverbs.so.1 to '$lib', not this build's"
n=$(cd "$b" && timeout 120 bin/run_tests.py --list-tests 2>"$b/list-tests.log" | wc -l) && [ "$n" -gt 0 ] ||
    { cat "$b/list-tests.log" >&2; die "bin/run_tests.py --list-tests lists no tests on the host"; }
echo "build-suite: $b (rdma-core $(cat "$rc/.virtio-rdma-source"), $n tests)"
