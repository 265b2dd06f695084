#!/bin/bash
# Runs inside a lab guest (cwd /out) whose driver must refuse the device
# (test_driver.py: DMA addresses that are bounce buffers, swiotlb=force; a
# device without queues in guest memory): loads virtio_rdma.ko ($KO in
# /out/env, a host-root path).  Out: devices.txt (the RDMA devices after
# the load), dmesg.txt.
. /out/env
insmod "$KO"
i=0
while [ ! -e /sys/class/infiniband/vrdma0 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
ls /sys/class/infiniband > devices.txt 2>&1
dmesg > dmesg.txt
