#!/bin/bash
# The job (lab.run) of the libvirt part's guests, in /out (cwd).  The host
# wrote /out/role (A or B), /out/cases (the tools, for guest-cases.sh) and,
# for B, /out/gid (ADDR4/N ADDR6/N: the addresses of the GID-event step).
#   both: sync "up" (the device is there), the tools, sync "tools" (the host
#         reads both devices' counters)
#   A:    serves ib_write_bw -D (destroy/cases) until the host destroys A
#   B:    adds the addresses to eth0, sync "gid-added" (the host looks for
#         them on this guest's tap), deletes them, sync "gid-deleted"; then
#         the ib_write_bw client of destroy/cases, which must end with an
#         error completion once A is gone; sync "destroyed" (the host reads
#         the device); dmesg-final.txt
# A sync point writes /out/sync.NAME and waits (bounded) for sync.NAME.ok.
role=$(cat role)
sync_point() {
    echo "$2" > "sync.$1.tmp" && mv "sync.$1.tmp" "sync.$1"
    for _ in $(seq 1800); do [ -e "sync.$1.ok" ] && return 0; sleep 0.1; done
    echo "job: sync $1: no answer from the host"; return 1
}
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

sync_point up "$LAB_DEV" || exit 1
bash /lab/guest-cases.sh
sync_point tools "$(cat ./*.rc | tr '\n' ' ')" || exit 1
mkdir -p destroy && cp cases.destroy destroy/cases
if [ "$role" = B ]; then
    read -r a4 a6 < gid
    ip addr add "$a4" dev eth0 && ip -6 addr add "$a6" dev eth0 nodad
    wait_gid present "${a4%/*}" && wait_gid present "${a6%/*}" && s=ok || s="not in the GID table"
    sync_point gid-added "$s" || exit 1
    ip addr del "$a4" dev eth0; ip -6 addr del "$a6" dev eth0
    wait_gid absent "${a4%/*}" && wait_gid absent "${a6%/*}" && s=ok || s="still in the GID table"
    sync_point gid-deleted "$s" || exit 1
fi
(cd destroy && bash /lab/guest-cases.sh)
if [ "$role" = B ]; then
    sync_point destroyed "$(cat destroy/*.rc)"
    dmesg > dmesg-final.txt
fi
