#!/bin/bash
# Lab guest job (the device's side) of the ibverbs part's interop: our
# device in a nested QEMU (backend=ibverbs on this guest's rxe0) is the
# tools' far end, driven by virtio-rdma-lab-peer; the tools run in the other
# guest, which walks the same list (guest-cases.sh).  /out/cases is
# guest-cases.sh's format (protocol.ToolCases), one case a line:
#   ROLE NAME TIMEOUT COMMAND...
# ROLE: our device's (srv: the peer serves, cli: it connects; the peer
# retries its TCP exchange itself, so each runs once); COMMAND: the peer and
# its arguments.  /out/env: QEMU (the peer's QTEST_QEMU_BINARY) and MUX.
# Per case NAME.out, NAME.rc and NAME.cnt (rxe0's hw_counters that changed:
# name, before, after).
# The rping cases' CM MADs go through contrib/rdmacm-mux, started here once
# the kernel's CM is unloaded (this guest's own tools do not use RDMA-CM).
. /out/env
cd /out || exit 1
sock=/run/rdmacm-mux.sock
if grep -q rping cases; then
    rmmod nvme_rdma nvmet_rdma rdma_ucm rdma_cm iw_cm ib_cm 2>> rmmod.txt
    "$MUX" --ibdev rxe0 --socket $sock -v > mux.log 2>&1 &
    i=0
    while [ ! -S $sock ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
fi
# The device's addresses are this guest's own: management allows them
# (allowed-gids; without it the host's own addresses are refused).
QVRDMA_ALLOWED_GIDS=$(ip -o addr show dev eth0 scope global | awk '{print $4}' |
                      cut -d/ -f1 | paste -sd';')
export QVRDMA_ALLOWED_GIDS
counters() {
    for f in /sys/class/infiniband/rxe0/ports/1/hw_counters/*; do
        echo "$(basename "$f") $(cat "$f")"
    done | sort
}
while read -r role name tmo cmd; do
    [ -z "$role" ] && continue
    mad=
    case $name in *rping*) mad=$sock ;; esac
    counters > "/tmp/$name.c0"
    # One VM (one -uuid, as libvirt gives it), started again per case: its
    # GIDs' claims at the mux stay its own (a new owner would find them
    # reserved for the last one, rdmacm-mux's --claim-grace).
    QTEST_QEMU_BINARY=$QEMU QVRDMA_IBDEV=rxe0 QVRDMA_MAD_SOCKET=$mad \
        QVRDMA_UUID=0a79e5e1-25aa-4b1e-9d6c-6c1a8e0a7901 timeout -k 5 "$tmo" \
        bash -c "$cmd" > "$name.out" 2>&1
    rc=$?
    counters > "/tmp/$name.c1"
    join "/tmp/$name.c0" "/tmp/$name.c1" | awk '$2 != $3' > "$name.cnt"
    echo $rc > "$name.rc"
done < cases
