#!/usr/bin/env bash
# Build the libFuzzer targets (tests/fuzz) with clang, ASan and UBSan in
# build/fuzz, then fuzz each for a while: first the committed inputs
# (tests/fuzz/corpus/<target>: each once found a bug, or reaches code that
# random bytes rarely do), then new ones.  Inputs that reach new code go to
# build/fuzz-corpus/<target>; a crash leaves its input in build/fuzz-logs
# (add it to tests/fuzz/corpus once fixed) and fails the script.
#
#   scripts/fuzz.sh               60 s per target
#   scripts/fuzz.sh 600           10 minutes per target
#   FUZZ_RUNS=20000 scripts/fuzz.sh
#                                 a fixed number of inputs, seed 1: the same
#                                 inputs every time (what the test tier runs)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/config.sh"

seconds=${1:-60}
build=${BUILD_FUZZ:-$top/build/fuzz}
corpus=$top/build/fuzz-corpus
logs=$top/build/fuzz-logs
mkdir -p "$corpus" "$logs"

command -v clang++ >/dev/null ||
    { echo "fuzz: clang++ not found (scripts/deps.sh installs clang)"; exit 1; }
if [ ! -f "$build/build.ninja" ]; then
    CC=clang CXX=clang++ meson setup "$build" "$top" -Dfuzz=true \
        -Db_sanitize=address,undefined -Db_lundef=false -Dwerror=false \
        --buildtype=debugoptimized \
        -Dcpp_args="-fsanitize=fuzzer-no-link -fno-sanitize-recover=undefined" \
        >"$logs/setup.log" 2>&1 ||
        { tail -n 30 "$logs/setup.log"; echo "fuzz: set-up failed"; exit 1; }
fi
ninja -C "$build" -j "$JOBS" tests/fuzz/fuzz-engine >"$logs/build.log" 2>&1 ||
    { tail -n 30 "$logs/build.log"; echo "fuzz: build failed"; exit 1; }

rc=0
for target in fuzz-engine; do
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
    if ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
       UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
       "$build/tests/fuzz/$target" "${limit[@]}" -max_len=4096 \
           -artifact_prefix="$logs/$target-" "$corpus/$target" \
           "$top/tests/fuzz/corpus/$target" \
           >"$logs/$target.log" 2>&1; then
        grep -E "#[0-9]+.*DONE" "$logs/$target.log" | tail -n 1
        echo "fuzz: $target passed"
    else
        tail -n 40 "$logs/$target.log"
        echo "fuzz: $target FAILED (log: $logs/$target.log)"
        rc=1
    fi
done
exit $rc
