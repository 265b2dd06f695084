#!/usr/bin/env bash
# The README's first command: on a fresh Debian 12 machine, install the
# dependencies from Debian, fetch QEMU 10.0's source package, overlay this
# repo and the glue patch, build, then run the demonstration.  Re-running it
# is incremental.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/config.sh"

start=$(date +%s)
bash "$top/scripts/deps.sh"
BUILD_TARGETS="tests/qtest/virtio-rdma-demo" bash "$top/scripts/build.sh"
echo "setup: built in $(( $(date +%s) - start )) s"

echo
echo "== demo: virtio-net-pci (function 0) + virtio-rdma-pci (function 1), control path"
QTEST_QEMU_BINARY=$BUILD_QEMU/qemu-system-x86_64 \
    "$BUILD_QEMU/tests/qtest/virtio-rdma-demo" --tap -k
