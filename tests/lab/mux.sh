# mux: contrib/rdmacm-mux on a lab guest's kernel rxe (the host here has no
# RDMA stack).  One guest, rxe0 on eth0: the mux refuses to start while
# ib_cm holds the CM class, starts once the guest unloads the kernel's CM,
# and passes CM MADs between rxe0 and protocol clients (python3, speaking
# include/hw/rdma/rdmacm-mux-proto.h): claims checked against rxe0's GID
# table, a MAD sent to the port's own GID comes back to the owner of the GID
# it arrived on, a client breaking the framing is closed alone.
# Sourced; lab_mux RESULTDIR.  Per case "PASS|FAIL mux/CASE ...".
# shellcheck shell=bash

lab_mux() {
    local dir=$1 pa pb line mux=${LAB_MUX:-$top/build/unit/contrib/rdmacm-mux/rdmacm-mux}
    mkdir -p "$dir"
    if [ ! -x "$mux" ]; then
        lab_result FAIL mux/build "$mux missing (ninja -C build/unit; needs libibumad-dev)"
        return
    fi
    # A snapshot the guest sees over 9p (its /tmp and /run are its own).
    mkdir -p "$LAB/bin"
    rm -f "$LAB/bin/rdmacm-mux"
    ln "$mux" "$LAB/bin/" 2>/dev/null || cp "$mux" "$LAB/bin/"
    echo "MUX=$LAB/bin/rdmacm-mux" > "$dir/env"
    pa=$(lab_free_port udp); pb=$(lab_free_port udp)
    lab_guest_start "$dir" 300 "lab.ip=10.79.2.11/24 lab.ip6=fd79:2::11/64 lab.run=/lab/mux/guest.sh" \
        "$(lab_dgram "$pa" "$pb")" 52:54:00:79:02:11
    wait "$LAB_PID"
    lab_guest_results mux "$dir"
}
