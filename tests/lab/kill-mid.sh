#!/bin/bash
# kill-mid.sh SECONDS TOOL [ARG...]: runs TOOL (a perftest program) and kills
# it with SIGKILL SECONDS after it exchanged its QP with the peer, that is in
# the middle of its transfer (run it with -D longer than that).  Exit status
# 0 when the kill hit the running tool; otherwise the tool's own (its output,
# e.g. "Couldn't connect", lets guest-cases.sh retry).  Runs in a lab guest.
s=$1; shift
out=$(mktemp)
# Line-buffered: the exchange must show in the file as it happens.
stdbuf -oL "$@" > "$out" 2>&1 &
p=$!
for _ in $(seq 300); do
    grep -q 'remote address' "$out" && break
    kill -0 "$p" 2>/dev/null || break
    sleep 0.1
done
k=0
if grep -q 'remote address' "$out"; then
    sleep "$s"
    kill -9 "$p" 2>/dev/null && k=1
fi
wait "$p"; rc=$?
cat "$out"; rm -f "$out"
if [ $k = 1 ] && [ $rc = 137 ]; then
    echo "kill-mid: killed $1 (pid $p) ${s}s into its transfer"
    exit 0
fi
echo "kill-mid: $1 was not running at the kill (rc=$rc)"
exit $(( rc ? rc : 1 ))
