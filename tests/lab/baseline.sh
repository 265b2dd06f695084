# Baseline: two guests, kernel rxe on both, joined by -netdev dgram over
# 127.0.0.1.  A (10.77.0.11) runs the server side of every tool, B
# (10.77.0.12) the client side.  Sourced; lab_baseline RESULTDIR.
# Per case a line "PASS|FAIL baseline/CASE figures [counters]".
# shellcheck shell=bash
# LAB_QUICK: the reference figures of RC SEND, UD SEND and RC WRITE.
LAB_QUICK_BASELINE='^(rc_pingpong|ud_pingpong|write_bw)$'
lab_baseline() {
    local dir=$1 c pa pb args cases=()
    mkdir -p "$dir/A" "$dir/B"
    : > "$dir/A/cases"; : > "$dir/B/cases"
    for c in $LAB_TOOL_CASES; do
        lab_quick_skip "$LAB_QUICK_BASELINE" "$c" || cases+=("$c")
    done
    for c in "${cases[@]}"; do
        args=$(lab_tool_args "$c")
        args=${args//@G@/@G4@}; args=${args//@P@/18515}
        echo "srv $c 120 ${LAB_STRACE:+$LAB_STRACE -o /out/$c.strace }$args" >> "$dir/A/cases"
        echo "cli $c 120 ${LAB_STRACE:+$LAB_STRACE -o /out/$c.strace }$args 10.77.0.11" >> "$dir/B/cases"
    done
    pa=$(lab_free_port udp); pb=$(lab_free_port udp)
    lab_guest_start "$dir/A" 600 "lab.ip=10.77.0.11/24 lab.ip6=fd77::11/64 lab.run=/lab/guest-cases.sh" \
        "$(lab_dgram "$pa" "$pb")" 52:54:00:77:00:11
    local ga=$LAB_PID
    lab_guest_start "$dir/B" 600 "lab.ip=10.77.0.12/24 lab.ip6=fd77::12/64 lab.run=/lab/guest-cases.sh" \
        "$(lab_dgram "$pb" "$pa")" 52:54:00:77:00:12
    local gb=$LAB_PID
    wait "$ga"; wait "$gb"
    for c in "${cases[@]}"; do
        lab_judge "baseline/$c" "$dir/A/$c" "$dir/B/$c"
    done
}

# lab_judge NAME SERVER-PREFIX CLIENT-PREFIX: both sides rc 0 -> PASS.
# Prints the client's figures and the rxe counters that changed.
lab_judge() {
    local name=$1 s=$2 k=$3 rs rk res=PASS fig cnt
    rs=$(cat "$s.rc" 2>/dev/null || echo none); rk=$(cat "$k.rc" 2>/dev/null || echo none)
    [ "$rs" = 0 ] && [ "$rk" = 0 ] || res=FAIL
    fig=$(lab_figures "$k.out" 2>/dev/null)
    cnt=$(cat "$s.cnt" 2>/dev/null | awk '{printf "%s%s+%d", sep, $1, $3-$2; sep=","}')
    lab_result "$res" "$name" "$fig srv-rxe[${cnt}]$([ $res = FAIL ] && echo " rc(srv)=$rs rc(cli)=$rk")"
}
