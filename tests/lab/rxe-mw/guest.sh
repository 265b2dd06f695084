#!/bin/sh
# Lab guest job of the rxe-mw part (tests/lab/test_rxe_mw.py): the probe on this
# guest's rxe0 in the mode /out/mode names.  "facts" writes its verdicts to
# /out/results; the double-invalidation modes write their steps to
# /out/probe.log, and the host reads the console for the oops.
. /out/env
mode=$(cat /out/mode)
if [ "$mode" = facts ]; then
    timeout 120 "$PROBE" facts > /out/results 2> /out/probe.err
else
    timeout 120 "$PROBE" "$mode" > /out/probe.log 2>&1
fi
echo "exit $?" >> /out/probe.err
