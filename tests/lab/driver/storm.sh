#!/bin/bash
# Runs inside a lab guest (cwd /out): the control-queue storm of
# test_driver.py (Storm).  /out/env: STORM (the program, a host-root path)
# and ARGS (its arguments after the device).  Out: storm.out (its TAP),
# storm.rc, dmesg.txt.
. /out/env
"$STORM" "${LAB_DEV:-none}" $ARGS > storm.out 2>&1
echo $? > storm.rc
dmesg > dmesg.txt
