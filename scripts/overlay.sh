#!/usr/bin/env bash
# Put this repo's files into the QEMU tree in subprojects/qemu (as symlinks,
# so edits here are seen by the next incremental build) and apply the glue
# patch (Kconfig/meson lines, QAPI include, HMP command, C++ on Linux).
# Idempotent; re-applies the glue when glue/qemu-10.0.patch changes.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/config.sh"
q=$top/subprojects/qemu
[ -f "$q/VERSION" ] || { echo "overlay: $q is missing; run scripts/fetch-qemu.sh" >&2; exit 1; }

# Paths relative to both trees.
links=(
    hw/rdma
    include/hw/rdma
    qapi/rdma-virtio.json
    configs/devices/x86_64-softmmu/virtio-rdma.mak
    tests/qtest/libqos/virtio-rdma.c
    tests/qtest/libqos/virtio-rdma.h
    tests/qtest/libqos/virtio-rdma-dp.c
    tests/qtest/libqos/virtio-rdma-dp.h
    tests/qtest/libqos/virtio-rdma-ring.c
    tests/qtest/libqos/virtio-rdma-ring.h
    tests/qtest/virtio-rdma-test.c
    tests/qtest/virtio-rdma-demo.c
    tests/qtest/virtio-rdma-dp-test.c
    tests/qtest/virtio-rdma-ring-test.c
    tests/qtest/virtio-rdma-mem-test.c
    tests/qtest/virtio-rdma-safety-test.c
    tests/qtest/virtio-rdma-bench.c
    tests/qtest/virtio-rdma-lab-peer.c
)
for p in "${links[@]}"; do
    [ -e "$top/$p" ] || { echo "overlay: $p missing in the repo" >&2; exit 1; }
    if [ "$(readlink "$q/$p" 2>/dev/null)" != "$top/$p" ]; then
        [ -e "$q/$p" ] && [ ! -L "$q/$p" ] && { echo "overlay: $q/$p exists in QEMU's tree" >&2; exit 1; }
        ln -sfn "$top/$p" "$q/$p"
    fi
done

patch=$top/glue/qemu-10.0.patch
applied=$q/.virtio-rdma-glue.patch
if [ -f "$applied" ] && cmp -s "$patch" "$applied"; then
    exit 0
fi
if [ -f "$applied" ]; then
    echo "overlay: glue patch changed; reverting the old one"
    patch -d "$q" -p1 -R -s < "$applied"
fi
echo "overlay: applying glue/qemu-10.0.patch"
patch -d "$q" -p1 -s --no-backup-if-mismatch < "$patch"
cp "$patch" "$applied"
