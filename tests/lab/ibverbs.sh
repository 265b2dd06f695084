# ibverbs: our QEMU's device with backend=ibverbs on a lab guest's kernel rxe
# (the host here has no RDMA stack; a lab guest does).  One guest, rxe0 on
# eth0, runs our qemu-system-x86_64 nested, under -accel qtest (no guest CPU
# to emulate), and checks what realize finds on a real host RDMA device:
# the device and port, the refusals that name what the host has; then the
# data-path qtests (virtio-rdma-dp-test, libqos) on that device: two QPs of
# one device through rxe0, byte-exact (LAB_IBV_DP: the test paths); the GSI
# QP of two devices through contrib/rdmacm-mux, which is restarted midway.
# Sourced; lab_ibverbs RESULTDIR.  Per case "PASS|FAIL ibverbs/CASE ...".
# shellcheck shell=bash
# The data-path cases that do not look at the soft engine's own wire (the
# "wire" ones run two devices on the one rxe0; frames are rxe's business).
# Left out, each for a reason of its own:
#   wire/connect, wire/not-ours-first   the soft engine's wire and filter;
#   cq-arm/solicited                    ibv_wc has no solicited bit: every
#                                       receive may wake a SOLICITED arm;
#   cq-arm/answered-after-earlier-cqes  the host flushes a QP in ERR on its
#                                       own time: the flushed CQE may come
#                                       after the arm's answer (it then
#                                       signals the arm: nothing is missed);
#   qp/destroy-discards-pending         the device's virtqueues, the same
#                                       code for both (and its hand-made
#                                       CREATE_QP has no wire QPN room).
LAB_IBV_DP_CASES="/x86_64/virtio-rdma-dp/loopback /x86_64/virtio-rdma-dp/wire-qpn/loopback"
LAB_IBV_DP_CASES="$LAB_IBV_DP_CASES /x86_64/virtio-rdma-dp/cq-arm/next /x86_64/virtio-rdma-dp/event-queue"
for c in rc-send rc-write rc-write-imm rc-read rc-cas rc-faa rc-pipeline \
         ud-send-ipv4 ud-send-ipv6 peer-gone; do
    LAB_IBV_DP_CASES="$LAB_IBV_DP_CASES /x86_64/virtio-rdma-dp/wire/$c"
done
LAB_IBV_DP_CASES="$LAB_IBV_DP_CASES /x86_64/virtio-rdma-dp/wire-qpn/wire"
LAB_IBV_DP_CASES="$LAB_IBV_DP_CASES /x86_64/virtio-rdma-dp/dma-sge/loopback /x86_64/virtio-rdma-dp/dma-sge/wire"
# LAB_QUICK=1: one case of each kind of the list above, no registration-time
# measurement, and of the interop half (below) LAB_QUICK_IBVERBS_IO.
# The list above takes about 8 minutes in a 2-vCPU TCG guest (AMD EPYC).
LAB_IBV_DP_QUICK="/x86_64/virtio-rdma-dp/loopback/rc-send /x86_64/virtio-rdma-dp/cq-arm/next"
for c in wire/rc-read wire/rc-cas wire/ud-send-ipv6 wire-qpn/wire/ud-send-ipv4 dma-sge/wire/rc-send; do
    LAB_IBV_DP_QUICK="$LAB_IBV_DP_QUICK /x86_64/virtio-rdma-dp/$c"
done

# The GSI QP's cases run against contrib/rdmacm-mux (the mux part's build),
# a snapshot the guests see over 9p as $LAB/bin/rdmacm-mux.
lab_ibverbs_mux_bin() {
    local mux=${LAB_MUX:-$top/build/unit/contrib/rdmacm-mux/rdmacm-mux}
    mkdir -p "$LAB/bin"
    rm -f "$LAB/bin/rdmacm-mux"
    if [ -x "$mux" ]; then
        ln "$mux" "$LAB/bin/" 2>/dev/null || cp "$mux" "$LAB/bin/"
    fi
}

lab_ibverbs_device() {
    local dir=$1 pa pb line
    mkdir -p "$dir"
    # The job's settings: the nested QEMU and the data-path qtest are ours,
    # reached over 9p.
    mkdir -p "$LAB/bin"
    rm -f "$LAB/bin/virtio-rdma-dp-test"
    ln "$top/build/qemu/tests/qtest/virtio-rdma-dp-test" "$LAB/bin/" 2>/dev/null ||
        cp "$top/build/qemu/tests/qtest/virtio-rdma-dp-test" "$LAB/bin/"
    lab_ibverbs_mux_bin
    { echo "QEMU=$QEMU"; echo "DPTEST=$LAB/bin/virtio-rdma-dp-test"
      echo "MUX=$LAB/bin/rdmacm-mux"
      if [ "${LAB_QUICK:-0}" = 1 ]; then
          echo "LAB_IBV_DP=\"${LAB_IBV_DP:-$LAB_IBV_DP_QUICK}\""; echo "NO_REG_TIME=1"
      else
          echo "LAB_IBV_DP=\"${LAB_IBV_DP:-$LAB_IBV_DP_CASES}\""
      fi
    } > "$dir/env"
    pa=$(lab_free_port udp); pb=$(lab_free_port udp)
    # 2 GiB: a 1 GiB MR is registered (pinned) in the nested QEMU.  Two
    # vCPUs: the guest runs alone, and the test and its two QEMUs then run
    # side by side (the data-path list: 490 s instead of about 750 s).
    LAB_MEM=2048 LAB_SMP=2 lab_guest_start "$dir" 1500 "lab.ip=10.79.0.11/24 lab.ip6=fd79::11/64 lab.run=/lab/ibverbs/guest.sh" \
        "$(lab_dgram "$pa" "$pb")" 52:54:00:79:00:11
    wait "$LAB_PID"
    lab_guest_results ibverbs "$dir"
}

# LAB_IBV_IO_ONLY (below) skips the device half, LAB_IBV_DEVICE_ONLY=1 the
# interop half.
lab_ibverbs() {
    [ -n "${LAB_IBV_IO_ONLY:-}" ] || lab_ibverbs_device "$1"
    [ -n "${LAB_IBV_DEVICE_ONLY:-}" ] || lab_ibverbs_interop "$1/io"
}

# The interop half: the tools (ibv_*_pingpong, perftest) in guest B on its
# rxe0 against our device in guest A, backend=ibverbs on A's rxe0, driven by
# virtio-rdma-lab-peer (nested, under -accel qtest); A and B joined by
# -netdev dgram, the tools' TCP exchanges on the same link.  Every tool with
# our device as server (gcli: the tool is the client) and as client (gsrv).
# LAB_IBV_IO_ONLY: a regex on the case names.
# LAB_QUICK: RC SEND both ways and rping with our device as the passive side.
LAB_QUICK_IBVERBS_IO='^v4-rc_pingpong-g(srv|cli)$|^v4-rping-gcli$'
lab_ibverbs_interop() {
    local dir=$1 peer pa pb tool gr fam name args ga gb
    local a_ip=10.79.1.11 b_ip=10.79.1.12 b_mac=52:54:00:79:01:12
    local -a names=()
    # A port of its own per case: a side that gave up early then cannot
    # meet the other side's previous case on the next one.
    local port=18600
    lab_ibverbs_mux_bin
    peer=$(bash "$top/tests/lab/build-peer.sh") ||
        { lab_result FAIL ibverbs/io-build-peer "see $LAB/build-peer.log"; return; }
    mkdir -p "$dir/A" "$dir/B"
    rm -f "$LAB/bin/virtio-rdma-lab-peer"
    ln "$peer" "$LAB/bin/" 2>/dev/null || cp "$peer" "$LAB/bin/"
    { echo "QEMU=$QEMU"; echo "PEER=$LAB/bin/virtio-rdma-lab-peer"; } > "$dir/A/env"
    : > "$dir/A/cases"; : > "$dir/B/cases"
    for fam in 4 6; do
        for tool in $LAB_TOOL_CASES; do
            # IPv6: the two that cover RC SEND and WRITE; IPv4: every tool.
            [ $fam = 6 ] && [ "$tool" != rc_pingpong ] && [ "$tool" != write_bw ] && continue
            for gr in gsrv gcli; do
                name=v$fam-$tool-$gr
                [ -n "${LAB_IBV_IO_ONLY:-}" ] && ! [[ $name =~ $LAB_IBV_IO_ONLY ]] && continue
                lab_quick_skip "$LAB_QUICK_IBVERBS_IO" "$name" && continue
                args=$(lab_tool_args "$tool"); args=${args//@G@/@G$fam@}
                local pargs="--tool $tool --lport 1 --rport 2 --mac 52:54:00:79:01:02 --peer-mac $b_mac --ip4 $a_ip --ip6 fd79:1::11 --gid $fam"
                port=$((port + 1))
                if [ $gr = gsrv ]; then
                    echo "srv $name 150 ${args//@P@/$port}" >> "$dir/B/cases"
                    echo "cli $name 170 $LAB/bin/virtio-rdma-lab-peer --role client $pargs --port $port --tcp $b_ip" >> "$dir/A/cases"
                else
                    echo "cli $name 150 ${args//@P@/$port} $a_ip" >> "$dir/B/cases"
                    echo "srv $name 170 $LAB/bin/virtio-rdma-lab-peer --role server $pargs --port $port --tcp $b_ip" >> "$dir/A/cases"
                fi
                names+=("$name")
            done
        done
    done
    # RDMA-CM: rping in B, our device the other end, its CM MADs through
    # its GSI QP and the rdmacm-mux A runs (peer-cases.sh): rping -s in B
    # and our device the client (gsrv), then rping -c in B and our device
    # the server (gcli: the passive side of the CM).
    for gr in gsrv gcli; do
        name=v4-rping-$gr
        [ -n "${LAB_IBV_IO_ONLY:-}" ] && ! [[ $name =~ $LAB_IBV_IO_ONLY ]] && continue
        lab_quick_skip "$LAB_QUICK_IBVERBS_IO" "$name" && continue
        port=$((port + 1))
        local pargs="--tool rping --lport 1 --rport 2 --mac 52:54:00:79:01:02 --peer-mac $b_mac --ip4 $a_ip --ip6 fd79:1::11 --gid 4 --port $port --iters 50 --size 4096"
        if [ $gr = gsrv ]; then
            args=$(lab_tool_args rping)
            echo "srv $name 150 ${args//@P@/$port} $b_ip" >> "$dir/B/cases"
            echo "cli $name 170 $LAB/bin/virtio-rdma-lab-peer --role client $pargs --tcp $b_ip" >> "$dir/A/cases"
        else
            args=$(lab_tool_args rping cli)
            echo "cli $name 150 ${args//@P@/$port} $a_ip" >> "$dir/B/cases"
            echo "srv $name 170 $LAB/bin/virtio-rdma-lab-peer --role server $pargs" >> "$dir/A/cases"
        fi
        names+=("$name")
    done
    { echo "MUX=$LAB/bin/rdmacm-mux"; } >> "$dir/A/env"
    pa=$(lab_free_port udp); pb=$(lab_free_port udp)
    LAB_MEM=1024 lab_guest_start "$dir/A" 1500 "lab.ip=$a_ip/24 lab.ip6=fd79:1::11/64 lab.run=/lab/ibverbs/peer-cases.sh" \
        "$(lab_dgram "$pa" "$pb")" 52:54:00:79:01:11
    ga=$LAB_PID
    lab_guest_start "$dir/B" 1500 "lab.ip=$b_ip/24 lab.ip6=fd79:1::12/64 lab.run=/lab/guest-cases.sh" \
        "$(lab_dgram "$pb" "$pa")" "$b_mac"
    gb=$LAB_PID
    wait "$ga"; wait "$gb"
    for name in "${names[@]}"; do
        local rg rp res=PASS fig why=""
        rg=$(cat "$dir/B/$name.rc" 2>/dev/null || echo none)
        rp=$(cat "$dir/A/$name.rc" 2>/dev/null || echo none)
        [ "$rg" = 0 ] || { res=FAIL; why="$why tools-rc=$rg"; }
        [ "$rp" = 0 ] || { res=FAIL; why="$why device-rc=$rp"; }
        grep -q "PEER: FAIL" "$dir/A/$name.out" 2>/dev/null &&
            why="$why $(grep -m1 'PEER: FAIL' "$dir/A/$name.out" | sed 's/.*PEER: //')"
        case $name in
        *rping*) fig=$(grep -o 'rping: [0-9]* pings \(verified\|served\)' "$dir/A/$name.out" 2>/dev/null) ;;
        *-gsrv) fig=$(lab_figures "$dir/A/$name.out") ;;
        *) fig=$(lab_figures "$dir/B/$name.out") ;;
        esac
        lab_result "$res" "ibverbs/io-$name" "$fig${why:+ |$why}"
    done
}
