#!/bin/sh
# watchdog.sh SECONDS DUMP CMD [ARGS...]: run CMD like timeout(1) (exit 124
# when it overran) but, before killing it, write to DUMP what every process
# of its tree and every QEMU was doing: each thread's kernel stack and wait
# channel, and gdb's backtrace of every thread.  A hang then says where it
# was instead of only "exit 124".  For lab guest jobs (root: gdb is the
# host root's).
secs=$1 dump=$2; shift 2
"$@" &
pid=$!
left=$secs
while kill -0 "$pid" 2>/dev/null && [ "$left" -gt 0 ]; do
    sleep 1; left=$((left - 1))
done
if ! kill -0 "$pid" 2>/dev/null; then
    wait "$pid"
    exit $?
fi
# The command's descendants (children first found through /proc) and every
# QEMU, once each.
tree() {
    echo "$1"
    for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do tree "$c"; done
}
pids=$( { tree "$pid"; pgrep -f qemu-system; } | sort -un)
{
    echo "watchdog: $* overran ${secs}s at $(date -u +%T); $(echo $pids | wc -w) processes"
    for p in $pids; do
        [ -d /proc/"$p" ] || continue
        echo "=== pid $p: $(tr '\0' ' ' < /proc/"$p"/cmdline | cut -c1-300)"
        for t in /proc/"$p"/task/*; do
            echo "--- thread ${t##*/} $(cat "$t"/comm 2>/dev/null) wchan=$(cat "$t"/wchan 2>/dev/null)"
            cat "$t"/stack 2>/dev/null
        done
        timeout 60 gdb -batch -nx -p "$p" -ex 'thread apply all bt' 2>&1 |
            grep -v '^\[New LWP\|^warning:' | head -400
    done
} > "$dump" 2>&1
kill -TERM "$pid" 2>/dev/null
sleep 5
kill -KILL "$pid" 2>/dev/null
for p in $pids; do kill -KILL "$p" 2>/dev/null; done
wait "$pid"
exit 124
