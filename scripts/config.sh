# Shared settings of the build scripts (sourced, not run).
# The QEMU release the overlay and its glue patch are written against.
QEMU_DEB_VERSION="1:10.0.13+ds-0+deb13u1"
# Build directories (all git-ignored).
BUILD_QEMU=${BUILD_QEMU:-$top/build/qemu}
BUILD_QEMU_SAN=${BUILD_QEMU_SAN:-$top/build/qemu-san}
BUILD_QEMU_PLUGINS=${BUILD_QEMU_PLUGINS:-$top/build/qemu-plugins}
BUILD_UNIT=${BUILD_UNIT:-$top/build/unit}
BUILD_UNIT_SAN=${BUILD_UNIT_SAN:-$top/build/unit-san}
JOBS=${JOBS:-$(nproc)}

# meson_dir DIR SETUP-COMMAND...: a meson build directory set up by
# SETUP-COMMAND, set up again (from scratch) when the command -- or the
# body of the function it names -- changes.
meson_dir() {
    local dir=$1; shift
    local want
    want="$(declare -f "$1" 2>/dev/null) $*"
    if [ ! -f "$dir/build.ninja" ] || [ "$(cat "$dir/.virtio-rdma-setup" 2>/dev/null)" != "$want" ]; then
        rm -rf "$dir"
        "$@" || return
        echo "$want" > "$dir/.virtio-rdma-setup"
    fi
}
# The core's plain build (gcc): unit tests, benchmarks, rdmacm-mux.
unit_setup() {  # DIR
    meson setup "$1" "$top"
}
# The core's sanitizer build: clang, ASan + UBSan, and libFuzzer's
# instrumentation, so that one build serves the unit-san tier (its unit
# tests) and the core's fuzz targets (scripts/fuzz.sh).
unit_san_setup() {  # DIR
    CC=clang CXX=clang++ meson setup "$1" "$top" -Dfuzz=true \
        -Db_sanitize=address,undefined -Db_lundef=false -Dwerror=false \
        --buildtype=debugoptimized \
        -Dcpp_args="-fsanitize=fuzzer-no-link -fno-sanitize-recover=undefined"
}
