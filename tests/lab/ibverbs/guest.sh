#!/bin/sh
# Lab guest job of the ibverbs part (tests/lab/ibverbs.sh): our QEMU, nested
# under -accel qtest, with virtio-rdma-pci backend=ibverbs on this guest's
# rxe0.  Each case writes "PASS|FAIL NAME details" to /out/results.
. /out/env
out=/out/results
: > $out

# realize ARGS: what a QEMU with the device (ARGS appended to it) prints:
# stderr, and QMP's answers to query-virtio-rdma and quit; guest RAM shareable unless ARGS says otherwise.
realize() {
    ram=${RAM:--object memory-backend-memfd,id=m0,size=128M -machine memory-backend=m0}
    timeout 60 "$QEMU" -M q35 -accel qtest -display none -nodefaults -m 128M $ram \
        -netdev user,id=n0 -device virtio-net-pci,netdev=n0,addr=04.0,multifunction=on \
        -device "virtio-rdma-pci,addr=04.1,$1" -trace 'virtio_rdma_ibverbs_*' \
        -qtest null -qmp stdio 2>&1 <<QMP
{"execute": "qmp_capabilities"}
{"execute": "query-virtio-rdma"}
{"execute": "quit"}
QMP
}
# check NAME WANT STDERR: PASS when STDERR contains WANT.
check() {
    if printf '%s' "$3" | grep -qF -- "$2"; then
        echo "PASS $1 $(printf '%s' "$3" | grep -F -- "$2" | head -1 | cut -c1-160)" >> $out
    else
        echo "FAIL $1 wanted \"$2\", got: $(printf '%s' "$3" | tr '\n' ' ' | cut -c1-300)" >> $out
    fi
}

rdma link show > /out/rdma-link.txt 2>&1
ibv_devinfo -v > /out/ibv_devinfo.txt 2>&1

# The host device is found and its port is RoCE: the device is realized.
e=$(realize backend=ibverbs,ibdev=rxe0)
check probe '"backend": "ibverbs"' "$e"
check netdev '"netdev": "eth0"' "$e"  # where the guest's GIDs must go
check probe-port "host device rxe0 port 1 state 4 active mtu 1024" "$e"
# rxe's limits are above every property's maximum: nothing is lowered.
e=$(realize backend=ibverbs,ibdev=rxe0,max-qp=400,max-cq=63,max-sge=32,queue-size=1024)
case $e in *lowered*) echo "FAIL no-clamp $(printf '%s' "$e" | grep lowered | head -1)" >> $out ;;
*) check no-clamp '"max-qp": 400' "$e" ;; esac
# Refusals name what the host has.
check no-device "no host RDMA device 'rxe9' (the host has: rxe0)" \
    "$(realize backend=ibverbs,ibdev=rxe9)"
check no-port "host RDMA device 'rxe0' has no port 2 (ports 1..1)" \
    "$(realize backend=ibverbs,ibdev=rxe0,ibport=2)"
check private-ram "needs guest RAM that is shared" \
    "$(RAM=' ' realize backend=ibverbs,ibdev=rxe0)"

# The data-path qtests on rxe0: one result per test case.
ip4=$(ip -4 -o addr show dev eth0 | awk '{print $4}' | cut -d/ -f1)
ip6=$(ip -6 -o addr show dev eth0 scope global | awk '{print $4}' | cut -d/ -f1)
paths=
for p in $LAB_IBV_DP; do paths="$paths -p $p"; done
QTEST_QEMU_BINARY=$QEMU QVRDMA_IBDEV=rxe0 QVRDMA_GID_IPV4=$ip4 QVRDMA_GID_IPV6=$ip6 \
    timeout 600 "$DPTEST" --tap -k $paths > /out/dp.tap 2> /out/dp.err
rc=$?
echo "dp-test exit $rc" >> /out/dp.err
sed -n 's|^ok [0-9]* /x86_64/virtio-rdma-dp/\(.*\)|PASS dp/\1 byte-exact on rxe0|p; s|^not ok [0-9]* /x86_64/virtio-rdma-dp/\([^ ]*\).*|FAIL dp/\1 see dp.tap / dp.err|p' \
    /out/dp.tap >> $out
grep -q '^ok\|^not ok' /out/dp.tap || echo "FAIL dp/none no test ran (dp.err)" >> $out
# Registration time of a 1 GiB MR (a measurement: the figures in the line),
# with guest RAM untouched (the pin faults it in) and allocated at start.
for pre in 0 1; do
    QTEST_QEMU_BINARY=$QEMU QVRDMA_IBDEV=rxe0 QVRDMA_RAM_MB=1280 QVRDMA_REG_MB=1024 \
        QVRDMA_RAM_PREALLOC=$pre timeout 600 "$DPTEST" --tap \
        -p /x86_64/virtio-rdma-dp/ibverbs/reg-time > /out/reg$pre.tap 2> /out/reg$pre.err
    name=reg-time-1g$([ $pre = 1 ] && echo -prealloc)
    if grep -q '^ok' /out/reg$pre.tap; then
        echo "PASS $name $(grep -a IBV-REG-TIME /out/reg$pre.tap | cut -d' ' -f2-) (TCG guest, nested)" >> $out
    else
        echo "FAIL $name $(grep -a ERROR /out/reg$pre.err | tail -1 | cut -c1-200)" >> $out
    fi
done

# Last and alone: the host port's events (eth0 down and up again).
QTEST_QEMU_BINARY=$QEMU QVRDMA_IBDEV=rxe0 QVRDMA_IBDEV_NETDEV=eth0 \
    timeout 120 "$DPTEST" --tap -p /x86_64/virtio-rdma-dp/ibverbs/port-events \
    > /out/port.tap 2> /out/port.err
prc=$?
grep -q '^ok' /out/port.tap && echo "PASS port-events QUERY_PORT DOWN after eth0 down, ACTIVE after up" >> $out ||
    echo "FAIL port-events exit $prc: $(grep -a ERROR /out/port.err | tail -1 | cut -c1-200)" >> $out
# An assertion ends the binary: the case after the last reported one failed.
[ $rc = 0 ] || echo "FAIL dp/exit virtio-rdma-dp-test exit $rc after $(grep -c '^ok\|^not ok' /out/dp.tap) cases: $(grep -a 'ERROR' /out/dp.err | tail -1 | cut -c1-200)" >> $out
