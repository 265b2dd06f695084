#!/usr/bin/env bash
# Builds the interop peer tests/qtest/virtio-rdma-lab-peer.c.  Once the glue
# lists it among QEMU's qtests it is build/qemu/tests/qtest/virtio-rdma-lab-peer
# (built here through ninja); until then it is compiled and linked like
# virtio-rdma-dp-test (same flags, same libqos objects) into build/lab/.
# Prints the path of the binary.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
bq=${LAB_QEMU_BUILD:-$top/build/qemu}
out=${LAB_BUILD:-$top/build/lab}/virtio-rdma-lab-peer
log=${LAB_BUILD:-$top/build/lab}/build-peer.log
mkdir -p "$(dirname "$out")"
if grep -q "virtio-rdma-lab-peer" "$bq/build.ninja" 2>/dev/null; then
    timeout 1800 ninja -C "$bq" tests/qtest/virtio-rdma-lab-peer >"$log" 2>&1 ||
        { tail -n 30 "$log" >&2; exit 1; }
    echo "$bq/tests/qtest/virtio-rdma-lab-peer"
    exit 0
fi
# QEMU, the libqos objects and virtio-rdma-dp-test (whose recipe we reuse).
BUILD_TARGETS="tests/qtest/virtio-rdma-dp-test" timeout 3600 bash "$top/scripts/build.sh" >"$log" 2>&1 ||
    { tail -n 30 "$log" >&2; echo "build-peer: scripts/build.sh failed ($log)" >&2; exit 1; }
src=$top/tests/qtest/virtio-rdma-lab-peer.c
obj=$out.o
cc=$(python3 - "$bq" <<'PY'
import json, sys
for e in json.load(open(sys.argv[1] + '/compile_commands.json')):
    if e['file'].endswith('/virtio-rdma-dp-test.c'):
        print(e['command']); break
PY
)
[ -n "$cc" ] || { echo "build-peer: no compile command for virtio-rdma-dp-test.c" >&2; exit 1; }
cc=${cc/ -MD -MQ*-MF * -o / -o }
cc=${cc% -c *}
link=$(ninja -C "$bq" -t commands tests/qtest/virtio-rdma-dp-test | tail -n 1)
case $link in *" -o tests/qtest/virtio-rdma-dp-test "*) ;; *) echo "build-peer: unexpected link recipe" >&2; exit 1;; esac
if [ ! -x "$out" ] || [ "$src" -nt "$out" ] || [ "$bq/tests/qtest/virtio-rdma-dp-test" -nt "$out" ]; then
    # A copy, so that its quoted includes resolve in QEMU's tree (the
    # overlay's libqos headers include their neighbours there).
    mkdir -p "$(dirname "$out")/peer-src"
    cp "$src" "$(dirname "$out")/peer-src/"
    src=$(dirname "$out")/peer-src/virtio-rdma-lab-peer.c
    (cd "$bq" && eval "${cc/ -o */ -o $obj} -c $src") >>"$log" 2>&1 ||
        { tail -n 30 "$log" >&2; echo "build-peer: compile failed" >&2; exit 1; }
    l=${link/ -o tests\/qtest\/virtio-rdma-dp-test / -o $out }
    l=${l/tests\/qtest\/virtio-rdma-dp-test.p\/virtio-rdma-dp-test.c.o/$obj}
    (cd "$bq" && eval "$l") >>"$log" 2>&1 ||
        { tail -n 30 "$log" >&2; echo "build-peer: link failed" >&2; exit 1; }
fi
echo "$out"
