#!/bin/bash
# The nvme part's job with the driver on queues in guest memory (rings=1,
# VIRTIO_RDMA_F_RINGS) for kernel objects: /init loaded the module without
# parameters, so this loads it again with rings=1 (arguments: the module's
# path, then the job of tests/lab/nvme/ to run), waits for eth0's IPv4 GID
# and the port, writes what it got to /out/rings.txt -- the parameter,
# feature bit 2, the port state, QP1 on the device, and the uverbs ABI the
# module offers the provider (2: rings in user memory) -- then runs the
# job.  Every wait is bounded.
ko=$1 job=$2
{ rmmod virtio_rdma && insmod "$ko" rings=1; } > /out/rings.log 2>&1
d=/sys/class/infiniband/vrdma0/ports/1
for _ in $(seq 300); do
    grep -qs '^0000:0000:0000:0000:0000:ffff:' $d/gids/* && grep -qs ACTIVE $d/state && break
    sleep 0.1
done
f=$(cat /sys/bus/virtio/drivers/virtio_rdma/virtio*/features 2>/dev/null)
abi=none
for u in /sys/class/infiniband_verbs/uverbs*; do
    [ "$(cat $u/ibdev 2>/dev/null)" = vrdma0 ] && abi=$(cat $u/abi_version)
done
echo "rings=$(cat /sys/module/virtio_rdma/parameters/rings 2>/dev/null)" \
     "feature2=${f:2:1} state=$(cut -d: -f2 $d/state 2>/dev/null | tr -d ' ')" \
     "qp1=$(rdma resource show qp link vrdma0/1 2>/dev/null | grep -c 'lqpn 1 ')" \
     "user-abi=$abi" > /out/rings.txt
exec /bin/bash "/lab/nvme/$job"
