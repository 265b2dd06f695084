#!/usr/bin/env bash
# The lab tier's parts still in bash (the others -- baseline, mux -- are on
# the Python frame: tests/lab/README.rst): unmodified rdma-core / perftest
# tools on Debian's kernel rxe (TCG guests) against our virtio-rdma device, and
# guests on our device through our driver (virtio_rdma.ko + provider), and
# the same guests defined and started by a real libvirtd (libvirt), NVMe over
# RDMA between guests on our device and on rxe (nvme), rdma-core's own test
# suite on our device and on rxe (suite), the device with backend=ibverbs on
# a guest's rxe, nested (ibverbs), and, on demand, what rxe does with memory
# windows (rxe-mw).
#   tests/lab/run.sh [PART...]     PART: interop driver libvirt nvme suite
#                                  ibverbs rxe-mw (default: interop)
#   LAB_KERNEL=6.12 tests/lab/run.sh ...   the guests on Debian's 6.12 kernel
#                                  (tests/lab/setup.sh with the same LAB_KERNEL)
#   LAB_QUICK=1 tests/lab/run.sh ...       each part's quick cases only (what the
#                                  CI runs; scripts/test.sh: tier lab, and
#                                  lab-thorough for every case)
# Ends with "lab: N passed, N failed"; exit status non-zero on any failure.
# Results under build/lab/results/<time>/ (report.txt: the figures).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lab/lib.sh"
. "$top/tests/lab/tools.sh"
. "$top/tests/lab/interop.sh"
. "$top/tests/lab/driver.sh"
. "$top/tests/lab/nvme.sh"
. "$top/tests/lab/suite.sh"
. "$top/tests/lab/ibverbs.sh"
. "$top/tests/lab/rxe-mw.sh"

passed=0 failed=0
lab_result() { # RESULT NAME DETAILS
    printf '%-4s %-32s %s\n' "$1" "$2" "$3"
    echo "$1 $2 $3" >> "$RES/results.txt"
    if [ "$1" = PASS ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
}

RES=${LAB_RESULTS:-$LAB/results/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$RES"; : > "$RES/results.txt"
lab_check_prereqs
LAB_SOCKDIR=$(mktemp -d /tmp/lab-qmp.XXXXXX)
# The libvirt part's daemons, domains and namespace go on any exit; a
# signal (timeout(1)) becomes an exit so that this runs.
trap 'rm -rf "$LAB_SOCKDIR"' EXIT
trap 'exit 143' TERM INT
echo "lab: guest kernel $LAB_KVER ($LAB)"
parts=${*:-interop}
for p in $parts; do
    t0=$(date +%s)
    case $p in
    interop)  lab_interop "$RES/interop" ;;
    driver)   lab_driver "$RES/driver" ;;
    nvme)     lab_nvme "$RES/nvme" ;;
    suite)    lab_suite "$RES/suite" ;;
    ibverbs)  lab_ibverbs "$RES/ibverbs" ;;
    rxe-mw)   lab_rxe_mw "$RES/rxe-mw" ;;
    *) lab_die "unknown part $p" ;;
    esac
    echo "lab: part $p took $(( $(date +%s) - t0 )) s" | tee -a "$RES/timings.txt"
done
python3 "$top/tests/lab/report.py" "$RES/results.txt" > "$RES/report.txt" 2>&1
echo; cat "$RES/report.txt"; echo "(results: $RES)"
echo "lab: $passed passed, $failed failed"
[ "$failed" = 0 ]
