#!/bin/bash
# nvme-rdma host of the lab's nvme part (runs in a guest, on LAB_DEV),
# against the target of tests/lab/nvme/target.sh at NV_ADDR:4420.  Each step
# is a results line, "PASS|FAIL STEP DETAILS" (guest-lib.sh's `result`); a
# step that leaves nothing to build on ends the job, the line "PASS finished"
# says it ran to its end.  Its stages (guest-lib.sh's `stage NAME UPTIME`):
# the lab host reads the device's counters there (before, connected, after,
# final; /out/res-*.txt: what the kernel's resource tracker counts then) or
# kills the target's QEMU (kill-recover: and boots a new one at the same
# address; kill-giveup: for good).  Every wait is bounded.
# Environment from /out/job.env: NV_ADDR, NV_KILL (1: the two kill steps).
exec > /out/job.log 2>&1
. /lab/guest-lib.sh
. /out/job.env
NQN=testnqn
# Three I/O queues on one vCPU (the default would be one per CPU): one for
# reads and what else, one for writes, one polled (its CQ is polled by the
# submitter, not by interrupt).
QUEUES="--nr-io-queues=1 --nr-write-queues=1 --nr-poll-queues=1"
# The namespace (64 MiB): fio's regions are 0-16 and 24-40 MiB, write_read's
# data lives at 48-64 MiB (in MiB blocks) so the reconnect can read it back.
DATA_AT=48
step() { result "$@"; echo "== $*"; }
stop() { dmesg > /out/dmesg.txt; exit 0; }
now() { cut -d' ' -f1 /proc/uptime; }
# The namespace's block device: one NVMe disk in this guest (bounded wait).
blockdev() {
    local i=0
    while [ $i -lt 100 ]; do
        set -- /dev/nvme[0-9]*n1
        [ -b "$1" ] && { echo "$1"; return 0; }
        sleep 0.1; i=$((i + 1))
    done
    return 1
}
gone() {
    local i=0
    while ls /dev/nvme[0-9]*n1 >/dev/null 2>&1 && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
    ! ls /dev/nvme[0-9]*n1 >/dev/null 2>&1
}
connect() { # connect STEP [nvme connect options]
    local s=$1 out; shift
    if ! out=$(timeout 120 nvme connect -t rdma -n $NQN -a "$NV_ADDR" -s 4420 $QUEUES "$@" 2>&1) ||
       ! DEV=$(blockdev); then
        step FAIL "$s" "nvme connect $*: $(echo "$out" | tr '\n' ' ' | head -c 300); $(dmesg | grep -i nvme | tail -n 2 | tr '\n' ' ')"
        return 1
    fi
}
disconnect() {
    timeout 120 nvme disconnect -n $NQN | grep -q 'disconnected 1 controller' && gone
}
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a - b }'; }
# mbps BYTES SECONDS
mbps() { awk -v b="$1" -v s="$2" 'BEGIN { printf "%.1f MB/s", b / s / 1e6 }'; }
# write_read STEP MiB: random data written and read back with O_DIRECT,
# the page cache dropped in between; PASS when byte-exact.
write_read() {
    local s=$1 n=$2 t0 t1 t2
    head -c $((n << 20)) /dev/urandom > /run/data
    t0=$(date +%s.%N)
    timeout 300 dd if=/run/data of="$DEV" bs=1M seek=$DATA_AT oflag=direct status=none || { step FAIL "$s" "dd write to $DEV rc=$?"; return 1; }
    t1=$(date +%s.%N)
    echo 3 > /proc/sys/vm/drop_caches
    timeout 300 dd if="$DEV" of=/run/back bs=1M skip=$DATA_AT count=$n iflag=direct status=none || { step FAIL "$s" "dd read from $DEV rc=$?"; return 1; }
    t2=$(date +%s.%N)
    if cmp -s /run/data /run/back; then
        step PASS "$s" "$n MiB sha256 $(sha256sum < /run/data | cut -c1-16) byte-exact; write $(mbps $((n << 20)) "$(secs $t1 $t0)"), read $(mbps $((n << 20)) "$(secs $t2 $t1)")"
    else
        step FAIL "$s" "$n MiB read back differs: $(cmp /run/data /run/back | head -c 200)"
        return 1
    fi
}

# under_writes STAGE SECONDS OUT: sequential 64 KiB writes for SECONDS (fio
# report in OUT), the target's QEMU killed by the lab host at STAGE, 4 s in;
# sets rc (fio's exit status) and took (seconds from the kill to fio's end).
under_writes() {
    local f t0
    timeout 400 fio --name="$1" --filename="$DEV" --rw=write --bs=64k --size=48M --time_based \
        --runtime="$2" --iodepth=4 --direct=1 --ioengine=libaio --output="$3" &
    f=$!
    sleep 4
    t0=$(now)
    stage "$1" "$t0"
    wait $f; rc=$?
    took=$(secs "$(now)" "$t0")
}

# discover: the target's port and subsystem, retried while the target boots.
i=0 out=
while [ $i -lt 90 ]; do
    out=$(timeout 30 nvme discover -t rdma -a "$NV_ADDR" -s 4420 2>&1) && echo "$out" | grep -q "subnqn: *$NQN" && break
    sleep 2; i=$((i + 1))
done
if echo "$out" | grep -q "subnqn: *$NQN" && echo "$out" | grep -q 'trtype: *rdma'; then
    step PASS discover "rdma $NV_ADDR:4420 $NQN after $((i * 2)) s of retries"
else
    step FAIL discover "$(echo "$out" | tail -n 3 | tr '\n' ' ')"; stop
fi

rdma resource show "$LAB_DEV" > /out/res-before.txt
stage before "$(now)"
connect connect || stop
q=$(dmesg | grep -o 'mapped [0-9/]* default/read/poll queues' | tail -n 1)
if [ "$q" = "mapped 1/1/1 default/read/poll queues" ]; then
    step PASS connect "$DEV, $q"
else
    step FAIL connect "$DEV, wanted 1/1/1 default/read/poll queues: $q"
fi
stage connected "$(now)"
write_read write-read 16
# fio: two jobs on separate 16 MiB regions (a shared region would make each
# job's verify see the other's data), 4 KiB random writes then crc32c
# verification of every block: one through libaio at queue depth 16, one with
# polled I/O (RWF_HIPRI: the poll queue).
if timeout 600 fio --filename="$DEV" --rw=randwrite --bs=4k --size=16M --direct=1 \
        --verify=crc32c --verify_fatal=1 --output=/out/fio.out \
        --name=aio --ioengine=libaio --iodepth=16 \
        --name=poll --offset=24M --ioengine=pvsync2 --hipri; then
    step PASS fio-verify "$(grep -o 'WRITE: bw=[^,]*' /out/fio.out | tr '\n' ' ')$(grep -o 'err= *[0-9]*' /out/fio.out | sort -u | tr '\n' ' ')"
else
    step FAIL fio-verify "rc=$? $(grep -m2 -iE 'err=|verify' /out/fio.out | tr '\n' ' ')"
fi
if disconnect; then step PASS disconnect "controller and $DEV gone"; else step FAIL disconnect "$(ls /dev/nvme* 2>&1 | tr '\n' ' ')"; stop; fi
# reconnect: a new controller, and the namespace still holds what was written.
if connect reconnect; then
    timeout 300 dd if="$DEV" of=/run/back bs=1M skip=$DATA_AT count=16 iflag=direct status=none
    if cmp -s /run/data /run/back; then step PASS reconnect "$DEV reads back the 16 MiB written before the disconnect"
    else step FAIL reconnect "$DEV after reconnect differs from what was written"; fi
    disconnect || { step FAIL reconnect "second disconnect"; stop; }
fi
rdma resource show "$LAB_DEV" > /out/res-after.txt
stage after "$(now)"

if [ "${NV_KILL:-0}" = 1 ]; then
    # kill-recover: the target's QEMU is killed under 20 s of sequential
    # writes and a new target boots at the same address.  The host must
    # reconnect (reconnect-delay 2 s, controller loss after 120 s) and the
    # writes queued meanwhile must complete without error.
    if connect kill-recover --ctrl-loss-tmo=120 --reconnect-delay=2; then
        under_writes kill-recover 20 /out/fio-kill.out
        rec=$(dmesg | grep -c 'Successfully reconnected')
        if [ $rc = 0 ] && grep -q 'err= *0' /out/fio-kill.out && [ "$rec" -ge 1 ]; then
            step PASS kill-recover "fio rc=0 err=0 ($(grep -m1 -o 'WRITE: bw=[^,]*' /out/fio-kill.out)), reconnected; fio ended $took s after the kill"
            write_read kill-recover-data 4
        else
            step FAIL kill-recover "fio rc=$rc $(grep -o 'err= *[0-9]*' /out/fio-kill.out | head -n 1), 'Successfully reconnected' x$rec; $(dmesg | grep nvme | tail -n 3 | tr '\n' ' ')"
        fi
        disconnect || { step FAIL kill-recover "disconnect after recovery"; stop; }
    fi
    # kill-giveup: the target dies for good under writes.  With one reconnect
    # allowed (ctrl-loss-tmo / reconnect-delay = 1) the host deletes the
    # controller when that attempt fails, and the queued writes fail with an
    # error.  The attempt lasts as long as the kernel's CM retries a REQ to a
    # dead peer (about 100 s in a TCG guest).
    if connect kill-giveup --ctrl-loss-tmo=1 --reconnect-delay=1; then
        under_writes kill-giveup 300 /out/fio-giveup.out
        e=$(grep -o 'err= *[0-9]*[^)]*' /out/fio-giveup.out | head -n 1)
        if [ $rc != 0 ] && [ $rc != 124 ] && gone; then
            step PASS kill-giveup "fio failed (rc=$rc, $e) $took s after the kill; controller deleted"
        else
            step FAIL kill-giveup "fio rc=$rc ($e) after $took s; $(ls /dev/nvme* 2>&1 | tr '\n' ' ')"
        fi
        rdma resource show "$LAB_DEV" > /out/res-final.txt
        stage final "$(now)"
    fi
fi
step PASS finished "every step run"
stop
