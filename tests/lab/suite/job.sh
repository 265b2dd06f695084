#!/bin/bash
# The lab suite part's job in a guest (lab.run=/lab/suite/job.sh): rdma-core's
# test suite on this guest's one RDMA device (LAB_DEV: rxe0 or vrdma0),
# through the suite build's own libibverbs, providers and pyverbs (IN_PLACE:
# its etc/libibverbs.d and lib/), all from one rdma-core source.
# /out/suite.env (written by tests/lab/test_suite.py) sets SUITE_BUILD (the build
# directory), SUITE_SRC (rdma-core's source), SUITE_ONLY (regex on test ids,
# may be empty) and SUITE_TEST_TMO (seconds per test).
# Out: /out/results.jsonl (tests/lab/suite/runner.py), runner.log, env.txt,
# dmesg.txt, job.rc.
. /out/suite.env
B=$SUITE_BUILD
{
    echo "kernel: $(uname -r)"
    echo "device: $LAB_DEV"
    echo "rdma-core: $(cat "$SUITE_SRC/.virtio-rdma-source" 2>/dev/null)"
    echo "python: $(/usr/bin/python3 --version 2>&1)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
    "$B/bin/ibv_devinfo" -v -d "$LAB_DEV" 2>&1
    rdma link show 2>&1
    ip -br addr show 2>&1
} > /out/env.txt
only=()
[ -n "$SUITE_ONLY" ] && only=(--only "$SUITE_ONLY")
PYTHONPATH=$B/python /usr/bin/python3 /lab/suite/runner.py --src "$SUITE_SRC/tests" \
    --dev "$LAB_DEV" --out /out/results.jsonl --tmo "$SUITE_TEST_TMO" "${only[@]}" \
    > /out/runner.log 2>&1
rc=$?
dmesg > /out/dmesg.txt
echo $rc > /out/job.rc
sync
