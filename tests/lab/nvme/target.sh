#!/bin/bash
# nvmet-rdma target of the lab's nvme part (runs in a guest, on LAB_DEV):
# subsystem testnqn, one namespace on a 64 MiB file in the guest's tmpfs
# (buffered_io: tmpfs has no O_DIRECT), port rdma/ipv4 on eth0's address.
# Serial, UUID and NGUID are fixed: a target booted again after a kill is the
# same subsystem to the host, which otherwise drops the namespace on its
# reconnect ("identifiers changed").
# /out/target.ready (or target.failed) says how the set-up went; then it
# serves until /out/stop (bounded), what the kernel's resource tracker counts
# on LAB_DEV in /out/res.txt (every 0.5 s), and leaves its kernel log in
# /out/dmesg.txt.  Environment from /out/job.env: NV_ADDR.
exec > /out/job.log 2>&1
. /out/job.env
set -x
fail() { echo "$*" > /out/target.failed; dmesg > /out/dmesg.txt; exit 1; }
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config || fail "configfs"
cd /sys/kernel/config/nvmet || fail "no nvmet in configfs"
s=subsystems/testnqn
mkdir $s && echo 1 > $s/attr_allow_any_host && echo 7ab0000000000001 > $s/attr_serial || fail "subsystem"
mkdir $s/namespaces/1 && truncate -s 64M /run/ns.img &&
    echo -n /run/ns.img > $s/namespaces/1/device_path &&
    echo 7ab00001-0000-4000-8000-000000000001 > $s/namespaces/1/device_uuid &&
    echo 7ab00001-0000-4000-8000-000000000002 > $s/namespaces/1/device_nguid &&
    echo 1 > $s/namespaces/1/buffered_io &&
    echo 1 > $s/namespaces/1/enable || fail "namespace"
mkdir ports/1 && echo rdma > ports/1/addr_trtype && echo ipv4 > ports/1/addr_adrfam &&
    echo "$NV_ADDR" > ports/1/addr_traddr && echo 4420 > ports/1/addr_trsvcid &&
    ln -s /sys/kernel/config/nvmet/$s ports/1/subsystems/testnqn || fail "port rdma $NV_ADDR:4420"
echo "$LAB_DEV" > /out/target.ready
set +x
i=0
while [ ! -e /out/stop ] && [ $i -lt 1800 ]; do
    rdma resource show "$LAB_DEV" > /out/res.tmp && mv /out/res.tmp /out/res.txt
    sleep 0.5; i=$((i + 1))
done
dmesg > /out/dmesg.txt
