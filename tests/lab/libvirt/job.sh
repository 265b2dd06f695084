#!/bin/bash
# The job (lab.run) of the libvirt part's guests (tests/lab/test_libvirt.py),
# in /out (cwd).  The host wrote /out/role (A or B), /out/cases (the tools,
# for guest-cases.sh), /out/destroy/cases (the transfer during which the
# host destroys A) and, for B, /out/gid (ADDR4/N ADDR6/N: the addresses of
# the GID-event step).  Its stages (guest-lib.sh's `stage`; the host serves
# them with protocol.Stages):
#   both: up (TEXT: the RDMA device), the tools, tools (the host reads the
#         device through libvirt)
#   A:    serves ib_write_bw -D (destroy/cases) until the host destroys A
#   B:    adds the addresses to eth0, gid-added (the host looks for them on
#         this guest's tap), deletes them, gid-deleted; then the ib_write_bw
#         client of destroy/cases: writing once it has its server's address
#         (the host destroys A), destroyed when it has ended -- with an error
#         completion, A being gone -- (TEXT: its exit status; the host reads
#         the device); dmesg-final.txt
. /lab/guest-lib.sh
# The host may still be defining and starting the other guest.
LAB_STAGE_WAIT=180
role=$(cat role)
# gid_has ADDR: eth0's address ADDR is in the device's GID table.
gid_has() {
    local hex
    case $1 in
    *:*) hex=$(python3 -c 'import ipaddress,sys; print(ipaddress.ip_address(sys.argv[1]).exploded)' "$1") ;;
    *)   hex=0000:0000:0000:0000:0000:$(printf 'ffff:%02x%02x:%02x%02x' $(echo "$1" | tr . ' ')) ;;
    esac
    grep -qx "$hex" /sys/class/infiniband/"$LAB_DEV"/ports/1/gids/* 2>/dev/null
}
wait_gid() { # present|absent ADDR
    for _ in $(seq 100); do
        if gid_has "$2"; then [ "$1" = present ] && return 0; else [ "$1" = absent ] && return 0; fi
        sleep 0.1
    done
    return 1
}

stage up "$LAB_DEV" || exit 1
bash /lab/guest-cases.sh
stage tools "$(cat ./*.rc | tr '\n' ' ')" || exit 1
if [ "$role" = B ]; then
    read -r a4 a6 < gid
    ip addr add "$a4" dev eth0 && ip -6 addr add "$a6" dev eth0 nodad
    wait_gid present "${a4%/*}" && wait_gid present "${a6%/*}" && s=ok || s="not in the GID table"
    stage gid-added "$s" || exit 1
    ip addr del "$a4" dev eth0; ip -6 addr del "$a6" dev eth0
    wait_gid absent "${a4%/*}" && wait_gid absent "${a6%/*}" && s=ok || s="still in the GID table"
    stage gid-deleted "$s" || exit 1
fi
(cd destroy && exec bash /lab/guest-cases.sh) &
tool=$!
if [ "$role" = B ]; then
    # Until the client has its server's address (the transfer runs) or has
    # ended (guest-cases.sh bounds it).
    out=destroy/write_bw-D.out
    while kill -0 $tool 2>/dev/null && ! grep -qs 'remote address' $out; do sleep 0.2; done
    if grep -qs 'remote address' $out; then
        stage writing writing
    else
        stage writing "did not start: $(tail -n 3 $out 2>/dev/null | tr '\n' ' ')"
    fi
fi
wait $tool
if [ "$role" = B ]; then
    stage destroyed "$(cat destroy/write_bw-D.rc)"
    dmesg > dmesg-final.txt
fi
