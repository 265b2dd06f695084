# ibverbs: our QEMU's device with backend=ibverbs on a lab guest's kernel rxe
# (the host here has no RDMA stack; a lab guest does).  One guest, rxe0 on
# eth0, runs our qemu-system-x86_64 nested, under -accel qtest (no guest CPU
# to emulate), and checks what realize finds on a real host RDMA device:
# the device and port, the refusals that name what the host has; then the
# data-path qtests (virtio-rdma-dp-test, libqos) on that device: two QPs of
# one device through rxe0, byte-exact (LAB_IBV_DP: the test paths).
# Sourced; lab_ibverbs RESULTDIR.  Per case "PASS|FAIL ibverbs/CASE ...".
# shellcheck shell=bash
# The data-path cases that do not look at the soft engine's own wire (the
# "wire" ones run two devices on the one rxe0; frames are rxe's business).
LAB_IBV_DP_CASES="/x86_64/virtio-rdma-dp/loopback /x86_64/virtio-rdma-dp/wire-qpn/loopback"
for c in rc-send rc-write rc-write-imm rc-read rc-cas rc-faa rc-pipeline \
         ud-send-ipv4 ud-send-ipv6 peer-gone; do
    LAB_IBV_DP_CASES="$LAB_IBV_DP_CASES /x86_64/virtio-rdma-dp/wire/$c"
done
LAB_IBV_DP_CASES="$LAB_IBV_DP_CASES /x86_64/virtio-rdma-dp/wire-qpn/wire"

lab_ibverbs() {
    local dir=$1 pa pb line
    mkdir -p "$dir"
    # The job's settings: the nested QEMU and the data-path qtest are ours,
    # reached over 9p.
    mkdir -p "$LAB/bin"
    rm -f "$LAB/bin/virtio-rdma-dp-test"
    ln "$top/build/qemu/tests/qtest/virtio-rdma-dp-test" "$LAB/bin/" 2>/dev/null ||
        cp "$top/build/qemu/tests/qtest/virtio-rdma-dp-test" "$LAB/bin/"
    { echo "QEMU=$QEMU"; echo "DPTEST=$LAB/bin/virtio-rdma-dp-test"
      echo "LAB_IBV_DP=\"${LAB_IBV_DP:-$LAB_IBV_DP_CASES}\""
    } > "$dir/env"
    pa=$(lab_free_port udp); pb=$(lab_free_port udp)
    # 2 GiB: a 1 GiB MR is registered (pinned) in the nested QEMU.
    LAB_MEM=2048 lab_guest_start "$dir" 900 "lab.ip=10.79.0.11/24 lab.ip6=fd79::11/64 lab.run=/lab/ibverbs/guest.sh" \
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
