# Shared settings of the build scripts (sourced, not run).
# The QEMU release the overlay and its glue patch are written against.
QEMU_DEB_VERSION="1:10.0.13+ds-0+deb13u1"
# Build directories (all git-ignored).
BUILD_QEMU=${BUILD_QEMU:-$top/build/qemu}
BUILD_QEMU_SAN=${BUILD_QEMU_SAN:-$top/build/qemu-san}
BUILD_UNIT=${BUILD_UNIT:-$top/build/unit}
BUILD_UNIT_SAN=${BUILD_UNIT_SAN:-$top/build/unit-san}
JOBS=${JOBS:-$(nproc)}
