#!/usr/bin/env bash
# Run every test tier and end with one summary line "N passed, N failed".
#   unit      GoogleTest on the C++ core, plain (gcc) and under ASan/UBSan
#             (clang: the build the core's fuzz targets come from)
#   fuzz      libFuzzer on the core, and on the whole device through
#             QEMU's generic-fuzz (the qtest-san tier's QEMU build)
#   lab       Linux rxe in TCG guests + rdma-core/perftest tools vs our device,
#             guests on our device through our driver (module + provider),
#             two such guests run by a real libvirtd from domain XML,
#             NVMe over RDMA, and rdma-core's own test suite
#   qtest     the libqos driver tests, the data-path tests (loopback and two
#             QEMUs over -netdev dgram; the engine in the main loop, then in
#             an iothread, then with ioeventfd off), issue 10's safety and
#             guest-memory regressions and the demo against QEMU, plain and
#             under ASan/UBSan (clang, the fuzz tier's build; there without
#             the ioeventfd-off runs)
# Builds what is missing first (incremental).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/config.sh"

passed=0 failed=0 skipped=0
failures=() details=()
log=$top/build/test-logs
mkdir -p "$log"

# Count one tier from a log in TAP ("ok"/"not ok") form.
count_tap() {
    local name=$1 file=$2 rc=$3 p f s
    p=$(grep -E '^ *ok [0-9]+' "$file" | grep -cv '# SKIP' || true)
    s=$(grep -E '^ *ok [0-9]+' "$file" | grep -c '# SKIP' || true)
    f=$(grep -cE '^ *not ok [0-9]+' "$file" || true)
    if [ "$rc" != 0 ] && [ "$f" = 0 ]; then f=1; fi   # crashed or hung
    if [ "$p" = 0 ] && [ "$f" = 0 ]; then f=1; fi     # ran nothing: a failure
    echo "$name: $p passed, $f failed, $s skipped"
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
    [ "$f" = 0 ] || failures+=("$name (see $file)")
    # What failed, for the summary at the very end (CI shows the tail).
    [ "$f" = 0 ] || details+=("$(failure_lines "$file" | head -n 16 | sed "s/^/  $name: /")")
}

# failure_lines FILE: each "not ok" line of a TAP log with the two "# "
# lines before it (where KTAP and GLib say why), and the lines that tell
# of a crash, an exit status or a failed assertion.
failure_lines() {
    awk 'function said(l) { if (l != "") print substr(l, 1, 240) }
         /^ *not ok [0-9]+/ { said(h2); said(h1); print; h1 = h2 = ""; next }
         /^# EXIT |ERROR:|Bail out|Assertion .* failed|encountered exit status/ {
             print; h1 = h2 = ""; next }
         /^ *# / { h2 = h1; h1 = $0; next }
         { h1 = h2 = "" }' "$1"
}

# run_unit NAME BDIR SETUP: the unit suite of a meson build of the core
# that the function SETUP (scripts/config.sh) sets up in BDIR.
run_unit() {
    local name=$1 bdir=$2 setup=$3
    echo "== $name"
    meson_dir "$bdir" "$setup" "$bdir" >"$log/$name-setup.log" 2>&1 ||
        { cat "$log/$name-setup.log"; failed=$((failed + 1)); failures+=("$name setup"); return; }
    ninja -C "$bdir" -j "$JOBS" >"$log/$name-build.log" 2>&1 ||
        { tail -n 40 "$log/$name-build.log"; failed=$((failed + 1)); failures+=("$name build"); return; }
    local rc=0 p f
    meson test -C "$bdir" --suite unit --verbose --num-processes "$JOBS" >"$log/$name.log" 2>&1 || rc=1
    # Count test cases from GoogleTest's own summaries.
    p=$(sed -nE 's/^\[  PASSED  \] ([0-9]+) tests?.*/\1/p' "$log/$name.log" | awk '{s+=$1} END {print s+0}')
    f=$(sed -nE 's/^\[  FAILED  \] ([0-9]+) tests?, listed below.*/\1/p' "$log/$name.log" | awk '{s+=$1} END {print s+0}')
    p=${p:-0} f=${f:-0}
    if [ "$rc" != 0 ] && [ "$f" = 0 ]; then f=1; fi
    if [ "$p" = 0 ] && [ "$f" = 0 ]; then f=1; fi
    echo "$name: $p passed, $f failed"
    passed=$((passed + p)); failed=$((failed + f))
    [ "$f" = 0 ] || { grep -E '^\[  FAILED  \]' "$log/$name.log" | sort -u; failures+=("$name (see $log/$name.log)"); }
}

# qtest_build NAME: the QEMU and the qtest binaries of tier NAME.
qtest_build() {
    local name=$1
    BUILD_TARGETS="tests/qtest/qos-test tests/qtest/virtio-rdma-demo tests/qtest/virtio-rdma-dp-test tests/qtest/virtio-rdma-ring-test tests/qtest/virtio-rdma-mem-test tests/qtest/virtio-rdma-safety-test" \
        bash "$top/scripts/build.sh" $([ "$name" = qtest-san ] && echo --san) >"$log/$name-build.log" 2>&1 ||
        { tail -n 40 "$log/$name-build.log"; failed=$((failed + 1)); failures+=("$name build"); return 1; }
}

# qrun LOG SECONDS [VAR=VALUE...] BINARY ARGS...: one qtest binary, its TAP
# appended to LOG; a non-zero exit (a failure, a crash, the timeout) is
# written there too, so the summary can name the binary and its settings.
qrun() {
    local file=$1 secs=$2 rc cmd; shift 2
    timeout "$secs" env "$@" >>"$file" 2>&1
    rc=$? cmd="$*"
    [ "$rc" = 0 ] || echo "# EXIT $rc$([ "$rc" = 124 ] && echo ' (timed out)'): ${cmd%% --tap*}" >>"$file"
    return "$rc"
}

# qtest_runs NAME BDIR: every qtest binary of tier NAME into $log/NAME.log;
# the exit status (non-zero: one of them failed, crashed or hung) also in
# $log/NAME.rc, for a run in the background.
qtest_runs() {
    local name=$1 bdir=$2 qos_path rc=0 f t
    f=$log/$name.log t=$bdir/tests/qtest
    export QTEST_QEMU_BINARY=$bdir/qemu-system-x86_64
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
    : >"$f"
    # Every qos path that ends in virtio-rdma (the graph finds them; pc and q35).
    for qos_path in $("$t/qos-test" -l 2>/dev/null | grep "^/.*virtio-rdma" | sed 's#/[^/]*$##' | sort -u); do
        qrun "$f" 600 "$t/qos-test" --tap -k -p "$qos_path" || rc=1
    done
    qrun "$f" 300 "$t/virtio-rdma-demo" --tap -k || rc=1
    qrun "$f" 900 "$t/virtio-rdma-dp-test" --tap -k || rc=1
    # The same data-path tests with the engine in an iothread, off the BQL.
    qrun "$f" 900 QVRDMA_IOTHREAD=1 "$t/virtio-rdma-dp-test" --tap -k || rc=1
    # Queues in guest memory and doorbells (VIRTIO_RDMA_F_RINGS), both placements.
    qrun "$f" 300 "$t/virtio-rdma-ring-test" --tap -k || rc=1
    qrun "$f" 300 QVRDMA_IOTHREAD=1 "$t/virtio-rdma-ring-test" --tap -k || rc=1
    # Issue 10's regressions (no hang, bounded memory), in both placements.
    qrun "$f" 1800 "$t/virtio-rdma-safety-test" --tap -k || rc=1
    qrun "$f" 1800 QVRDMA_IOTHREAD=1 "$t/virtio-rdma-safety-test" --tap -k || rc=1
    # Kicks as trapped writes instead of eventfds (ioeventfd is on by
    # default).  Not again under the sanitizers: only the kick's way in
    # differs, and the fuzz tier's -noioeventfd configurations run it under
    # ASan/UBSan (this saves the CI budget about 5 minutes).
    if [ "$name" != qtest-san ]; then
        qrun "$f" 900 QVRDMA_IOEVENTFD=off "$t/virtio-rdma-dp-test" --tap -k || rc=1
        qrun "$f" 1800 QVRDMA_IOEVENTFD=off "$t/virtio-rdma-safety-test" --tap -k || rc=1
    fi
    # Guest memory: RAM only, and only while it is guest memory there (both placements).
    qrun "$f" 300 "$t/virtio-rdma-mem-test" --tap -k || rc=1
    qrun "$f" 300 QVRDMA_IOTHREAD=1 "$t/virtio-rdma-mem-test" --tap -k || rc=1
    echo "$rc" > "$log/$name.rc"
    return "$rc"
}

run_qtest() {
    local name=$1 bdir=$2
    echo "== $name"
    qtest_build "$name" || return
    qtest_runs "$name" "$bdir"
    count_tap "$name" "$log/$name.log" "$(cat "$log/$name.rc")"
}

# Both qtest tiers side by side: each keeps about one of the two cores
# busy (dp-test 80 %, safety-test 90 % of one core, mostly the qtest
# socket's system calls), so together they take about the time of the
# longer one.  Both QEMUs are built first, so no build competes with a
# test.  Every test picks its own ports, sockets and network namespace.
run_qtest_pair() {
    local san_pid
    echo "== qtest + qtest-san (side by side)"
    qtest_build qtest || { run_qtest qtest-san "$BUILD_QEMU_SAN"; return; }
    qtest_build qtest-san || { run_qtest qtest "$BUILD_QEMU"; return; }
    (qtest_runs qtest-san "$BUILD_QEMU_SAN") &
    san_pid=$!
    qtest_runs qtest "$BUILD_QEMU"
    wait "$san_pid"
    count_tap qtest "$log/qtest.log" "$(cat "$log/qtest.rc")"
    count_tap qtest-san "$log/qtest-san.log" "$(cat "$log/qtest-san.rc")"
}

# Debian's kernel rxe in TCG guests with unmodified rdma-core / perftest
# tools, against each other and against our device; then guests whose RDMA
# device is ours, through our driver, and the same with libvirtd managing
# them, NVMe over RDMA, rdma-core's own test suite, and the device with
# backend=ibverbs on a guest's rxe, rdmacm-mux on a guest's rxe.
# run_lab NAME: the lab's meson suites (tests/lab/README.rst): tier "lab"
# (the CI's) suite lab-quick, the quick cases; "lab-thorough" suite lab,
# every case.  Each part on each of its kernels is one meson test; the
# kernel matrix and each part's quick cases are in tests/lab (meson.build's
# table, @quick beside the cases).  KTAP per case in meson's test log.
run_lab() {
    local name=$1 suite=lab rc=0 out=$log/$1.log
    echo "== $name"
    [ "$name" = lab ] && suite=lab-quick
    { timeout 900 bash "$top/tests/lab/setup.sh" &&
      LAB_KERNEL=6.12 timeout 900 bash "$top/tests/lab/setup.sh" &&
      timeout 900 bash "$top/scripts/build-guest.sh" &&
      timeout 2400 bash "$top/scripts/build-suite.sh" &&
      meson_dir "$BUILD_UNIT" unit_setup "$BUILD_UNIT" && ninja -C "$BUILD_UNIT" -j "$JOBS" &&
      timeout 5400 meson test -C "$BUILD_UNIT" --no-rebuild --suite "$suite" --num-processes 1 &&
      grep -q . "$BUILD_UNIT/meson-logs/testlog.txt"; } >"$out" 2>&1 || rc=1
    cat "$BUILD_UNIT/meson-logs/testlog.txt" >>"$out" 2>/dev/null
    grep -E '^ *(not )?ok [0-9]+ ' "$out" | sed 's/^ */  /'
    # meson's line a part and kernel: its verdict, time and subtest count.
    grep -E '^ *[0-9]+/[0-9]+ +lab-' "$out" | sed 's/^ */  /'
    count_tap "$name" "$out" "$rc"
}

# libFuzzer (clang, ASan, UBSan) over the core (tests/fuzz) and over the
# whole device in QEMU (generic-fuzz, four configurations): a fixed number
# of inputs from seed 1 after the committed regression inputs, so a run is
# repeatable; one test per fuzz target or configuration (scripts/fuzz.sh).
run_fuzz() {
    echo "== fuzz"
    local p f rc=0
    FUZZ_RUNS=${FUZZ_RUNS:-10000} bash "$top/scripts/fuzz.sh" >"$log/fuzz.log" 2>&1 || rc=1
    p=$(grep -c '^fuzz: .* passed$' "$log/fuzz.log" || true)
    f=$(grep -c '^fuzz: .* FAILED' "$log/fuzz.log" || true)
    if [ "$rc" != 0 ] && [ "$f" = 0 ]; then f=1; fi   # a build failed
    if [ "$p" = 0 ] && [ "$f" = 0 ]; then f=1; fi
    echo "fuzz: $p passed, $f failed"
    passed=$((passed + p)); failed=$((failed + f))
    [ "$f" = 0 ] || { tail -n 40 "$log/fuzz.log"; failures+=("fuzz (see $log/fuzz.log)"); }
}

tiers=${TIERS:-unit unit-san qtest qtest-san fuzz lab}
both_qtest=0
[[ " $(echo $tiers) " == *" qtest "* && " $(echo $tiers) " == *" qtest-san "* ]] && both_qtest=1
# Each tier's wall time, in the summary: the CI's budget is watched there.
times=()
for t in $tiers; do
    t0=$SECONDS
    if [ $both_qtest = 1 ]; then
        case $t in
        qtest) run_qtest_pair; times+=("qtest+qtest-san $((SECONDS - t0)) s"); continue ;;
        qtest-san) continue ;;
        esac
    fi
    case $t in
    unit)      run_unit unit "$BUILD_UNIT" unit_setup ;;
    unit-san)  run_unit unit-san "$BUILD_UNIT_SAN" unit_san_setup ;;
    qtest)     run_qtest qtest "$BUILD_QEMU" ;;
    qtest-san) run_qtest qtest-san "$BUILD_QEMU_SAN" ;;
    fuzz)      run_fuzz ;;
    lab | lab-thorough) run_lab "$t" ;;
    *) echo "test.sh: unknown tier $t" >&2; exit 2 ;;
    esac
    times+=("$t $((SECONDS - t0)) s")
done

echo "time: $(IFS=,; echo "${times[*]}" | sed 's/,/, /g')"

[ ${#failures[@]} = 0 ] || printf 'FAILED: %s\n' "${failures[@]}"
[ ${#details[@]} = 0 ] || printf '%s\n' "${details[@]}"
echo "tests: $passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
