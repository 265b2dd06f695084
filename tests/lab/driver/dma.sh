#!/bin/bash
# Runs inside a lab guest booted with swiotlb=force (cwd /out): loads
# virtio_rdma.ko ($KO in /out/env, a host-root path) where DMA addresses
# are bounce buffers, not guest-physical.  Out: devices.txt (the RDMA
# devices after the load), dmesg.txt.
. /out/env
insmod "$KO"
i=0
while [ ! -e /sys/class/infiniband/vrdma0 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
ls /sys/class/infiniband > devices.txt 2>&1
dmesg > dmesg.txt
