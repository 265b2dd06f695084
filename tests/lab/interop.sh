# Interop: one guest (kernel rxe) against our device.  The device runs in a
# QEMU driven by virtio-rdma-lab-peer (qtest + libqos), its paired NIC joined
# to the guest's eth0 by -netdev dgram over 127.0.0.1; the tools' TCP
# exchanges go over the guest's second NIC (QEMU user network: the guest
# reaches the peer at 10.0.2.2, the peer reaches the guest's servers through
# a hostfwd on 127.0.0.1).  Our device answers no ARP/ND: the guest has
# permanent neighbour entries for it, and its eth0 sends RoCEv2 only.
# Every tool runs with the guest as server and as client, over IPv4-mapped
# and IPv6 GIDs; the IPv4 cases run our engine in QEMU's main loop, the IPv6
# ones in an iothread (iothread=, off the big lock).  One more case,
# v6-send_bw-gsrv-stall, stops the guest's QEMU (SIGSTOP) for
# LAB_IO_STALL_S seconds in the middle of our transfer to it: our requester
# must get through on its retransmit timer, as it must when a host
# deschedules a real peer.  That case moves LAB_IO_STALL_ITERS messages
# (about 2.5 s at TCG speed) so that the stall, which starts a moment after
# the QPs connect, lands inside the transfer even on a loaded machine: at
# 200 (0.5 s) a CI run once stopped the guest only after the last ACK.
# Sourced; lab_interop RESULTDIR.
# shellcheck shell=bash
LAB_IO_GUEST_MAC=52:54:00:77:00:21
LAB_IO_DEV_MAC=52:54:00:77:00:02
LAB_IO_CAPTURE=${LAB_IO_CAPTURE:-"v4-write_bw-gcli v6-rc_pingpong-gcli"}
# The device's trace points for frames it drops or passes on, in NAME.peer:
# a failed case then says where its frames went.  (libqtest puts
# QTEST_TRACE after -trace on QEMU's command line, through the shell.)
LAB_IO_TRACE='virtio_rdma_wire_drop -trace virtio_rdma_engine_r* -trace virtio_rdma_nic_*'
LAB_IO_STALL_S=${LAB_IO_STALL_S:-1.5}
# LAB_QUICK: every tool both ways over IPv4 (engine in the main loop), RC
# SEND and WRITE both ways over IPv6 (in an iothread), and the stall.
LAB_QUICK_INTEROP='^v4-|^v6-(rc_pingpong|write_bw)-g(srv|cli)$|-stall$'
LAB_IO_STALL_ITERS=${LAB_IO_STALL_ITERS:-1000}

lab_interop() {
    local dir=$1 G=$1/G peer fam tool gr name args hf pc gp pp cmd
    local -a names=()
    mkdir -p "$G"
    peer=$(bash "$top/tests/lab/build-peer.sh") || { lab_result FAIL interop/build-peer "see $LAB/build-peer.log"; return; }
    hf=$(lab_free_port tcp); pc=$(lab_free_port tcp)
    gp=$(lab_free_port udp); pp=$(lab_free_port udp)
    : > "$G/cases"
    for fam in 4 6; do
        for tool in $LAB_TOOL_CASES; do
            for gr in gsrv gcli; do
                name=v$fam-$tool-$gr
                [ -n "${LAB_IO_ONLY:-}" ] && ! [[ $name =~ $LAB_IO_ONLY ]] && continue
                lab_quick_skip "$LAB_QUICK_INTEROP" "$name" && continue
                args=$(lab_tool_args "$tool")
                args=${args//@G@/@G$fam@}
                if [ $gr = gsrv ]; then
                    cmd="${args//@P@/18515}"
                else
                    cmd="${args//@P@/$pc} 10.0.2.2"
                fi
                case " $LAB_IO_CAPTURE " in *" $name "*)
                    cmd="dumpcap -q -i eth0 -w /out/$name.pcapng & cp=\$!; sleep 3; $cmd; rc=\$?; sleep 2; kill \$cp; wait \$cp; exit \$rc" ;;
                esac
                echo "${gr#g} $name 150 $cmd" >> "$G/cases"
                names+=("$name")
            done
        done
    done
    name=v6-send_bw-gsrv-stall
    if { [ -z "${LAB_IO_ONLY:-}" ] || [[ $name =~ $LAB_IO_ONLY ]]; } && ! lab_quick_skip "$LAB_QUICK_INTEROP" "$name"; then
        args=$(lab_tool_args send_bw)
        args=${args//@G@/@G6@}; args=${args/-n 200/-n $LAB_IO_STALL_ITERS}
        echo "srv $name 150 ${args//@P@/18515}" >> "$G/cases"
        names+=("$name")
    fi
    lab_guest_start "$G" 1200 "lab.ip=10.77.0.21/24 lab.ip6=fd77::21/64 lab.user=1 lab.egress=roce lab.neigh=10.77.0.2@$LAB_IO_DEV_MAC,fd77::2@$LAB_IO_DEV_MAC lab.run=/lab/guest-cases.sh" \
        "$(lab_dgram "$gp" "$pp")" "$LAB_IO_GUEST_MAC" "user,net=10.0.2.0/24,host=10.0.2.2,hostfwd=tcp:127.0.0.1:$hf-:18515"
    local gpid=$LAB_PID
    for name in "${names[@]}"; do
        local base=${name%-stall} stall= iters=()
        fam=${base%%-*}; fam=${fam#v}; tool=${base#v?-}; tool=${tool%-*}; gr=${base##*-}
        local role=server port=$pc
        [ "$gr" = gsrv ] && { role=client; port=$hf; }
        lab_udp_rcvbuf_errors > "$dir/$name.udp0"
        if [ "$base" != "$name" ]; then
            lab_stall_guest "$gpid" "$dir/$name.peer" "$dir/$name.stall" &
            stall=$!
            iters=(--iters "$LAB_IO_STALL_ITERS")
        fi
        QVRDMA_IOTHREAD=$([ "$fam" = 6 ] && echo 1 || echo 0) \
        QTEST_TRACE=${QTEST_TRACE:-$LAB_IO_TRACE} \
        QTEST_QEMU_BINARY=$QEMU timeout -k 5 170 "$peer" --tool "$tool" --role "$role" --port "$port" \
            --lport "$pp" --rport "$gp" --mac "$LAB_IO_DEV_MAC" --peer-mac "$LAB_IO_GUEST_MAC" \
            --ip4 10.77.0.2 --ip6 fd77::2 --gid "$fam" "${iters[@]}" > "$dir/$name.peer" 2>&1
        echo $? > "$dir/$name.peer.rc"
        [ -n "$stall" ] && wait "$stall"
        # Stay in step with the guest: its side of this case must be over.
        local w=0
        while [ ! -f "$G/$name.rc" ] && [ $w -lt 340 ] && kill -0 "$gpid" 2>/dev/null; do sleep 0.5; w=$((w + 1)); done
        lab_udp_rcvbuf_errors > "$dir/$name.udp1"
    done
    wait "$gpid"
    for name in "${names[@]}"; do
        lab_judge_interop "$name" "$dir"
    done
    lab_icrc_check "$G"
    for name in $LAB_IO_CAPTURE; do
        [[ " ${names[*]} " == *" $name "* ]] || continue
        lab_capture_check "interop/capture-$name" "$G/$name.pcapng"
    done
}

# lab_stall_guest PID PEERLOG OUT: once the peer's log shows the guest's QP
# (the transfer starts next), stops the guest's QEMU -- the child of the
# timeout process PID -- for LAB_IO_STALL_S seconds, then lets it go on.
# What it did goes to OUT.
lab_stall_guest() {
    local i q
    for i in $(seq 1 1200); do
        grep -q 'guest: qpn' "$2" 2>/dev/null && break
        sleep 0.1
    done
    grep -q 'guest: qpn' "$2" 2>/dev/null || { echo "no transfer to stall" > "$3"; return; }
    q=$(pgrep -P "$1" | head -n 1)
    [ -n "$q" ] || { echo "no guest QEMU under pid $1" > "$3"; return; }
    sleep 0.2
    kill -STOP "$q" && echo "stopped the guest's QEMU (pid $q) for ${LAB_IO_STALL_S} s" > "$3"
    sleep "$LAB_IO_STALL_S"
    kill -CONT "$q"
}

# Datagrams the host's UDP sockets dropped for a full receive buffer (all
# sockets: the dgram links of the guest and of our device's QEMU among them).
lab_udp_rcvbuf_errors() {
    awk '/^Udp:/ { if (!h) { for (i = 2; i <= NF; i++) if ($i == "RcvbufErrors") c = i; h = 1 } else { print $c; exit } }' /proc/net/snmp
}

# A case passes when both sides exit 0 and the guest's rxe counted no
# sequence error -- on a clean wire.  When the host dropped datagrams of the
# dgram link during the case (a full socket receive buffer: the wire was
# lossy), sequence errors are rxe's correct recovery and are reported, not
# failed.  Figures: the client side's (the peer's for gsrv).
lab_judge_interop() {
    local name=$1 dir=$2 G=$2/G rg rp res=PASS fig cnt seq why="" drops
    rg=$(cat "$G/$name.rc" 2>/dev/null || echo none)
    rp=$(cat "$dir/$name.peer.rc" 2>/dev/null || echo none)
    [ "$rg" = 0 ] || { res=FAIL; why="$why guest-rc=$rg"; }
    [ "$rp" = 0 ] || { res=FAIL; why="$why peer-rc=$rp"; }
    seq=$(awk '$1 ~ /^(rcvd_seq_err|out_of_seq_request)$/ && $3 != $2 {printf "%s+%d ", $1, $3-$2}' "$G/$name.cnt" 2>/dev/null)
    drops=$(( $(cat "$dir/$name.udp1" 2>/dev/null || echo 0) - $(cat "$dir/$name.udp0" 2>/dev/null || echo 0) ))
    if [ -n "$seq" ] && [ "$drops" -gt 0 ]; then
        why="$why lossy wire (host dropped $drops datagrams): seq-errors:$seq recovered"
    elif [ -n "$seq" ]; then
        res=FAIL; why="$why seq-errors on a clean wire:$seq"
    fi
    grep -q "PEER: FAIL" "$dir/$name.peer" && why="$why $(grep -m1 'PEER: FAIL' "$dir/$name.peer" | sed 's/.*PEER: //')"
    if [ "${name%-stall}" != "$name" ]; then
        # The stall must have hit the transfer: our retransmit timer fired.
        local tmo
        tmo=$(grep -o 'timeouts [0-9]*' "$dir/$name.peer" | tail -n 1 | awk '{print $2}')
        why="$why $(cat "$dir/$name.stall" 2>/dev/null || echo 'no stall'); retry timeouts ${tmo:-none}"
        grep -q '^stopped' "$dir/$name.stall" 2>/dev/null && [ "${tmo:-0}" -gt 0 ] ||
            { res=FAIL; why="$why (the stall missed the transfer)"; }
    fi
    case $name in
    *-gsrv | *-gsrv-stall) fig=$(lab_figures "$dir/$name.peer") ;;
    *) fig=$(lab_figures "$G/$name.out") ;;
    esac
    cnt=$(awk '{printf "%s%s+%d", sep, $1, $3-$2; sep=","}' "$G/$name.cnt" 2>/dev/null)
    lab_result "$res" "interop/$name" "$fig rxe[${cnt}]${why:+ |$why}"
}

# rxe reports a bad ICRC only in the kernel log.
lab_icrc_check() {
    local n
    n=$(grep -ciE "icrc" "$1/dmesg.txt" 2>/dev/null); n=${n:-0}
    if [ -f "$1/dmesg.txt" ] && [ "$n" = 0 ]; then
        lab_result PASS interop/no-icrc-errors "guest kernel log: no ICRC complaint"
    else
        lab_result FAIL interop/no-icrc-errors "$n ICRC lines in $1/dmesg.txt (or no log)"
    fi
}

# Every RoCEv2 frame of the capture dissects without a malformed mark.  The
# expert errors are reported beside (IPv6: UDP checksum 0, which rxe sends
# too), with how many come from our device (source MAC) and from rxe.
lab_capture_check() {
    local name=$1 f=$2 total bad ops exp
    [ -s "$f" ] || { lab_result FAIL "$name" "no capture $f"; return; }
    total=$(timeout 120 tshark -r "$f" -Y "udp.dstport == 4791" 2>/dev/null | wc -l)
    bad=$(timeout 120 tshark -r "$f" -Y "udp.dstport == 4791 && _ws.malformed" 2>/dev/null | wc -l)
    ops=$(timeout 120 tshark -r "$f" -Y "udp.dstport == 4791" -T fields -e infiniband.bth.opcode 2>/dev/null | sort -n | uniq -c | awk '{printf "%sop%s:%s", sep, $2, $1; sep=","}')
    exp=$(timeout 120 tshark -r "$f" -Y "udp.dstport == 4791 && _ws.expert.severity >= 6291456" -T fields -e eth.src -e _ws.expert.message 2>/dev/null |
        awk -F'\t' -v dev="$LAB_IO_DEV_MAC" '{k=($1==dev?"device":"rxe") ": " $2; n[k]++} END {for (k in n) printf "%s%s x%d", (s++?"; ":""), k, n[k]}')
    timeout 120 tshark -r "$f" -Y "udp.dstport == 4791" -V > "${f%.pcapng}.dissect.txt" 2>&1
    if [ "$total" -gt 0 ] && [ "$bad" = 0 ]; then
        lab_result PASS "$name" "$total RoCEv2 frames, none malformed [$ops]${exp:+ expert: $exp}"
    else
        lab_result FAIL "$name" "$total RoCEv2 frames, $bad malformed [$ops]${exp:+ expert: $exp} (${f%.pcapng}.dissect.txt)"
    fi
}
