# Driver: guests on our QEMU whose RDMA device is virtio-rdma-pci (paired with
# their eth0) through our kernel module and rdma-core provider, against each
# other (vv) and against a guest on kernel rxe (vr), both joined by -netdev
# dgram over 127.0.0.1 as in the baseline.  The baseline's case runner
# (guest-cases.sh) runs the tools of LAB_DRV_CASES over IPv4-mapped and IPv6
# GIDs; in vr each tool runs with the virtio-rdma guest as server (-vsrv: rxe
# is the client) and as client (-vcli).  vv also kills ib_send_bw on both
# sides in the middle of a transfer (kill-send_bw) and runs vrdma-abuse in each
# guest.  The QEMUs of the virtio-rdma guests answer QMP "info rdma" when the
# device is up, after the tools exited (the object counts must be those of
# the idle driver), while an application holds objects, after rmmod under it
# (all zero) and after the module's reload (idle again).
# Sourced; lab_driver RESULTDIR.
#   LAB_DRV_KO     virtio_rdma.ko (default build/guest/<KVER>/virtio_rdma.ko)
#   LAB_DRV_PROV   provider directory (default build/guest/rdma-core)
#   LAB_DRV_AS=rxe the virtio-rdma guests carry the device but run rxe: the
#                  runner without the driver (the device checks then fail)
#   LAB_DRV_TMO    seconds a case may take (default 90)
#   LAB_DRV_MAXFAIL  consecutive failed cases that end a pair (default 8)
#   LAB_DRV_ONLY   regex on PAIR/CASE (e.g. '^vv/v4-')
#   LAB_DRV_OUTS   outstanding reads/atomics of read_* and atomic_* (default
#                  16: what our device offers)
# shellcheck shell=bash
LAB_DRV_TMO=${LAB_DRV_TMO:-90}
LAB_DRV_MAXFAIL=${LAB_DRV_MAXFAIL:-8}
LAB_DRV_OUTS=${LAB_DRV_OUTS:-16}
# LAB_QUICK: against itself every tool over IPv4, RC SEND and rping over
# IPv6, the kill and the abuse; against rxe both ways RC and UD SEND, WRITE,
# READ, atomics and rping over IPv4, RC SEND and rping over IPv6.
LAB_QUICK_DRIVER='^vv/(v4-|v6-(rc_pingpong|rping)$|kill-|abuse$)|^vr/v4-(rc_pingpong|ud_pingpong|write_bw|read_bw|atomic_bw|rping)-v|^vr/v6-(rc_pingpong|rping)-v'

lab_driver() {
    local dir=$1 t0
    LAB_DRV_KO=${LAB_DRV_KO:-$top/build/guest/$LAB_KVER/virtio_rdma.ko}
    LAB_DRV_PROV=${LAB_DRV_PROV:-$top/build/guest/rdma-core}
    if [ "${LAB_DRV_AS:-}" != rxe ]; then
        [ -f "$LAB_DRV_KO" ] || { lab_result FAIL driver/module "no $LAB_DRV_KO (scripts/build-guest.sh)"; return; }
        ls "$LAB_DRV_PROV"/lib*-rdmav*.so >/dev/null 2>&1 ||
            { lab_result FAIL driver/provider "no provider lib*-rdmav*.so in $LAB_DRV_PROV (scripts/build-guest.sh)"; return; }
    fi
    lab_drv_abuse_build
    t0=$(date +%s)
    lab_drv_pair "$dir/vv" vrdma vrdma "a" "kill abuse"
    echo "lab: driver/vv took $(( $(date +%s) - t0 )) s"; t0=$(date +%s)
    lab_drv_pair "$dir/vr" vrdma rxe "a b"
    echo "lab: driver/vr took $(( $(date +%s) - t0 )) s"
}

# guest/tests/vrdma-abuse (what a hostile local user tries), built against
# the host's libibverbs into LAB_DRV_ABUSE; empty when it cannot be built.
lab_drv_abuse_build() {
    local src=$top/guest/tests/vrdma-abuse.c
    LAB_DRV_ABUSE=${LAB_DRV_ABUSE:-$LAB/vrdma-abuse}
    [ -f "$src" ] || { LAB_DRV_ABUSE=; return; }
    if [ ! -x "$LAB_DRV_ABUSE" ] || [ "$src" -nt "$LAB_DRV_ABUSE" ]; then
        timeout 300 gcc -O2 -g -Wall -o "$LAB_DRV_ABUSE" "$src" -libverbs -lpthread \
            > "$LAB/vrdma-abuse.log" 2>&1 || { rm -f "$LAB_DRV_ABUSE"; LAB_DRV_ABUSE=; }
    fi
}

# lab_drv_want PAIR/CASE: the case passes LAB_DRV_ONLY and LAB_QUICK.
lab_drv_want() {
    { [ -z "${LAB_DRV_ONLY:-}" ] || [[ $1 =~ $LAB_DRV_ONLY ]]; } && ! lab_quick_skip "$LAB_QUICK_DRIVER" "$1"
}

# lab_drv_pair DIR KIND-A KIND-B SERVERS [EXTRAS]: boots guests A and B (KIND
# vrdma or rxe), runs every case with A as server ("a") and/or B as server
# ("b").  EXTRAS: "kill" = ib_send_bw killed (SIGKILL) on both sides in the
# middle of its transfer (the device check then shows whether everything was
# freed); "abuse" = vrdma-abuse in each guest, on its own device.
lab_drv_pair() {
    local dir=$1 ka=$2 kb=$3 servers=$4 extras=${5:-} pair=${1##*/}
    local fam tool s name port=18600 sa sc addr args cargs g
    local -a names=() srvside=()
    local ip4a=10.77.0.31 ip4b=10.77.0.32 ip6a=fd77::31 ip6b=fd77::32
    mkdir -p "$dir/A" "$dir/B"
    : > "$dir/A/cases"; : > "$dir/B/cases"; rm -f "$dir"/*/stage.* "$dir"/*/*.abort
    for fam in 4 6; do
        for tool in $LAB_DRV_CASES; do
            for s in $servers; do
                name=v$fam-$tool
                [ "$servers" = a ] || { [ "$s" = a ] && name=v$fam-$tool-vsrv || name=v$fam-$tool-vcli; }
                lab_drv_want "$pair/$name" || continue
                port=$((port + 1))
                args=$(lab_tool_args "$tool"); cargs=$(lab_tool_args "$tool" cli)
                # perftest sets a QP's max_rd_atomic to the peer's outstanding
                # reads (its device maximum by default: rxe 128); ours offers
                # fewer and refuses more, as hardware does.  Both sides ask
                # for LAB_DRV_OUTS.
                case $tool in read_*|atomic_*)
                    args="$args -o $LAB_DRV_OUTS"; cargs="$cargs -o $LAB_DRV_OUTS" ;;
                esac
                args=${args//@G@/@G$fam@}; args=${args//@P@/$port}
                cargs=${cargs//@G@/@G$fam@}; cargs=${cargs//@P@/$port}
                if [ "$s" = a ]; then sa=A sc=B addr=$ip4a; else sa=B sc=A addr=$ip4b; fi
                # rping's address picks its GID (the server binds it: its
                # wildcard would be IPv4's); the others talk TCP over IPv4.
                if [ "$tool" = rping ]; then
                    [ "$fam" = 6 ] && { [ "$s" = a ] && addr=$ip6a || addr=$ip6b; }
                    args="$args $addr"
                fi
                echo "srv $name $LAB_DRV_TMO $args" >> "$dir/$sa/cases"
                echo "cli $name $LAB_DRV_TMO $cargs $addr" >> "$dir/$sc/cases"
                names+=("$name"); srvside+=("$sa")
            done
        done
    done
    name=kill-send_bw
    if [[ " $extras " == *" kill "* ]] && lab_drv_want "$pair/$name"; then
        port=$((port + 1))
        args=$(lab_tool_args send_bw); args=${args//@G@/@G4@}; args="/lab/kill-mid.sh 3 ${args//@P@/$port} -D 60"
        echo "srv $name $LAB_DRV_TMO $args" >> "$dir/A/cases"
        echo "cli $name $LAB_DRV_TMO $args $ip4a" >> "$dir/B/cases"
        names+=("$name"); srvside+=("A")
    fi
    local solo=()
    if [[ " $extras " == *" abuse "* ]] && lab_drv_want "$pair/abuse"; then
        if [ -n "$LAB_DRV_ABUSE" ]; then
            echo "srv abuse 300 $LAB_DRV_ABUSE @D@ @G4@" >> "$dir/A/cases"
            echo "srv abuse 300 $LAB_DRV_ABUSE @D@ @G4@" >> "$dir/B/cases"
            solo+=(abuse)
        else
            lab_result FAIL "driver/$pair/abuse" "vrdma-abuse did not build ($LAB/vrdma-abuse.log)"
        fi
    fi
    [ ${#names[@]} -gt 0 ] || [ ${#solo[@]} -gt 0 ] || return 0
    local pa pb ga gb qa= qb= u0 u1 tmo=$(( ${#names[@]} * LAB_DRV_TMO + 300 ))
    pa=$(lab_free_port udp); pb=$(lab_free_port udp)
    u0=$(lab_udp_rcvbuf_errors)
    lab_drv_guest "$dir/A" "$tmo" "$ka" "lab.ip=$ip4a/24 lab.ip6=$ip6a/64" "$(lab_dgram "$pa" "$pb")" 52:54:00:77:00:31
    ga=$LAB_PID qa=$LAB_QMP
    lab_drv_guest "$dir/B" "$tmo" "$kb" "lab.ip=$ip4b/24 lab.ip6=$ip6b/64" "$(lab_dgram "$pb" "$pa")" 52:54:00:77:00:32
    gb=$LAB_PID qb=$LAB_QMP
    lab_drv_watch "$dir" "$ga" "$gb" "$qa" "$qb" "${names[*]}" "${srvside[*]}"
    wait "$ga"; wait "$gb"
    u1=$(lab_udp_rcvbuf_errors)
    local i rxe_dirs=()
    [ "$ka" = rxe ] || [ "${LAB_DRV_AS:-}" = rxe ] && rxe_dirs+=("$dir/A")
    [ "$kb" = rxe ] || [ "${LAB_DRV_AS:-}" = rxe ] && rxe_dirs+=("$dir/B")
    for i in "${!names[@]}"; do
        lab_drv_judge "driver/$pair/${names[$i]}" "$dir" "${names[$i]}" "${srvside[$i]}" $((u1 - u0)) "${rxe_dirs[@]}"
    done
    for name in "${solo[@]}"; do
        for g in A B; do lab_drv_solo_judge "driver/$pair/$g-$name" "$dir/$g" "$name"; done
    done
    for g in A B; do
        local k=$ka; [ $g = B ] && k=$kb
        [ "$k" = vrdma ] && lab_drv_device_check "driver/$pair/$g-device" "$dir/$g"
        lab_drv_kernel_check "driver/$pair/$g-kernel" "$dir/$g"
    done
}

# lab_drv_guest OUT TIMEOUT KIND APPEND NETDEV MAC: one guest of a pair.
lab_drv_guest() {
    local out=$1 tmo=$2 kind=$3 append=$4 nd=$5 mac=$6 vr=0 rdma=$3
    [ "$kind" = vrdma ] && vr=1
    [ "$kind" = vrdma ] && [ "${LAB_DRV_AS:-}" = rxe ] && rdma=rxe
    LAB_VRDMA=$vr lab_guest_start "$out" "$tmo" \
        "$append lab.rdma=$rdma lab.ko=$LAB_DRV_KO lab.prov=$LAB_DRV_PROV lab.stages=$vr lab.run=/lab/guest-cases.sh" "$nd" "$mac"
}

# lab_drv_watch DIR PID-A PID-B QMP-A QMP-B "NAMES" "SERVER-SIDES": until both
# guests are gone: answers their sync points (QMP "info rdma" into
# DIR/G/info-POINT.{txt,json}), ends the pair when a guest has no device or
# LAB_DRV_MAXFAIL cases in a row failed, and marks a case's client NAME.abort
# when its server failed (the client stops retrying).
lab_drv_watch() {
    local dir=$1 pids=("$2" "$3") qmps=("$4" "$5") g i p q f n name side other
    local -a names sides
    read -ra names <<< "$6"; read -ra sides <<< "$7"
    local next=0 run=0 stop=""
    while kill -0 "${pids[0]}" 2>/dev/null || kill -0 "${pids[1]}" 2>/dev/null; do
        for i in 0 1; do
            g=$([ $i = 0 ] && echo A || echo B); q=${qmps[$i]}
            [ -n "$q" ] || continue
            for p in up done held unloaded reloaded; do
                f=$dir/$g/stage.$p
                [ -f "$f" ] && [ ! -e "$f.ok" ] || continue
                timeout 30 python3 "$top/tests/lab/qmp.py" query "$q" "$dir/$g/info-$p" 2> "$dir/$g/info-$p.err"
                : > "$f.ok"
                if [ $p = up ] && [ "$(cat "$f")" = nodev ]; then
                    stop="guest $g has no RDMA device"
                fi
            done
        done
        # Cases, in order: both sides' rc known -> count failures in a row.
        while [ $next -lt ${#names[@]} ]; do
            name=${names[$next]}; side=${sides[$next]}; other=$([ "$side" = A ] && echo B || echo A)
            if [ -f "$dir/$side/$name.rc" ] && [ "$(cat "$dir/$side/$name.rc")" != 0 ] && [ ! -f "$dir/$other/$name.rc" ]; then
                : > "$dir/$other/$name.abort"
            fi
            [ -f "$dir/A/$name.rc" ] && [ -f "$dir/B/$name.rc" ] || break
            if [ "$(cat "$dir/A/$name.rc")" = 0 ] && [ "$(cat "$dir/B/$name.rc")" = 0 ]; then run=0; else run=$((run + 1)); fi
            next=$((next + 1))
            [ $run -ge "$LAB_DRV_MAXFAIL" ] && stop="$run cases in a row failed"
        done
        if [ -n "$stop" ]; then
            echo "$stop" > "$dir/stopped"
            echo "lab: driver/${dir##*/}: stopping the guests: $stop" >&2
            kill "${pids[@]}" 2>/dev/null
            break
        fi
        sleep 0.5
    done
}

# A case passes when both sides exit 0 and no rxe side counted a sequence
# error on a clean wire (as in the interop part; a wire the host dropped
# datagrams of during the pair makes them rxe's correct recovery).
lab_drv_judge() {
    local full=$1 dir=$2 name=$3 side=$4 drops=$5 res=PASS why="" fig cnt seq d cli rs rc
    shift 5
    cli=$([ "$side" = A ] && echo B || echo A)
    rs=$(cat "$dir/$side/$name.rc" 2>/dev/null || echo none)
    rc=$(cat "$dir/$cli/$name.rc" 2>/dev/null || echo none)
    [ "$rs" = 0 ] && [ "$rc" = 0 ] || { res=FAIL; why=" rc(srv)=$rs rc(cli)=$rc"; }
    [ "$rs$rc" = nonenone ] && [ -f "$dir/stopped" ] && why=" not run: $(cat "$dir/stopped")"
    for d in "$@"; do
        seq=$(awk '$1 ~ /^(rcvd_seq_err|out_of_seq_request)$/ && $3 != $2 {printf "%s+%d ", $1, $3-$2}' "$d/$name.cnt" 2>/dev/null)
        [ -n "$seq" ] || continue
        if [ "$drops" -gt 0 ]; then
            why="$why lossy wire (host dropped $drops datagrams in the pair): ${d##*/} seq-errors:$seq"
        else
            res=FAIL; why="$why ${d##*/} seq-errors on a clean wire:$seq"
        fi
    done
    fig=$(lab_figures "$dir/$cli/$name.out" 2>/dev/null)
    [ -n "$fig" ] || fig=$(grep -ho 'kill-mid: killed.*' "$dir/A/$name.out" "$dir/B/$name.out" 2>/dev/null | sed 's/ (pid [0-9]*)//' | sort | uniq -c | awk '{c=$1; $1=""; printf "%s%s x%d", sep, substr($0, 2), c; sep="; "}')
    cnt=""
    for d in A B; do
        [ -s "$dir/$d/$name.cnt" ] && cnt="$cnt $d[$(awk '{printf "%s%s+%d", sep, $1, $3-$2; sep=","}' "$dir/$d/$name.cnt")]"
    done
    lab_result "$res" "$full" "$fig$cnt${why:+ |$why}"
}

# A case one guest ran alone (TAP output): its exit status, and the counts.
lab_drv_solo_judge() {
    local full=$1 d=$2 name=$3 rc ok nok
    rc=$(cat "$d/$name.rc" 2>/dev/null || echo none)
    ok=$(grep -c '^ok ' "$d/$name.out" 2>/dev/null); nok=$(grep -c '^not ok ' "$d/$name.out" 2>/dev/null)
    if [ "$rc" = 0 ] && [ "${nok:-0}" = 0 ] && [ "${ok:-0}" -gt 0 ]; then
        lab_result PASS "$full" "$ok ok"
    else
        lab_result FAIL "$full" "rc=$rc, ${ok:-0} ok, ${nok:-0} not ok: $(grep -m3 '^not ok ' "$d/$name.out" 2>/dev/null | tr '\n' ';')"
    fi
}

lab_drv_qps() { sed 's/.*qp=\([0-9]*\).*/\1/' <<< "$1"; }

# The device of one guest: traffic went through it, the object counts after
# the tools equal those of the idle driver; an application holding objects
# (more than idle) does not stop rmmod, after which the counts are zero; the
# reloaded driver is back at idle; no QEMU error.  Prints the final "info rdma".
lab_drv_device_check() {
    local name=$1 d=$2 up done held un re tr p res=PASS why=""
    for p in up done held unloaded reloaded; do
        [ -s "$d/info-$p.json" ] || { lab_result FAIL "$name" "no info rdma at '$p' ($(head -c 200 "$d/info-$p.err" 2>/dev/null))"; return; }
    done
    up=$(python3 "$top/tests/lab/qmp.py" objects "$d/info-up.json")
    done=$(python3 "$top/tests/lab/qmp.py" objects "$d/info-done.json")
    held=$(python3 "$top/tests/lab/qmp.py" objects "$d/info-held.json")
    un=$(python3 "$top/tests/lab/qmp.py" objects "$d/info-unloaded.json")
    re=$(python3 "$top/tests/lab/qmp.py" objects "$d/info-reloaded.json")
    tr=$(python3 "$top/tests/lab/qmp.py" traffic "$d/info-done.json")
    [ "$up" = "$done" ] || { res=FAIL; why="$why objects idle [$up] after the tools [$done];"; }
    [ "$(lab_drv_qps "$held")" -gt "$(lab_drv_qps "$up")" ] && [ "$(cat "$d/stage.held")" = 1 ] ||
        { res=FAIL; why="$why the holder held no more than idle [$held];"; }
    [ "$un" = "pd=0 cq=0 qp=0 mr=0 gid=0 pages=0" ] && [ "$(cat "$d/stage.unloaded")" = rmmod=0 ] ||
        { res=FAIL; why="$why after rmmod ($(cat "$d/stage.unloaded")) [$un];"; }
    [ "$re" = "$up" ] && [ "$(cat "$d/stage.reloaded")" = reload=0 ] ||
        { res=FAIL; why="$why reloaded ($(cat "$d/stage.reloaded")) [$re];"; }
    [[ $tr =~ tx=[1-9].*rx=[1-9] ]] || { res=FAIL; why="$why no traffic through the device;"; }
    [ -s "$d/qemu.log" ] && { res=FAIL; why="$why QEMU: $(head -n 1 "$d/qemu.log");"; }
    lab_result "$res" "$name" "idle [$up] after tools [$done] app holding [$held] after rmmod under it [$un] reloaded [$re] $tr${why:+ |$why}"
    echo "--- info rdma of ${name%-device} after the tools:"
    sed 's/^/    /' "$d/info-done.txt"
}

# No oops, BUG or WARNING in the guest's kernel log (after rmmod if it ran).
lab_drv_kernel_check() {
    local name=$1 d=$2 f n
    f=$d/dmesg-final.txt; [ -s "$f" ] || f=$d/dmesg.txt
    [ -s "$f" ] || { lab_result FAIL "$name" "no kernel log"; return; }
    n=$(grep -cE "BUG:|Oops|WARNING:|Call Trace|general protection|refcount_t" "$f")
    if [ "$n" = 0 ]; then
        lab_result PASS "$name" "no oops/BUG/WARNING in ${f##*/}; $(grep -m1 -o 'LAB: ready at [0-9.]*s.*' "$d/console.log")"
    else
        lab_result FAIL "$name" "$n lines of oops/BUG/WARNING in $f: $(grep -m1 -E "BUG:|Oops|WARNING:|general protection|refcount_t" "$f")"
    fi
}
