#!/bin/sh
# Lab guest job of the ibverbs part (tests/lab/test_ibverbs.py): our QEMU, nested
# under -accel qtest, with virtio-rdma-pci backend=ibverbs on this guest's
# rxe0.  Each case writes "PASS|FAIL NAME details" to /out/results.
# /out/env (from the host): QEMU, DPTEST (virtio-rdma-dp-test), RINGTEST
# (virtio-rdma-ring-test), MUX (rdmacm-mux) and CASES, the cases to run
# (tests/lab/test_ibverbs.py: the ones the run chose; dp/PATH and
# dp-iothread/PATH are the data-path qtests' /x86_64/virtio-rdma-dp/PATH,
# ring/PATH the rings data path's /x86_64/virtio-rdma-ring/PATH).
. /out/env
. /lab/ibverbs/rxe.sh
out=/out/results
: > $out
# want NAME: case NAME is to run.
want() {
    case " $CASES " in *" $1 "*) return 0 ;; esac
    return 1
}
# dp_paths PREFIX [SUITE]: the qtest paths /x86_64/SUITE/PATH (SUITE:
# virtio-rdma-dp) of the cases PREFIX/PATH in CASES.
dp_paths() {
    for c in $CASES; do
        case $c in "$1"/exit) ;; "$1"/*) echo "/x86_64/${2:-virtio-rdma-dp}/${c#"$1"/}" ;; esac
    done
}
LAB_IBV_DP=$(dp_paths dp)
IOTHREAD_DP=$(dp_paths dp-iothread)
RING_DP=$(dp_paths ring virtio-rdma-ring)

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
if want probe || want netdev || want probe-port; then
    e=$(realize backend=ibverbs,ibdev=rxe0)
    check probe '"backend": "ibverbs"' "$e"
    # RDMA_GID_STATUS_CHANGED's interface: the NIC's netdev id, never the
    # host's eth0 by default (issue 25: libvirt would put the guest's
    # addresses on the host's link).
    check netdev '"netdev": "n0"' "$e"
    check probe-port "host device rxe0 port 1 state 4 active mtu 1024" "$e"
fi
# netdev= names a host interface: only next to allowed-gids.
want netdev-needs-allow && check netdev-needs-allow \
    "backend=ibverbs: netdev=eth0 needs allowed-gids" \
    "$(realize backend=ibverbs,ibdev=rxe0,netdev=eth0)"
want netdev-allowed && check netdev-allowed '"netdev": "eth0"' \
    "$(realize "backend=ibverbs,ibdev=rxe0,netdev=eth0,allowed-gids=10.79.0.11;fd79::11")"
# rxe's limits are above every property's maximum: nothing is lowered.
if want no-clamp; then
    e=$(realize backend=ibverbs,ibdev=rxe0,max-qp=400,max-cq=63,max-sge=32)
    case $e in *lowered*) echo "FAIL no-clamp $(printf '%s' "$e" | grep lowered | head -1)" >> $out ;;
    *) check no-clamp '"max-qp": 400' "$e" ;; esac
fi
# Refusals name what the host has.
want no-device && check no-device "no host RDMA device 'rxe9' (the host has: rxe0)" \
    "$(realize backend=ibverbs,ibdev=rxe9)"
want no-port && check no-port "host RDMA device 'rxe0' has no port 2 (ports 1..1)" \
    "$(realize backend=ibverbs,ibdev=rxe0,ibport=2)"
want private-ram && check private-ram "needs guest RAM that is shared" \
    "$(RAM=' ' realize backend=ibverbs,ibdev=rxe0)"

# The data-path qtests on rxe0: one result per test case.
ip4=$(ip -4 -o addr show dev eth0 | awk '{print $4}' | cut -d/ -f1)
ip6=$(ip -6 -o addr show dev eth0 scope global | awk '{print $4}' | cut -d/ -f1)
# The qtests' devices use this guest's (their host's) addresses: management
# allows them (without allowed-gids the host's own are refused).
export QVRDMA_ALLOWED_GIDS="$ip4;$ip6"
paths=
for p in $LAB_IBV_DP; do paths="$paths -p $p"; done
rc=0
if [ -n "$paths" ]; then
    t0=$(date +%s)
    QTEST_QEMU_BINARY=$QEMU QVRDMA_IBDEV=rxe0 QVRDMA_GID_IPV4=$ip4 QVRDMA_GID_IPV6=$ip6 \
        sh /lab/watchdog.sh 900 /out/dp.hang "$DPTEST" --tap -k $paths > /out/dp.tap 2> /out/dp.err
    rc=$?
    echo "dp-test exit $rc after $(( $(date +%s) - t0 )) s" >> /out/dp.err
    sed -n 's|^ok [0-9]* /x86_64/virtio-rdma-dp/\(.*\)|PASS dp/\1 byte-exact on rxe0|p; s|^not ok [0-9]* /x86_64/virtio-rdma-dp/\([^ ]*\).*|FAIL dp/\1 see dp.tap / dp.err|p' \
        /out/dp.tap >> $out
    grep -q '^ok\|^not ok' /out/dp.tap || echo "FAIL dp/none no test ran (dp.err)" >> $out
fi
# The rings data path (queues in guest memory) in front of rxe0's QPs and CQs.
paths=
for p in $RING_DP; do paths="$paths -p $p"; done
ring_rc=0
if [ -n "$paths" ]; then
    QTEST_QEMU_BINARY=$QEMU QVRDMA_IBDEV=rxe0 QVRDMA_GID_IPV4=$ip4 QVRDMA_GID_IPV6=$ip6 \
        sh /lab/watchdog.sh 600 /out/ring.hang "$RINGTEST" --tap -k $paths > /out/ring.tap 2> /out/ring.err
    ring_rc=$?
    sed -n 's|^ok [0-9]* /x86_64/virtio-rdma-ring/\(.*\)|PASS ring/\1 on rxe0|p; s|^not ok [0-9]* /x86_64/virtio-rdma-ring/\([^ ]*\).*|FAIL ring/\1 see ring.tap / ring.err|p' \
        /out/ring.tap >> $out
    grep -q '^ok\|^not ok' /out/ring.tap || echo "FAIL ring/none no test ran (ring.err)" >> $out
    if [ $ring_rc = 0 ]; then
        want ring/exit && echo "PASS ring/exit virtio-rdma-ring-test exit 0 after $(grep -c '^ok\|^not ok' /out/ring.tap) cases" >> $out
    else
        echo "FAIL ring/exit virtio-rdma-ring-test exit $ring_rc after $(grep -c '^ok\|^not ok' /out/ring.tap) cases: $(grep -a 'ERROR' /out/ring.err | tail -1 | cut -c1-200)$([ $ring_rc = 124 ] && echo " (hung: stacks in ring.hang)")" >> $out
    fi
fi
# The same device with its engine in an iothread (iothread=): the host's
# completion channel is then watched in the iothread's AioContext.
paths=
for p in $IOTHREAD_DP; do paths="$paths -p $p"; done
if [ -n "$paths" ]; then
    QTEST_QEMU_BINARY=$QEMU QVRDMA_IBDEV=rxe0 QVRDMA_GID_IPV4=$ip4 QVRDMA_GID_IPV6=$ip6 QVRDMA_IOTHREAD=1 \
        timeout 300 "$DPTEST" --tap -k $paths > /out/dp-io.tap 2> /out/dp-io.err
    sed -n 's|^ok [0-9]* /x86_64/virtio-rdma-dp/\(.*\)|PASS dp-iothread/\1 byte-exact on rxe0, engine in an iothread|p; s|^not ok [0-9]* /x86_64/virtio-rdma-dp/\([^ ]*\).*|FAIL dp-iothread/\1 see dp-io.tap / dp-io.err|p' \
        /out/dp-io.tap >> $out
    grep -q '^ok\|^not ok' /out/dp-io.tap || echo "FAIL dp-iothread/none no test ran (dp-io.err)" >> $out
fi

# A blocking host verb (modify_qp to RTR towards an address nobody
# answers) runs off QEMU's main loop: QMP is answered meanwhile.
if want rtr-unresolved; then
    QTEST_QEMU_BINARY=$QEMU QVRDMA_IBDEV=rxe0 QVRDMA_GID_IPV4=$ip4 QVRDMA_UNREACHABLE_IPV4=10.79.0.99 \
        timeout 300 "$DPTEST" --tap -p /x86_64/virtio-rdma-dp/ibverbs/rtr-unresolved \
        > /out/rtr.tap 2> /out/rtr.err
    if grep -q '^ok' /out/rtr.tap; then
        echo "PASS rtr-unresolved $(grep -a -o 'IBV-RTR-UNRESOLVED.*' /out/rtr.tap | head -1 | cut -d' ' -f2-)" >> $out
    else
        echo "FAIL rtr-unresolved $(grep -a -o 'IBV-RTR-UNRESOLVED.*' /out/rtr.tap | head -1 | cut -d' ' -f2-) $(grep -a ERROR /out/rtr.err | tail -1 | cut -c1-200)" >> $out
    fi
fi

# The same for a UD send's address handle, with the engine in the main
# loop and in an iothread: the device goes on meanwhile, the sends behind it
# on its QP wait in order.
for io in 0 1; do
    name=ud-unresolved$([ $io = 1 ] && echo -iothread)
    want $name || continue
    QTEST_QEMU_BINARY=$QEMU QVRDMA_IBDEV=rxe0 QVRDMA_GID_IPV4=$ip4 QVRDMA_UNREACHABLE_IPV4=10.79.0.99 \
        QVRDMA_IOTHREAD=$([ $io = 1 ] && echo 1) \
        timeout 300 "$DPTEST" --tap -p /x86_64/virtio-rdma-dp/ibverbs/ud-unresolved \
        > /out/ud$io.tap 2> /out/ud$io.err
    line=$(grep -a -o 'IBV-UD-UNRESOLVED.*' /out/ud$io.tap | head -1 | cut -d' ' -f2-)
    if grep -q '^ok' /out/ud$io.tap; then
        echo "PASS $name $line" >> $out
    else
        echo "FAIL $name $line $(grep -a ERROR /out/ud$io.err | tail -1 | cut -c1-200)" >> $out
    fi
done

# dp_case NAME PATH TAG [VAR=VALUE...]: the data-path test PATH alone, with
# this guest's address and VAR=VALUE in its environment; its TAG line (the
# figures it measured) in the result.
dp_case() {
    name=$1 path=$2 tag=$3
    shift 3
    env QTEST_QEMU_BINARY=$QEMU QVRDMA_IBDEV=rxe0 QVRDMA_GID_IPV4=$ip4 "$@" \
        timeout 300 "$DPTEST" --tap -p "/x86_64/virtio-rdma-dp/ibverbs/$path" \
        > "/out/$name.tap" 2> "/out/$name.err"
    line=$(grep -a -o "$tag.*" "/out/$name.tap" | head -1 | cut -d' ' -f2-)
    if grep -q '^ok' "/out/$name.tap"; then
        echo "PASS $name $line" >> $out
    else
        echo "FAIL $name $line $(grep -a ERROR "/out/$name.err" | tail -1 | cut -c1-200)" >> $out
    fi
}
# A full queue of UD sends held behind an address nobody answers, then
# system_reset: QMP answers within 2 s (the reset orphans the host's
# resolution; the QP in ERR flushes the rest without asking the host).
want held-reset && dp_case held-reset held-reset IBV-HELD-RESET \
    QVRDMA_UNREACHABLE_IPV4=10.79.0.99
# 64 GET_DMA_MRs of one PD in one kick: one registration of guest RAM (256
# MiB), off the main loop, charged to max-mapped-pages.
# Unplugged while the host pins 1 GiB for a GET_DMA_MR and resolves a UD
# send's address: unplug does not wait; the host calls end on their own.
want unplug-jobs && dp_case unplug-jobs unplug-jobs IBV-UNPLUG-JOBS \
    QVRDMA_UNREACHABLE_IPV4=10.79.0.99 QVRDMA_RAM_MB=1024
want unplug-jobs-iothread && dp_case unplug-jobs-iothread unplug-jobs IBV-UNPLUG-JOBS \
    QVRDMA_UNREACHABLE_IPV4=10.79.0.99 QVRDMA_RAM_MB=1024 QVRDMA_IOTHREAD=1
want dma-mr-kick && dp_case dma-mr-kick dma-mr-kick IBV-DMA-MR-KICK QVRDMA_RAM_MB=256
# A reset while the host pins RAM for a GET_DMA_MR: not waited for; the
# next GET_DMA_MR waits for the orphaned registration, then works.
want dma-mr-reset && dp_case dma-mr-reset dma-mr-reset IBV-DMA-MR-RESET QVRDMA_RAM_MB=256

# Registration time of a 1 GiB MR (a measurement: the figures in the line),
# with guest RAM untouched (the pin faults it in) and allocated at start.
for pre in 0 1; do
    name=reg-time-1g$([ $pre = 1 ] && echo -prealloc)
    want $name || continue
    QTEST_QEMU_BINARY=$QEMU QVRDMA_IBDEV=rxe0 QVRDMA_RAM_MB=1280 QVRDMA_REG_MB=1024 \
        QVRDMA_RAM_PREALLOC=$pre timeout 600 "$DPTEST" --tap \
        -p /x86_64/virtio-rdma-dp/ibverbs/reg-time > /out/reg$pre.tap 2> /out/reg$pre.err
    if grep -q '^ok' /out/reg$pre.tap; then
        echo "PASS $name $(grep -a IBV-REG-TIME /out/reg$pre.tap | cut -d' ' -f2-) (TCG guest, nested)" >> $out
    else
        echo "FAIL $name $(grep -a ERROR /out/reg$pre.err | tail -1 | cut -c1-200)" >> $out
    fi
done

# The GSI QP through contrib/rdmacm-mux: two devices, each with an address
# of eth0 of its own (a second one is added), CM MADs both ways, the mux
# restarted in between.  The mux needs the kernel's CM unloaded.
sock=/run/rdmacm-mux.sock
start_mux() {
    "$MUX" --ibdev rxe0 --socket $sock -v >> /out/mux.log 2>&1 &
    echo $! > /run/mux.pid
    i=0
    while [ ! -S $sock ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    [ -S $sock ]
}
ip4b=10.79.0.21
# Two tenants on rxe0: A allowed $ip4, B allowed $ip4b (both on eth0).
if want tenants; then
    ip addr add $ip4b/24 dev eth0
    if ! wait_gid $ip4b; then
        echo "FAIL tenants $ip4b did not reach rxe0's GID table" >> $out
    else
        QTEST_QEMU_BINARY=$QEMU QVRDMA_IBDEV=rxe0 QVRDMA_GID_IPV4=$ip4 QVRDMA_GID_IPV4_B=$ip4b \
            timeout 300 "$DPTEST" --tap -p /x86_64/virtio-rdma-dp/ibverbs/tenants \
            > /out/tenants.tap 2> /out/tenants.err
        trc=$?
        if grep -q '^ok' /out/tenants.tap; then
            echo "PASS tenants A and B each refused the other's address (EPERM), RC between their own; without allowed-gids both refused, 192.0.2.77 taken" >> $out
        else
            echo "FAIL tenants exit $trc: $(grep -a 'ERROR' /out/tenants.err | tail -1 | cut -c1-240)" >> $out
        fi
    fi
    ip addr del $ip4b/24 dev eth0
fi
if want gsi-mux; then
    ip addr add $ip4b/24 dev eth0
    rmmod nvme_rdma nvmet_rdma rdma_ucm rdma_cm iw_cm ib_cm 2>> /out/rmmod.txt
fi
if ! want gsi-mux; then
    :
elif [ ! -x "$MUX" ]; then
    echo "FAIL gsi-mux no rdmacm-mux binary (ninja -C build/unit)" >> $out
elif ! start_mux; then
    echo "FAIL gsi-mux the mux did not start: $(tr '\n' ' ' < /out/mux.log | cut -c1-300)" >> $out
else
    # What the test runs to restart the mux (SIGTERM removes the socket).
    { echo '#!/bin/sh'
      echo 'kill $(cat /run/mux.pid); while [ -S '$sock' ]; do sleep 0.1; done'
      echo '"'$MUX'" --ibdev rxe0 --socket '$sock' -v >> /out/mux.log 2>&1 &'
      echo 'echo $! > /run/mux.pid'
    } > /run/restart-mux.sh
    chmod +x /run/restart-mux.sh
    QTEST_QEMU_BINARY=$QEMU QVRDMA_IBDEV=rxe0 QVRDMA_GID_IPV4=$ip4 QVRDMA_GID_IPV4_B=$ip4b \
        QVRDMA_ALLOWED_GIDS="$ip4;$ip4b" QVRDMA_MAD_SOCKET=$sock QVRDMA_MAD_RESTART=/run/restart-mux.sh \
        timeout 300 "$DPTEST" --tap -p /x86_64/virtio-rdma-dp/ibverbs/gsi-mux \
        > /out/gsi.tap 2> /out/gsi.err
    grc=$?
    if grep -q '^ok' /out/gsi.tap; then
        echo "PASS gsi-mux CM MADs both ways between two devices' GSI QPs through rdmacm-mux on rxe0, byte-exact, again after the mux restarted" >> $out
    else
        echo "FAIL gsi-mux exit $grc: $(grep -a 'ERROR' /out/gsi.err | tail -1 | cut -c1-240)" >> $out
    fi
    kill "$(cat /run/mux.pid)" 2>/dev/null
fi
want gsi-mux && ip addr del $ip4b/24 dev eth0

# Last and alone: the host port's events (eth0 down and up again).
if want port-events; then
    QTEST_QEMU_BINARY=$QEMU QVRDMA_IBDEV=rxe0 QVRDMA_IBDEV_NETDEV=eth0 \
        timeout 120 "$DPTEST" --tap -p /x86_64/virtio-rdma-dp/ibverbs/port-events \
        > /out/port.tap 2> /out/port.err
    prc=$?
    grep -q '^ok' /out/port.tap && echo "PASS port-events QUERY_PORT DOWN after eth0 down, ACTIVE after up" >> $out ||
        echo "FAIL port-events exit $prc: $(grep -a ERROR /out/port.err | tail -1 | cut -c1-200)" >> $out
fi
# An assertion ends the binary: the case after the last reported one failed.
if [ -n "$LAB_IBV_DP" ] && [ $rc = 0 ]; then
    want dp/exit && echo "PASS dp/exit virtio-rdma-dp-test exit 0 after $(grep -c '^ok\|^not ok' /out/dp.tap) cases" >> $out
elif [ $rc != 0 ]; then
    echo "FAIL dp/exit virtio-rdma-dp-test exit $rc after $(grep -c '^ok\|^not ok' /out/dp.tap) cases: $(grep -a 'ERROR' /out/dp.err | tail -1 | cut -c1-200)$([ $rc = 124 ] && echo " (hung: stacks in dp.hang)")" >> $out
fi
