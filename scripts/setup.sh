#!/usr/bin/env bash
# The README's first command: on a fresh Debian 12 machine, install the
# dependencies from Debian, fetch QEMU 10.0's source package, overlay this
# repo and the glue patch, build QEMU, the guest driver (kernel module +
# rdma-core provider) and the lab's guest kernel, then show two guests on our
# QEMU doing RDMA through virtio-rdma.  Re-running it is incremental.
#
#   scripts/setup.sh          build everything, then the two-guest demo
#   scripts/setup.sh --demo   build QEMU only, then the device's control path
#                             driven by the qtest driver (quick, no guests)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/config.sh"
mode=guests
[ "${1:-}" = --demo ] && mode=control

start=$(date +%s)
bash "$top/scripts/deps.sh"
BUILD_TARGETS="tests/qtest/virtio-rdma-demo" bash "$top/scripts/build.sh"
if [ $mode = control ]; then
    echo "setup: built in $(( $(date +%s) - start )) s"
    echo
    echo "== demo: virtio-net-pci (function 0) + virtio-rdma-pci (function 1), control path"
    QTEST_QEMU_BINARY=$BUILD_QEMU/qemu-system-x86_64 \
        "$BUILD_QEMU/tests/qtest/virtio-rdma-demo" --tap -k
    exit 0
fi
bash "$top/tests/lab/setup.sh"
bash "$top/scripts/build-guest.sh"
echo "setup: built in $(( $(date +%s) - start )) s"

echo
echo "== demo: two TCG guests (Debian $(cat "$top/build/lab/kver")) on our QEMU, each with"
echo "   virtio-net-pci + virtio-rdma-pci in one slot, virtio_rdma.ko and the provider loaded;"
echo "   unmodified ibv_rc_pingpong and ib_write_bw between them over the RoCEv2 IPv4 GIDs"
/usr/bin/python3 "$top/tests/lab/lab.py" driver \
    -k '^driver/vv/(v4-(rc_pingpong|write_bw)|[AB]-(device|kernel))$' \
    --results "$top/build/lab/results/demo-$(date +%Y%m%d-%H%M%S)"
