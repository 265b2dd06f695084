#!/bin/bash
# Lab guest job (the device's side) of the ibverbs part's interop: for each
# line of /out/peer-cases, "ROLE NAME TIMEOUT PEER-ARGS...", our device in a
# nested QEMU (backend=ibverbs on this guest's rxe0) is the tools' far end,
# driven by virtio-rdma-lab-peer; the tools run in the other guest, which
# walks the same list (guest-cases.sh).  Per case NAME.peer and NAME.peer.rc.
. /out/env
cd /out || exit 1
while read -r role name tmo args; do
    [ -z "$role" ] && continue
    QTEST_QEMU_BINARY=$QEMU QVRDMA_IBDEV=rxe0 timeout -k 5 "$tmo" \
        "$PEER" --role "$role" $args > "$name.peer" 2>&1
    echo $? > "$name.peer.rc"
done < /out/peer-cases
