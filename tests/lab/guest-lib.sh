# The guest's half of the lab's guest protocol (tests/lab/vrdma_lab/protocol.py
# says it all), for a job to source: . /lab/guest-lib.sh
# LAB_OUT: the result directory (default /out; set by the host's unit tests).
# shellcheck shell=bash
LAB_OUT=${LAB_OUT:-/out}

# result PASS|FAIL|SKIP NAME DETAILS...: one case's verdict for the host.
result() {
    echo "$*" >> "$LAB_OUT/results"
}

# stage NAME [TEXT...]: TEXT to the host at stage NAME, then wait (at most
# LAB_STAGE_WAIT whole seconds, default 60) for its answer; fails without one.
stage() {
    local f="$LAB_OUT/stage.$1" ticks=0
    shift
    echo "$*" > "$f.tmp" && mv "$f.tmp" "$f" || return 1
    while [ ! -e "$f.ok" ] && [ $ticks -lt $((${LAB_STAGE_WAIT:-60} * 10)) ]; do
        sleep 0.1; ticks=$((ticks + 1))
    done
    [ -e "$f.ok" ]
}
