#!/bin/sh
# Lab guest job of the ibverbs part's tenant-wire cases
# (tests/lab/test_ibverbs.py, TenantWire), for both guests; /out/env (from
# the host) says which: ROLE=dev or ROLE=peer.
#
# dev: our QEMU's devices, nested under -accel qtest, backend=ibverbs on this
# guest's rxe0 through the rdmacm-mux (the kernel's CM unloaded), a second
# address of eth0 ($B_IP, tenant B's) beside its own ($IP, tenant A's), and
# a capture of eth0 the whole time (/out/tenant-wire.pcapng, dissected by
# tshark on the host).  Each case of CASES is the data-path test
# /x86_64/virtio-rdma-dp/ibverbs/CASE; its output in /out/NAME.tap (the
# phases and figures the host reads) and NAME.err, its line in /out/results.
# The test runs "tenant-wire.sh hook stage NAME" (the host has the peer send
# RDMA-CM connects; the stage's answer says they are done) and "hook
# mux-stats LABEL" (a marker line in mux.log, then the mux's counters).
#
# peer: plain rxe0 and the kernel's CM.  For each /out/go.NAME the host
# writes (an IPv4 address), RDMA-CM connects to it (rping clients nobody
# answers: each REQ goes to QP1 there, then a REJ when it is given up),
# output in NAME.out, then /out/done.NAME; until /out/stop.
. /lab/guest-lib.sh
. /lab/ibverbs/rxe.sh
. /out/env
sock=/run/rdmacm-mux.sock

if [ "$1" = hook ]; then
    case $2 in
    stage) LAB_STAGE_WAIT=60 stage "$3" ;;
    mux-stats)
        echo "TW-MUX-STATS $3" >> /out/mux.log
        kill -USR1 "$(cat /run/mux.pid)" && sleep 0.3 ;;
    *) exit 2 ;;
    esac
    exit
fi

if [ "$ROLE" = peer ]; then
    end=$(( $(date +%s) + ${LIMIT:-600} ))
    while [ ! -e /out/stop ] && [ "$(date +%s)" -lt $end ]; do
        for go in /out/go.*; do
            [ -e "$go" ] || continue
            name=${go#/out/go.}
            [ -e "/out/done.$name" ] && continue
            ip=$(cat "$go")
            for i in 1 2 3 4; do
                timeout 2 rping -c -a "$ip" -p $((18700 + i)) -C 1 -v &
            done > "/out/$name.out" 2>&1
            wait
            touch "/out/done.$name"
        done
        sleep 0.2
    done
    exit 0
fi

out=/out/results
: > $out
fail_all() {
    for c in $CASES; do result FAIL "$c" "$1"; done
    exit 0
}
ip addr add "$B_IP/24" dev eth0
wait_gid "$B_IP" || fail_all "$B_IP did not reach rxe0's GID table"
rmmod nvme_rdma nvmet_rdma rdma_ucm rdma_cm iw_cm ib_cm 2>> /out/rmmod.txt
[ -x "$MUX" ] || fail_all "no rdmacm-mux binary (ninja -C build/unit)"
"$MUX" --ibdev rxe0 --socket $sock --claim-grace "${CLAIM_GRACE:-600}" -v >> /out/mux.log 2>&1 &
echo $! > /run/mux.pid
i=0
while [ ! -S $sock ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -S $sock ] || fail_all "the mux did not start: $(tr '\n' ' ' < /out/mux.log | cut -c1-200)"
# The capture, to the guest's tmpfs (copied to /out at the end): dumpcap,
# what tshark runs to capture (tshark itself takes 15 s more to start here).
dumpcap -i eth0 -w /tmp/tenant-wire.pcapng 2> /out/capture.err &
cap=$!
i=0
until grep -q "Capturing on" /out/capture.err 2>/dev/null; do
    [ $i -ge 200 ] && fail_all "no capture: $(tr "\n" " " < /out/capture.err | cut -c1-200)"
    sleep 0.1; i=$((i + 1))
done

for c in $CASES; do
    name=${c#tenant-wire/}
    QTEST_QEMU_BINARY=$QEMU QVRDMA_IBDEV=rxe0 QVRDMA_GID_IPV4=$IP QVRDMA_GID_IPV4_B=$B_IP \
        QVRDMA_PEER_IPV4=$PEER_IP QVRDMA_MAD_SOCKET=$sock \
        QVRDMA_TW_HOOK="sh /lab/ibverbs/tenant-wire.sh hook" \
        QTEST_TRACE='virtio_rdma_mad_claim*' \
        timeout 240 "$DPTEST" --tap -p "/x86_64/virtio-rdma-dp/ibverbs/$c" \
        > "/out/$name.tap" 2> "/out/$name.err"
    rc=$?
    if grep -q '^ok' "/out/$name.tap"; then
        result PASS "$c" "$(grep -a '^TW ' "/out/$name.tap" | cut -d' ' -f3- | tr '\n' ' ')"
    else
        result FAIL "$c" "exit $rc: $(grep -a ERROR "/out/$name.err" | tail -1 | cut -c1-240)"
    fi
done
sleep 0.5
kill -INT $cap
wait $cap
cp /tmp/tenant-wire.pcapng /out/
kill "$(cat /run/mux.pid)"
