#!/bin/bash
# Runs inside a lab guest (cwd /out): the cases listed in /out/cases, one a line:
#   ROLE NAME TIMEOUT COMMAND...
# ROLE srv: run COMMAND once; ROLE cli: run it until it gets past connecting
# to its server (the server may not listen yet), at most TIMEOUT seconds in all
# or until the host creates NAME.abort.
# In COMMAND, @D@ stands for the RDMA device (LAB_DEV from /init, default
# rxe0), @G4@ / @G6@ for its IPv4-mapped / global IPv6 GID index.
# A case's stdin is /dev/null: the loop's is this file (mpirun forwards its
# stdin to rank 0, and ate the cases after its own).
# Per case: NAME.out (the tool's output), NAME.rc, NAME.cnt (the device's hw_counters
# that changed during the case: "name before after"), NAME.net (the same for
# eth0's link statistics and its qdisc's drops: where a frame rxe counted as
# sent was lost inside the guest).  At the end: dmesg.txt.
DEV=${LAB_DEV:-rxe0}
HC=/sys/class/infiniband/$DEV/ports/1/hw_counters
gid_index() { # $1 = 4 | 6
    local f g
    for f in /sys/class/infiniband/$DEV/ports/1/gids/*; do
        g=$(cat "$f")
        case $1:$g in
        4:0000:0000:0000:0000:0000:ffff:*) echo "${f##*/}"; return;;
        6:fe80:*|6:0000:*) ;;
        6:*) echo "${f##*/}"; return;;
        esac
    done
    echo none
}
counters() { [ -d "$HC" ] || return 0; for f in "$HC"/*; do echo "${f##*/} $(cat "$f")"; done; }
netstats() {
    for f in /sys/class/net/eth0/statistics/*; do echo "${f##*/} $(cat "$f")"; done
    tc -s qdisc show dev eth0 2>/dev/null |
        awk '/^qdisc/ { q = $2 "_" $3 ($4 == "parent" ? $5 : "") } /^ *Sent .*dropped/ { gsub(",", ""); print "qdisc_" q "_sent", $4; print "qdisc_" q "_dropped", $7; print "qdisc_" q "_overlimits", $9 }'
}
now() { cut -d' ' -f1 /proc/uptime; }
G4=$(gid_index 4) G6=$(gid_index 6)
echo "guest: $DEV, GID index IPv4 $G4, IPv6 $G6"
while read -r role name tmo cmd; do
    [ -z "$role" ] || [ "${role#\#}" != "$role" ] && continue
    cmd=${cmd//@D@/$DEV}; cmd=${cmd//@G4@/$G4}; cmd=${cmd//@G6@/$G6}
    counters > "/tmp/$name.c0"; netstats | sort > "/tmp/$name.n0"
    t0=$(now); rc=1; tries=0
    if [ "$role" = srv ]; then
        timeout -k 2 "$tmo" bash -c "$cmd" < /dev/null > "$name.out" 2>&1; rc=$?
    else
        end=$(awk -v t="$t0" -v d="$tmo" 'BEGIN{print t+d}')
        while :; do
            tries=$((tries + 1))
            left=$(awk -v e="$end" -v n="$(now)" 'BEGIN{l=int(e-n); print (l<1)?1:l}')
            timeout -k 2 "$left" bash -c "$cmd" < /dev/null > "$name.out" 2>&1; rc=$?
            [ $rc = 0 ] && break
            grep -qE "Couldn't connect|Unable to open file descriptor for socket|Connection refused|RDMA_CM_EVENT_REJECTED" "$name.out" || break
            # The host saw this case's server fail: nothing will listen.
            [ -e "$name.abort" ] && break
            awk -v e="$end" -v n="$(now)" 'BEGIN{exit !(n+1<e)}' || break
            sleep 0.5
        done
    fi
    counters > "/tmp/$name.c1"
    join "/tmp/$name.c0" "/tmp/$name.c1" | awk '$2 != $3' > "$name.cnt"
    netstats | sort > "/tmp/$name.n1"
    join "/tmp/$name.n0" "/tmp/$name.n1" | awk '$2 != $3' > "$name.net"
    echo "$rc" > "$name.rc"
    echo "LAB-CASE $name rc=$rc tries=$tries wall=$(awk -v a="$(now)" -v b="$t0" 'BEGIN{printf "%.1f", a-b}')s"
done < cases
dmesg > dmesg.txt
counters > counters-final.txt
