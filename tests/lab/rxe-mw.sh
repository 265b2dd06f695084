# rxe-mw: what a lab guest's kernel rxe does with memory windows -- the
# host objects fast registration (REG_MR, LOCAL_INV, remote invalidation)
# would need on backend=ibverbs, and the reason the device refuses it there
# (docs/system/devices/virtio-rdma.rst).  Not one of the CI's parts: it
# tests the guest kernel, not our code; run it when that kernel changes
# (tests/lab/run.sh rxe-mw, and LAB_KERNEL=6.12).  PASS means rxe still
# behaves as the docs say; a FAIL of double-* means the kernel no longer
# oopses, and fast registration may be worth building.
# Three guests, one vCPU each, side by side: the probe's facts, and a
# window invalidated twice locally and remotely (the second oopses the
# guest, so each runs alone).
# Sourced; lab_rxe_mw RESULTDIR.  Per case "PASS|FAIL rxe-mw/CASE ...".
# shellcheck shell=bash

lab_rxe_mw() {
    local dir=$1 mode pa pb ip=11 pids=() probe=$LAB/bin/rxe-mw-probe
    mkdir -p "$dir" "$LAB/bin"
    # A binary of its own in build/lab (its 9p view): the guests' userland is the host's.
    if ! gcc -O2 -Wall -Wextra -Werror -o "$probe" "$top/tests/lab/rxe-mw/probe.c" -libverbs \
            > "$dir/build.log" 2>&1; then
        lab_result FAIL rxe-mw/build "see $dir/build.log (needs libibverbs-dev)"
        return
    fi
    for mode in facts double-local double-remote; do
        mkdir -p "$dir/$mode"
        echo "PROBE=$probe" > "$dir/$mode/env"
        echo "$mode" > "$dir/$mode/mode"
        pa=$(lab_free_port udp); pb=$(lab_free_port udp)
        lab_guest_start "$dir/$mode" 300 "lab.ip=10.79.3.$ip/24 lab.run=/lab/rxe-mw/guest.sh" \
            "$(lab_dgram "$pa" "$pb")" "52:54:00:79:03:$ip"
        pids+=("$LAB_PID")
        ip=$((ip + 1))
    done
    wait "${pids[@]}"
    lab_guest_results rxe-mw "$dir/facts"
    for mode in double-local double-remote; do
        lab_rxe_mw_oops "$mode" "$dir/$mode"
    done
}

# lab_rxe_mw_oops MODE DIR: PASS when the second invalidation oopsed the
# guest's kernel in rxe_invalidate_mw (the first one having worked).
lab_rxe_mw_oops() {
    local mode=$1 dir=$2 first oops
    first=$(grep -m1 '^invalidation 1: ' "$dir/probe.log" 2>/dev/null)
    oops=$(grep -m1 'BUG: kernel NULL pointer dereference' "$dir/console.log" 2>/dev/null)
    if grep -q '^survived' "$dir/probe.log" 2>/dev/null; then
        lab_result FAIL "rxe-mw/$mode" "no oops: $(tr '\n' ' ' < "$dir/probe.log" | cut -c1-200)"
    elif [ "$first" = "invalidation 1: status 0 (success)" ] && [ -n "$oops" ] &&
         grep -q 'rxe_invalidate_mw' "$dir/console.log" &&
         [ "$(tail -n 1 "$dir/probe.log")" = "$(grep '^invalidation 2 of' "$dir/probe.log")" ]; then
        lab_result PASS "rxe-mw/$mode" "first: success; second: ${oops#*] } in rxe_invalidate_mw ($(grep -m1 -o 'RIP: [^ ]* [^ ]*' "$dir/console.log"))"
    else
        lab_result FAIL "rxe-mw/$mode" "unexpected: $(tr '\n' ' ' < "$dir/probe.log" 2>/dev/null | cut -c1-200) (console: $dir/console.log)"
    fi
}
