# NVMe over RDMA: an nvmet-rdma target (tests/lab/nvme/target.sh) in guest A
# and an nvme-rdma host (tests/lab/nvme/host.sh: nvme-cli and fio) in guest
# B, in three pairings: host and target on virtio-rdma (hv-tv), host on
# virtio-rdma with the target on kernel rxe (hv-tr), the reverse (hr-tv).
# The host writes random data, drops its caches and reads it back byte-exact,
# runs fio with crc32c verification (libaio and polled I/O; the controller
# has a read, a write and a poll queue), disconnects and reconnects (the
# data is still there).  In hv-tv the target's QEMU is then
# killed twice under writes: once a new target comes up at the same address
# and the host must reconnect with no I/O error (kill-recover), once for good
# and the I/O must fail after the controller-loss timeout (kill-giveup); a
# hung guest fails the pair by its timeout.  On virtio-rdma guests the
# device's object counts after the host's disconnect (and after the
# controller given up on) are back where they were before its connect, and
# QEMU reports no error.
# Sourced; lab_nvme RESULTDIR.
#   LAB_NV_ONLY   regex on the pair names (e.g. 'hv-tv')
#   LAB_NV_TMO    seconds a pair may take (default 600)
# shellcheck shell=bash
LAB_NV_TMO=${LAB_NV_TMO:-600}
# LAB_QUICK: every pairing (scripts/test.sh's kernel matrix takes one a
# kernel).
LAB_QUICK_NVME='^(hv-tv|hv-tr|hr-tv)$'

lab_nvme() {
    local dir=$1 t0 p
    LAB_DRV_KO=${LAB_DRV_KO:-$top/build/guest/$LAB_KVER/virtio_rdma.ko}
    LAB_DRV_PROV=${LAB_DRV_PROV:-$top/build/guest/rdma-core}
    [ -f "$LAB_DRV_KO" ] || { lab_result FAIL nvme/module "no $LAB_DRV_KO (scripts/build-guest.sh)"; return; }
    for p in "hv-tv vrdma vrdma 1" "hv-tr rxe vrdma 0" "hr-tv vrdma rxe 0"; do
        set -- $p
        [ -n "${LAB_NV_ONLY:-}" ] && ! [[ $1 =~ $LAB_NV_ONLY ]] && continue
        lab_quick_skip "$LAB_QUICK_NVME" "$1" && continue
        t0=$(date +%s)
        lab_nv_pair "$dir/$1" "$2" "$3" "$4"
        echo "lab: nvme/$1 took $(( $(date +%s) - t0 )) s"
    done
}

# lab_nv_guest OUT KIND IP MAC NETDEV JOB: boots one guest of a pair (its
# job's environment in OUT/job.env beforehand); sets LAB_PID, LAB_QMP.
lab_nv_guest() {
    local out=$1 kind=$2 ip=$3 mac=$4 nd=$5 job=$6 vr=0
    [ "$kind" = vrdma ] && vr=1
    LAB_VRDMA=$vr lab_guest_start "$out" "$LAB_NV_TMO" \
        "lab.ip=$ip/24 lab.rdma=$kind lab.ko=$LAB_DRV_KO lab.prov=$LAB_DRV_PROV lab.run=/lab/nvme/$job" "$nd" "$mac"
}

# lab_nv_objects QMP PREFIX: "info rdma" into PREFIX.{txt,json}; prints the
# object counts (empty when QMP did not answer).
lab_nv_objects() {
    timeout 30 python3 "$top/tests/lab/qmp.py" query "$1" "$2" 2> "$2.err" &&
        python3 "$top/tests/lab/qmp.py" objects "$2.json"
}

# lab_nv_pair DIR TARGET-KIND HOST-KIND KILL
lab_nv_pair() {
    local dir=$1 kt=$2 kh=$3 kill=$4 pair=${1##*/}
    local ipa=10.77.0.31 ipb=10.77.0.32 maca=52:54:00:77:00:31 macb=52:54:00:77:00:32
    local pa pb ga gb qa qb rc f s st c u0 u1 a0="" a1="" b0="" b1="" bc="" bf="" kills=0 lives=A
    rm -rf "$dir"; mkdir -p "$dir/A" "$dir/B"
    pa=$(lab_free_port udp); pb=$(lab_free_port udp)
    u0=$(lab_udp_rcvbuf_errors)
    echo "NV_ADDR=$ipa" > "$dir/A/job.env"
    printf 'NV_ADDR=%s\nNV_KILL=%s\n' "$ipa" "$kill" > "$dir/B/job.env"
    lab_nv_guest "$dir/A" "$kt" $ipa $maca "$(lab_dgram "$pa" "$pb")" target.sh; ga=$LAB_PID qa=$LAB_QMP
    lab_nv_guest "$dir/B" "$kh" $ipb $macb "$(lab_dgram "$pb" "$pa")" host.sh; gb=$LAB_PID qb=$LAB_QMP
    # Until B's job ends: answer its stages.
    while kill -0 "$gb" 2>/dev/null; do
        for s in before connected after kill-recover kill-giveup final; do
            f=$dir/B/stage.$s
            [ -f "$f" ] && [ ! -e "$f.ok" ] || continue
            case $s in
            before)
                [ -n "$qb" ] && b0=$(lab_nv_objects "$qb" "$dir/B/info-before")
                [ -n "$qa" ] && a0=$(lab_nv_objects "$qa" "$dir/A/info-before") &&
                    cp "$dir/A/res.txt" "$dir/A/res-before.txt" 2>/dev/null ;;
            connected)
                [ -n "$qb" ] && bc=$(lab_nv_objects "$qb" "$dir/B/info-connected") ;;
            final)
                [ -n "$qb" ] && bf=$(lab_nv_objects "$qb" "$dir/B/info-final") ;;
            after)
                [ -n "$qb" ] && b1=$(lab_nv_objects "$qb" "$dir/B/info-after")
                # The target frees a queue's objects after the host has gone.
                if [ -n "$qa" ]; then
                    for _ in $(seq 20); do
                        cp "$dir/A/res.txt" "$dir/A/res-after.txt" 2>/dev/null
                        a1=$(lab_nv_objects "$qa" "$dir/A/info-after")
                        [ "$(lab_nv_cmp "$a0" "$a1" "$dir/A/res-after.txt")" = same ] && break
                        sleep 0.5
                    done
                fi ;;
            kill-recover|kill-giveup)
                # LAB_PID is timeout(1)'s; QEMU is its child.
                pkill -KILL -P "$ga"; wait "$ga" 2>/dev/null; kills=$((kills + 1))
                echo "lab: nvme/$pair: killed target QEMU $lives at B's $(cat "$f") s"
                if [ $s = kill-recover ]; then
                    lives=A$((kills + 1))
                    mkdir -p "$dir/$lives"; cp "$dir/A/job.env" "$dir/$lives/"
                    lab_nv_guest "$dir/$lives" "$kt" $ipa $maca "$(lab_dgram "$pa" "$pb")" target.sh; ga=$LAB_PID
                fi ;;
            esac
            : > "$f.ok"
        done
        sleep 0.3
    done
    wait "$gb"; rc=$?
    : > "$dir/$lives/stop"
    wait "$ga" 2>/dev/null
    u1=$(lab_udp_rcvbuf_errors)

    # The target's set-up, then the host's steps.
    if [ -f "$dir/A/target.ready" ]; then
        lab_result PASS "nvme/$pair/target" "nvmet-rdma on $(cat "$dir/A/target.ready") at $ipa:4420"
    else
        lab_result FAIL "nvme/$pair/target" "$(cat "$dir/A/target.failed" 2>/dev/null || echo "no target.ready") (see $dir/A/job.log)"
    fi
    st="discover connect write-read fio-verify disconnect reconnect"
    [ "$kill" = 1 ] && st="$st kill-recover kill-recover-data kill-giveup"
    for s in $st; do
        f=$(grep -m1 -E "^(PASS|FAIL) $s " "$dir/B/results" 2>/dev/null)
        if [ -n "$f" ]; then
            lab_result "${f%% *}" "nvme/$pair/$s" "$(cut -d' ' -f3- <<< "$f")"
        else
            lab_result FAIL "nvme/$pair/$s" "not reached (guest rc=$rc; $(tail -n 1 "$dir/B/results" 2>/dev/null))"
        fi
    done
    # No hung guest: B's job ran to its end, inside the pair's time limit.
    if [ "$rc" = 0 ] && grep -q "^PASS finished " "$dir/B/results"; then
        lab_result PASS "nvme/$pair/no-hang" "host guest powered off after its last step ($kills target QEMU(s) killed; the host dropped $((u1 - u0)) datagrams of full receive buffers in the pair)"
    else
        lab_result FAIL "nvme/$pair/no-hang" "host guest rc=$rc ($([ "$rc" = 124 ] && echo "timed out after $LAB_NV_TMO s" || echo "job did not finish"))"
    fi
    # The devices: objects back where they were, traffic, no error, no QEMU error.
    [ "$kh" = vrdma ] && lab_nv_device "nvme/$pair/B-device" "$dir/B" "$b0" "$bc" "$b1"
    # After the controller the host gave up on: everything freed as well.
    if [ "$kh" = vrdma ] && [ "$kill" = 1 ]; then
        c=$(lab_nv_cmp "$b0" "$bf" "$dir/B/res-final.txt")
        if [ "$c" = same ]; then
            lab_result PASS "nvme/$pair/B-device-giveup" "after the deleted controller [$bf] (kernel: $(grep -o 'pd.*' "$dir/B/res-final.txt"))"
        else
            lab_result FAIL "nvme/$pair/B-device-giveup" "${bf:-no info rdma}: $c"
        fi
    fi
    [ "$kt" = vrdma ] && lab_nv_device "nvme/$pair/A-device" "$dir/A" "$a0" "" "$a1"
    lab_drv_kernel_check "nvme/$pair/B-kernel" "$dir/B"
    [ "$kill" = 1 ] || lab_drv_kernel_check "nvme/$pair/A-kernel" "$dir/A"
}

# lab_nv_cmp BEFORE AFTER RES: "same" when the device's object counts AFTER
# the host's last disconnect equal those BEFORE its first connect, but for
# CQs: nvme-rdma and nvmet-rdma take theirs from the RDMA core's CQ pool
# (ib_cq_pool_get), which keeps them until the device goes.  So the CQs
# after must be as many as the kernel's resource tracker counts (RES: "rdma
# resource show" then), no more.  Otherwise what differs.
lab_nv_cmp() {
    local b=${1/ cq=[0-9]*/} a=${2/ cq=[0-9]*/} cq kcq
    cq=$(sed -n 's/.* cq=\([0-9]*\).*/\1/p' <<< "$2")
    kcq=$(sed -n 's/.* cq \([0-9]*\) .*/\1/p' "$3" 2>/dev/null)
    if [ "$b" != "$a" ]; then echo "objects before [$1] after [$2]"
    elif [ -z "$kcq" ] || [ "$cq" != "$kcq" ]; then echo "device cq=$cq, kernel's resource tracker: ${kcq:-no answer}"
    else echo same; fi
}

# lab_nv_device NAME DIR BEFORE CONNECTED AFTER: lab_nv_cmp says "same"
# (the target's, once it has freed the queues), a connected host holds more
# QPs (admin + I/O queues) and traffic moved.  (Error completions are
# printed, not judged: a disconnect flushes the receives each queue had
# posted.)
lab_nv_device() {
    local name=$1 d=$2 b0=$3 bc=$4 b1=$5 res=PASS why="" tr c
    [ -n "$b0" ] && [ -n "$b1" ] || { lab_result FAIL "$name" "no info rdma before [$b0] / after [$b1] ($(cat "$d"/info-*.err 2>/dev/null | head -c 200))"; return; }
    tr=$(python3 "$top/tests/lab/qmp.py" traffic "$d/info-after.json")
    c=$(lab_nv_cmp "$b0" "$b1" "$d/res-after.txt")
    [ "$c" = same ] || { res=FAIL; why="$why $c;"; }
    if [ -n "$bc" ] && ! [ "$(lab_drv_qps "$bc")" -gt "$(lab_drv_qps "$b0")" ]; then
        res=FAIL; why="$why connected [$bc] holds no more QPs than before;"
    fi
    [[ $tr =~ tx=[1-9].*rx=[1-9] ]] || { res=FAIL; why="$why no traffic;"; }
    [ -s "$d/qemu.log" ] && { res=FAIL; why="$why QEMU: $(head -n 1 "$d/qemu.log");"; }
    lab_result "$res" "$name" "before [$b0]${bc:+ connected [$bc]} after [$b1] (kernel: $(grep -o 'pd.*' "$d/res-after.txt" 2>/dev/null)) $tr${why:+ |$why}"
}
