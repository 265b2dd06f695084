#!/usr/bin/env bash
# Fuzz with libFuzzer (clang, ASan, UBSan), two kinds of target:
#
# core     tests/fuzz (built in build/unit-san, the unit-san tier's build): the
#          C++ core through its host-ops
#          seam.  First the committed inputs (tests/fuzz/corpus/<target>:
#          each once found a bug), then new ones.
# device   the whole device, C glue included, through QEMU's own generic-fuzz
#          target (qemu-fuzz-x86_64, scripts/build.sh --san -> build/qemu-san):
#          MMIO/PIO/PCI-config writes to the BARs of two virtio-net-pci +
#          virtio-rdma-pci pairs (function 0 + 1) on one hub, which also has
#          -netdev user,restrict=on on it (so frames come back at once, on the
#          same thread), with DMA patterns filling whatever guest RAM the
#          devices read through QEMU's DMA API.  Four configurations: the
#          engine in the main loop or in an iothread, ioeventfd on or off.
#
# Inputs that reach new code go to build/fuzz-corpus/<target>; a crash, a
# leak, a timeout (-timeout per input; a watchdog for a wedged main loop, which
# libFuzzer's SIGALRM cannot interrupt because QEMU blocks SIGALRM) leaves its
# input in build/fuzz-logs and fails the script ("fuzz: <target> FAILED").
#
#   scripts/fuzz.sh               60 s per target
#   scripts/fuzz.sh 600           10 minutes per target
#   FUZZ_RUNS=20000 scripts/fuzz.sh
#                                 a fixed number of inputs, seed 1 (what the
#                                 test tier runs): FUZZ_RUNS for the core,
#                                 FUZZ_DEVICE_RUNS (default below) per device
#                                 configuration, which then starts from the
#                                 committed inputs only, so a run repeats
#   FUZZ_TARGETS="virtio-rdma-iothread" scripts/fuzz.sh 300
#                                 only some targets (names as printed)
#   FUZZ_BUILD=0 scripts/fuzz.sh  fuzz the qemu-fuzz binary as it is: no
#                                 scripts/build.sh --san (which needs the
#                                 build lock) first
#
# A device crash's input replays with the two variables the log's first lines
# give:  QEMU_FUZZ_ARGS=... QEMU_FUZZ_OBJECTS=... \
#          build/qemu-san/qemu-fuzz-x86_64 --fuzz-target=generic-fuzz <input>
# With QTEST_LOG=1 FUZZ_SERIALIZE_QTEST=1 it prints the qtest commands, which
# subprojects/qemu/scripts/oss-fuzz/reorder_fuzzer_qtest_trace.py turns into a
# trace for qemu-system-x86_64 -qtest stdio (minimize_qtest_trace.py shrinks it).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/config.sh"

seconds=${1:-60}
build=$BUILD_UNIT_SAN
qbuild=$BUILD_QEMU_SAN
corpus=$top/build/fuzz-corpus
logs=$top/build/fuzz-logs
mkdir -p "$corpus" "$logs"

core_targets="fuzz-engine fuzz-rings fuzz-rdmacm-mux"
# Where each core target's source (and meson target) lives.
target_dir() { case $1 in fuzz-rdmacm-mux) echo contrib/rdmacm-mux/tests ;; *) echo tests/fuzz ;; esac; }
device_targets="virtio-rdma-main virtio-rdma-main-noioeventfd
                virtio-rdma-iothread virtio-rdma-iothread-noioeventfd"
targets=${FUZZ_TARGETS:-$core_targets $device_targets}
want() { case " $(echo $targets) " in *" $1 "*) return 0 ;; esac; return 1; }

command -v clang++ >/dev/null ||
    { echo "fuzz: clang++ not found (scripts/deps.sh installs clang)"; exit 1; }

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
rc=0

# ---- core ---------------------------------------------------------------------------
for target in $core_targets; do
    want "$target" || continue
    meson_dir "$build" unit_san_setup "$build" >"$logs/setup.log" 2>&1 ||
        { tail -n 30 "$logs/setup.log"; echo "fuzz: set-up failed"; exit 1; }
    dir=$(target_dir "$target")
    ninja -C "$build" -j "$JOBS" "$dir/$target" >"$logs/build.log" 2>&1 ||
        { tail -n 30 "$logs/build.log"; echo "fuzz: build failed"; exit 1; }
    mkdir -p "$corpus/$target"
    if [ -n "${FUZZ_RUNS:-}" ]; then
        limit=(-runs="$FUZZ_RUNS" -seed=1)
        what="$FUZZ_RUNS inputs"
    else
        limit=(-max_total_time="$seconds")
        what="$seconds s"
    fi
    echo "fuzz: $target for $what"
    # Crash inputs land in $logs (-artifact_prefix); leaks are real findings.
    # libFuzzer stops at a corpus directory that does not exist.
    committed=()
    [ -d "$top/tests/fuzz/corpus/$target" ] && committed=("$top/tests/fuzz/corpus/$target")
    if "$build/$dir/$target" "${limit[@]}" -max_len=4096 \
           -artifact_prefix="$logs/$target-" "$corpus/$target" \
           "${committed[@]}" \
           >"$logs/$target.log" 2>&1; then
        grep -E "#[0-9]+.*DONE" "$logs/$target.log" | tail -n 1
        echo "fuzz: $target passed"
    else
        tail -n 40 "$logs/$target.log"
        echo "fuzz: $target FAILED (log: $logs/$target.log)"
        rc=1
    fi
done

# ---- device (QEMU's generic-fuzz) ---------------------------------------------------
# One pair: virtio-net-pci at function 0 (the paired NIC), virtio-rdma-pci at 1.
# max-qp=8: QPs get a random number of 2..7, which the seeds can try one by
# one (by default one of 2..131071, which no input can name in MODIFY_QP or
# a doorbell); max-cq=4: CQs 0..3.
pair() {    # slot mac rdma-extra-options ioeventfd
    echo "-device virtio-net-pci,netdev=n$1,addr=0$1.0,multifunction=on,mac=$2,ioeventfd=$4" \
         "-device virtio-rdma-pci,id=rdma$1,addr=0$1.1,max-cq=4,max-qp=8,ioeventfd=$4$3"
}
device_args() {     # target
    local io="" iodev="" efd=on
    case $1 in *-iothread*) io="-object iothread,id=io0" iodev=",iothread=io0" ;; esac
    case $1 in *-noioeventfd) efd=off ;; esac
    # Two pairs on hub 0, plus slirp with restrict=on (answers ARP/ICMP at
    # once, reaches nothing outside): a frame out of one device reaches the
    # other's filter, and answers come back, synchronously.
    echo "-M pc -nodefaults $io" \
         "-netdev user,id=u0,restrict=on -netdev hubport,id=h0,hubid=0,netdev=u0" \
         "-netdev hubport,id=n4,hubid=0 -netdev hubport,id=n5,hubid=0" \
         "$(pair 4 52:54:00:12:34:56 "$iodev" $efd)" \
         "$(pair 5 52:54:00:12:34:57 "$iodev" $efd)"
}
# The devices' own BARs (common/isr/device/notify config, MSI-X, legacy I/O)
# and their PCI config space, both NICs and both RDMA devices.
device_objects="virtio-rdma* virtio-net*"

have_device=0
for t in $device_targets; do want "$t" && have_device=1; done
if [ $have_device = 1 ] && [ "${FUZZ_BUILD:-1}" != 0 ]; then
    bash "$top/scripts/build.sh" --san >"$logs/qemu-fuzz-build.log" 2>&1 ||
        { tail -n 30 "$logs/qemu-fuzz-build.log"; echo "fuzz: qemu-fuzz build failed"; exit 1; }
fi
for target in $device_targets; do
    want "$target" || continue
    if [ -n "${FUZZ_RUNS:-}" ]; then
        # Repeatable: seed 1, the generated and committed inputs, new ones
        # to a scratch dir.
        runs=${FUZZ_DEVICE_RUNS:-3000}
        limit=(-runs="$runs" -seed=1)
        what="$runs inputs"
        out=$logs/$target-scratch
        rm -rf "$out"
        watchdog=300
    else
        limit=(-max_total_time="$seconds")
        what="$seconds s"
        out=$corpus/$target
        watchdog=$((seconds + 300))
    fi
    # Inputs that bring the devices up as the driver does (rings, doorbells,
    # the event queue) and drive each command and the rings data path
    # (tests/fuzz/generic_seeds.py says which and why); regenerated every run.
    seeds=$logs/$target-seeds
    rm -rf "$seeds"
    python3 "$top/tests/fuzz/generic_seeds.py" "$seeds"
    mkdir -p "$out"
    committed=()
    [ -d "$top/tests/fuzz/corpus/$target" ] && committed=("$top/tests/fuzz/corpus/$target")
    echo "fuzz: $target for $what"
    export QEMU_FUZZ_ARGS QEMU_FUZZ_OBJECTS=$device_objects
    QEMU_FUZZ_ARGS=$(device_args "$target")
    { echo "QEMU_FUZZ_ARGS='$QEMU_FUZZ_ARGS'"; echo "QEMU_FUZZ_OBJECTS='$QEMU_FUZZ_OBJECTS'"; } \
        >"$logs/$target.log"
    # -timeout: an input that runs 30 s is a hang (libFuzzer's alarm reaches
    # QEMU's main loop through its signalfd).  A main thread stuck for good
    # never gets there: the watchdog then sends SIGABRT, which libFuzzer
    # catches on that thread (stack and input saved).
    r=0 start=$SECONDS
    timeout -s ABRT -k 30 "$watchdog" \
        "$qbuild/qemu-fuzz-x86_64" --fuzz-target=generic-fuzz "${limit[@]}" \
            -max_len=16384 -timeout=30 -rss_limit_mb=3072 \
            -artifact_prefix="$logs/$target-" "$out" "$seeds" ${committed[@]+"${committed[@]}"} \
            >>"$logs/$target.log" 2>&1 || r=$?
    if [ $r = 0 ]; then
        grep -E "#[0-9]+.*DONE" "$logs/$target.log" | tail -n 1
        echo "fuzz: $target passed"
    else
        tail -n 40 "$logs/$target.log"
        if [ $((SECONDS - start)) -ge "$watchdog" ]; then
            echo "fuzz: $target: stopped by the watchdog after $watchdog s (a hang)"
        fi
        input=$(sed -nE 's/.*Test unit written to (.*)$/\1/p' "$logs/$target.log" | tail -n 1)
        echo "fuzz: $target FAILED (input: ${input:-none written}; log: $logs/$target.log)"
        rc=1
    fi
done
exit $rc
