#!/usr/bin/env bash
# Build and run the benchmarks, then print a short summary with the ratios.
#   core    bench/core-bench (Google Benchmark) on the C++ core, no QEMU:
#           RC WRITE 64 KiB between two cores vs memcpy (both sides on one
#           thread, and each side alone), 64-byte SEND packet rates, ICRC
#           per packet
#   device  tests/qtest/virtio-rdma-bench: RC WRITE 1 MiB between two QEMUs
#           on -netdev dgram over 127.0.0.1 vs raw UDP on the same path
#   guests  two TCG guests on our QEMU (tests/lab, the driver part's "vv"
#           pair): ib_write_bw 64 KiB, ib_send_lat 64 B, ibv_rc_pingpong
#           4 KiB through virtio-rdma (virtio_rdma.ko + provider) vs the same
#           guests, same machines, on the guest kernel's rxe; rounds
#           alternate the two (BENCH_GUEST_ROUNDS, default 2), at each NIC
#           MTU of BENCH_GUEST_MTUS (default "1500 9000": RoCE MTU 1024
#           and 4096)
#   insns   guest instructions per message (bench/guest_insns.py): the same
#           two guests on a QEMU with TCG plugins (build/qemu-plugins),
#           counting every instruction each guest executes, for SENDs of
#           64 B and 64 KiB and WRITEs of 64 KiB on our device's rings
#           and on the guests' own rxe
# Benchmarks are not tests: they print what they measured and the targets
# next to it; this script fails only if a build or a run breaks.
#
#   scripts/bench.sh                 all four
#   BENCHES=core scripts/bench.sh    one of them (core | device | guests | insns)
#   BENCH_REPS=9                     core-bench repetitions (default 5; the
#                                    summary: medians, then the best runs)
#   VRDMA_BENCH_SECONDS=10 ...       device knobs: see virtio-rdma-bench.c
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/config.sh"

# Optimised like QEMU builds the core (-O2, assertions on), not -O0.
BUILD_BENCH=${BUILD_BENCH:-$top/build/bench}
log=$top/build/bench-logs
mkdir -p "$log"
benches=${BENCHES:-core device guests insns}
reps=${BENCH_REPS:-5}
rc=0

run_core() {
    echo "== core-bench"
    rm -f "$log/core.log" # the summary must not show an older run
    if [ ! -f "$BUILD_BENCH/build.ninja" ]; then
        # werror off: GCC's -O2-only warnings must not stop a measurement.
        meson setup "$BUILD_BENCH" "$top" --buildtype=debugoptimized \
            -Dcpp_args=-D_GLIBCXX_ASSERTIONS=1 -Dwerror=false \
            >"$log/core-setup.log" 2>&1 ||
            { tail -n 30 "$log/core-setup.log"; echo "bench: core set-up failed"; return 1; }
    fi
    ninja -C "$BUILD_BENCH" -j "$JOBS" bench/core-bench >"$log/core-build.log" 2>&1 ||
        { tail -n 30 "$log/core-build.log"
          grep -q "benchmark.*NO" "$BUILD_BENCH/meson-logs/meson-log.txt" 2>/dev/null &&
              echo "bench: Google Benchmark not found (scripts/deps.sh installs libbenchmark-dev)"
          echo "bench: core build failed"; return 1; }
    # Repetitions in random order: a neighbour's load spreads over all of
    # them instead of landing on one benchmark (the summary takes medians,
    # then each benchmark's least disturbed repetition).
    "$BUILD_BENCH/bench/core-bench" --benchmark_repetitions="$reps" \
        --benchmark_enable_random_interleaving=true >"$log/core.log" 2>&1 ||
        { tail -n 30 "$log/core.log"; echo "bench: core-bench failed ($log/core.log)"; return 1; }
    echo "log: $log/core.log"
}

run_device() {
    echo "== virtio-rdma-bench"
    rm -f "$log/device.log" # the summary must not show an older run
    BUILD_TARGETS="tests/qtest/virtio-rdma-bench" bash "$top/scripts/build.sh" \
        >"$log/device-build.log" 2>&1 ||
        { tail -n 30 "$log/device-build.log"; echo "bench: QEMU build failed"; return 1; }
    [ -x "$BUILD_QEMU/tests/qtest/virtio-rdma-bench" ] ||
        { echo "bench: $BUILD_QEMU/tests/qtest/virtio-rdma-bench was not built" \
               "(is it in tests/qtest/meson.build's qtests_x86_64?)"; return 1; }
    QTEST_QEMU_BINARY=$BUILD_QEMU/qemu-system-x86_64 timeout 900 \
        "$BUILD_QEMU/tests/qtest/virtio-rdma-bench" >"$log/device.log" 2>&1 ||
        { grep -vE '^# (starting|Start|End)|warning: Default display' "$log/device.log" | tail -n 30
          echo "bench: virtio-rdma-bench failed ($log/device.log)"; return 1; }
    echo "log: $log/device.log"
}

# Both sides of a round run the same guests and tools; only the RDMA device
# differs (LAB_DRV_AS=rxe: the guests carry virtio-rdma-pci but use rxe).
run_guests() {
    echo "== guests (tests/lab driver part, vv pair, IPv4)"
    local r kind mtu res rounds=${BENCH_GUEST_ROUNDS:-2}
    rm -f "$log/guests.txt"
    { bash "$top/tests/lab/setup.sh" && bash "$top/scripts/build-guest.sh"; } \
        >"$log/guests-build.log" 2>&1 ||
        { tail -n 30 "$log/guests-build.log"; echo "bench: guest set-up failed"; return 1; }
    for mtu in ${BENCH_GUEST_MTUS:-1500 9000}; do
        for r in $(seq "$rounds"); do
            for kind in rxe vrdma; do
                res=$log/guests-$kind-$mtu-$r
                rm -rf "$res"
                LAB_NIC_MTU=$mtu LAB_DRV_AS=$([ $kind = rxe ] && echo rxe) timeout 1200 \
                    /usr/bin/python3 "$top/tests/lab/lab.py" driver --results "$res" \
                    -k '^driver/vv/v4-(write_bw|send_lat|rc_pingpong)$' >"$res.log" 2>&1
                grep -E '^(PASS|FAIL) driver/vv/v4-' "$res/results.txt" 2>/dev/null |
                    sed "s/^/$kind $mtu $r /" >> "$log/guests.txt"
            done
        done
    done
    echo "log: $log/guests.txt"
}

# Instructions are counted, not timed: the figures do not depend on the
# host's speed or load (the CPU is printed all the same).
run_insns() {
    echo "== guest instructions (bench/guest_insns.py)"
    rm -f "$log/insns.txt"
    { bash "$top/scripts/build.sh" --plugins && bash "$top/tests/lab/setup.sh" &&
      bash "$top/scripts/build-guest.sh"; } >"$log/insns-build.log" 2>&1 ||
        { tail -n 30 "$log/insns-build.log"; echo "bench: insns set-up failed"; return 1; }
    timeout 3600 /usr/bin/python3 "$top/bench/guest_insns.py" \
        --results "$top/build/lab/results/insns-$(date +%Y%m%d-%H%M%S)" >"$log/insns.txt" 2>&1 ||
        { tail -n 30 "$log/insns.txt"; echo "bench: guest_insns failed ($log/insns.txt)"; return 1; }
    echo "log: $log/insns.txt"
}

for b in $benches; do
    case $b in
    core)   run_core || rc=1 ;;
    device) run_device || rc=1 ;;
    guests) run_guests || rc=1 ;;
    insns)  run_insns || rc=1 ;;
    *) echo "bench.sh: unknown benchmark $b" >&2; exit 2 ;;
    esac
done

echo
echo "== summary ($(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1);" \
     "load average $(cut -d' ' -f1-3 /proc/loadavg))"
for b in $benches; do
    case $b in
    core)
        [ -f "$log/core.log" ] && sed -n '/^== core-bench summary/,$p' "$log/core.log" | tail -n +2 ;;
    device)
        [ -f "$log/device.log" ] &&
            grep -E '^(virtio-rdma-bench:|rdma:|udp:|ratio:|        retransmits|        UDP datagrams|        CPU: QEMU)' "$log/device.log" ;;
    guests)
        [ -f "$log/guests.txt" ] && python3 "$top/scripts/bench_guests.py" "$log/guests.txt" ;;
    insns)
        [ -f "$log/insns.txt" ] && sed -n '/^device /,$p' "$log/insns.txt" ;;
    esac
done
exit $rc
