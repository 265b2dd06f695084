# rdma-core's own test suite (tests/ of subprojects/rdma-core: pyverbs'
# unittest suite, the source our provider is built from) in two guests of
# one run, at the same time: one on kernel rxe (rxe0), one on virtio-rdma-pci
# through our module (vrdma0).  Each guest runs the suite alone on its one
# device (loopback QPs, as rdma-core's CI runs it on rxe), with the suite
# build's own libibverbs, rxe and virtio_rdma providers and pyverbs
# (scripts/build-suite.sh: build/guest/rdma-core-suite).
# tests/lab/suite/runner.py records each test's outcome;
# tests/lab/suite/table.py puts the two side by side (RESULTDIR/table.txt,
# differences.txt) and judges:
#   suite/ran-rxe, suite/ran-vrdma   the suite ran on each side
#   suite/rxe-pass-is-vrdma-pass    every test passing on rxe passes on
#                                   vrdma, or is skipped there for a reason
#                                   tests/lab/suite/expected-vrdma.txt names
#   suite/vrdma-no-failures         no test fails, hangs or crashes on vrdma
#   suite/expected-list-current     every entry of that list still explains
#                                   a difference
# plus each guest's kernel log (suite/{rxe,vrdma}-kernel).
# The whole suite (321 tests of rdma-core 56.1) takes about a minute per
# guest under TCG: CI runs all of it.
# Sourced; lab_suite RESULTDIR.
#   LAB_SUITE_ONLY   regex on test ids (e.g. 'test_qp\.|test_rdmacm'); the
#                    differences are then judged on those tests only
#   LAB_SUITE_TMO    seconds a guest may take (default 900)
#   LAB_SUITE_TEST_TMO  seconds one test may take (default 120; the slowest
#                    takes about 1 s): longer is a hang, recorded as timeout
#   LAB_SUITE_BUILD  the suite build (default build/guest/rdma-core-suite)
# shellcheck shell=bash
LAB_SUITE_TMO=${LAB_SUITE_TMO:-900}
LAB_SUITE_TEST_TMO=${LAB_SUITE_TEST_TMO:-120}

lab_suite() {
    local dir=$1 b s ko side pr pv gr gv
    b=${LAB_SUITE_BUILD:-$top/build/guest/rdma-core-suite}
    s=$top/subprojects/rdma-core
    ko=${LAB_DRV_KO:-$top/build/guest/$LAB_KVER/virtio_rdma.ko}
    [ -x "$b/bin/run_tests.py" ] && ls "$b"/python/pyverbs/device.*.so >/dev/null 2>&1 ||
        { lab_result FAIL suite/build "no pyverbs suite build in $b (scripts/build-suite.sh)"; return; }
    [ -f "$ko" ] || { lab_result FAIL suite/module "no $ko (scripts/build-guest.sh)"; return; }
    rm -rf "$dir"
    for side in rxe vrdma; do
        mkdir -p "$dir/$side"
        printf 'SUITE_BUILD=%q\nSUITE_SRC=%q\nSUITE_ONLY=%q\nSUITE_TEST_TMO=%q\n' \
            "$b" "$s" "${LAB_SUITE_ONLY:-}" "$LAB_SUITE_TEST_TMO" > "$dir/$side/suite.env"
    done
    # Each guest alone on its link: eth0 sends to a UDP port nobody reads.
    pr=$(lab_free_port udp); pv=$(lab_free_port udp)
    LAB_VRDMA=0 lab_guest_start "$dir/rxe" "$LAB_SUITE_TMO" \
        "lab.ip=10.78.0.1/24 lab.rdma=rxe lab.run=/lab/suite/job.sh" \
        "$(lab_dgram "$pr" "$(lab_free_port udp)")" 52:54:00:78:00:01
    gr=$LAB_PID
    LAB_VRDMA=1 lab_guest_start "$dir/vrdma" "$LAB_SUITE_TMO" \
        "lab.ip=10.78.0.2/24 lab.rdma=vrdma lab.ko=$ko lab.run=/lab/suite/job.sh" \
        "$(lab_dgram "$pv" "$(lab_free_port udp)")" 52:54:00:78:00:02
    gv=$LAB_PID
    wait "$gr"; wait "$gv"
    for side in rxe vrdma; do
        [ "$(cat "$dir/$side/job.rc" 2>/dev/null)" = 0 ] ||
            lab_result FAIL "suite/job-$side" "the suite's job did not finish (rc $(cat "$dir/$side/job.rc" 2>/dev/null || echo none); $dir/$side/runner.log, console.log)"
    done
    local line
    while read -r line; do
        lab_result "${line%% *}" "$(echo "$line" | cut -d' ' -f2)" "$(echo "$line" | cut -d' ' -f3-)"
    done < <(python3 "$top/tests/lab/suite/table.py" "$dir/rxe/results.jsonl" "$dir/vrdma/results.jsonl" \
                 "$top/tests/lab/suite/expected-vrdma.txt" "$dir" 2> "$dir/table.err" ||
             echo "FAIL suite/table table.py failed: $(tail -n 1 "$dir/table.err")")
    for side in rxe vrdma; do lab_drv_kernel_check "suite/$side-kernel" "$dir/$side"; done
    sed -n '$p' "$dir/table.txt" 2>/dev/null
}
