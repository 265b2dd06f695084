# ibverbs: our QEMU's device with backend=ibverbs on a lab guest's kernel rxe
# (the host here has no RDMA stack; a lab guest does).  One guest, rxe0 on
# eth0, runs our qemu-system-x86_64 nested, under -accel qtest (no guest CPU
# to emulate), and checks what realize finds on a real host RDMA device:
# the device and port, the refusals that name what the host has.
# Sourced; lab_ibverbs RESULTDIR.  Per case "PASS|FAIL ibverbs/CASE ...".
# shellcheck shell=bash
lab_ibverbs() {
    local dir=$1 pa pb line
    mkdir -p "$dir"
    # The job's settings: the nested QEMU is our binary, reached over 9p.
    echo "QEMU=$QEMU" > "$dir/env"
    pa=$(lab_free_port udp); pb=$(lab_free_port udp)
    lab_guest_start "$dir" 300 "lab.ip=10.79.0.11/24 lab.run=/lab/ibverbs/guest.sh" \
        "$(lab_dgram "$pa" "$pb")" 52:54:00:79:00:11
    wait "$LAB_PID"
    if [ ! -s "$dir/results" ]; then
        lab_result FAIL ibverbs/guest "no results (console: $dir/console.log)"
        return
    fi
    while read -r line; do
        lab_result ${line%% *} "ibverbs/$(echo "$line" | cut -d' ' -f2)" "$(echo "$line" | cut -d' ' -f3-)"
    done < "$dir/results"
}
