# Host-side helpers of the lab tier (sourced by run.sh and the stage scripts).
# shellcheck shell=bash
top=${top:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
. "$top/tests/lab/kernel.sh"   # LAB: build/lab (6.1) or build/lab-<LAB_KERNEL>
QEMU_BUILT=${LAB_QEMU:-$top/build/qemu/qemu-system-x86_64}
QEMU=$QEMU_BUILT
LAB_MEM=${LAB_MEM:-512}

lab_die() { echo "lab: FAILED: $*" >&2; exit 1; }

lab_check_prereqs() {
    [ -x "$QEMU_BUILT" ] || lab_die "$QEMU_BUILT missing (bash scripts/build.sh)"
    [ -f "$LAB/vmlinux" ] && [ -f "$LAB/initrd.img" ] || lab_die "no kernel/initramfs in $LAB (tests/lab/setup.sh)"
    [ "$top/tests/lab/guest-init.sh" -nt "$LAB/initrd.img" ] &&
        lab_die "$LAB/initrd.img is older than tests/lab/guest-init.sh (tests/lab/setup.sh)"
    LAB_KVER=$(cat "$LAB/kver")
    # A snapshot of the binary (a hard link: a relink by a concurrent build
    # makes a new file and leaves ours alone); firmware from the build's
    # qemu-bundle, which QEMU looks for next to its binary.
    [ -d "$(dirname "$QEMU_BUILT")/qemu-bundle" ] || lab_die "no qemu-bundle next to $QEMU_BUILT"
    mkdir -p "$LAB/bin"
    rm -f "$LAB/bin/qemu-system-x86_64"
    ln "$QEMU_BUILT" "$LAB/bin/qemu-system-x86_64" 2>/dev/null || cp "$QEMU_BUILT" "$LAB/bin/qemu-system-x86_64"
    ln -sfn "$(cd "$(dirname "$QEMU_BUILT")" && pwd)/qemu-bundle" "$LAB/bin/qemu-bundle"
    QEMU=$LAB/bin/qemu-system-x86_64
    timeout 30 "$QEMU" -version >/dev/null || lab_die "$QEMU does not run"
}

# A free TCP or UDP port on 127.0.0.1.
lab_free_port() {
    python3 -c 'import socket,sys; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM if sys.argv[1]=="udp" else socket.SOCK_STREAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' "${1:-tcp}"
}

# dgram netdev options from local port $1 to remote port $2 (127.0.0.1).
lab_dgram() {
    echo "dgram,local.type=inet,local.host=127.0.0.1,local.port=$1,remote.type=inet,remote.host=127.0.0.1,remote.port=$2"
}

# lab_guest_start OUTDIR TIMEOUT APPEND NETDEV0 MAC0 [NETDEV1]
# Boots one guest in the background (TCG, LAB_SMP vCPUs, default 1): eth0 =
# virtio-net on NETDEV0 (the RoCE link) with MAC0, eth1 = virtio-net on NETDEV1 if given.
# Console -> OUTDIR/console.log; sets LAB_PID.
# With LAB_VRDMA=1, eth0 is function 0 of slot 4 and our virtio-rdma-pci
# function 1 (plus LAB_VRDMA_OPTS, e.g. queue-size=1024), and QEMU has a QMP
# socket: its path in LAB_QMP.
lab_guest_start() {
    local out=$1 tmo=$2 append=$3 nd0=$4 mac0=$5 nd1=${6:-}
    local nic1=() rdma=() mf="" smp=${LAB_SMP:-1} thread=single
    # A guest that runs alone may take both host cores (LAB_SMP=2): one
    # TCG thread per vCPU.
    [ "$smp" -gt 1 ] && thread=multi
    mkdir -p "$out"
    [ -n "$nd1" ] && nic1=(-netdev "$nd1,id=n1" -device "virtio-net-pci,netdev=n1,mac=52:54:00:00:99:01,addr=05.0")
    LAB_QMP=
    if [ "${LAB_VRDMA:-0}" = 1 ]; then
        # A short path: sun_path holds 108 bytes, result directories may not.
        [ -n "${LAB_SOCKDIR:-}" ] || LAB_SOCKDIR=$(mktemp -d /tmp/lab-qmp.XXXXXX)
        LAB_QMP=$LAB_SOCKDIR/$(printf '%s' "$out" | md5sum | cut -c1-12).sock
        mf=",multifunction=on"
        rdma=(-device "virtio-rdma-pci,addr=04.1${LAB_VRDMA_OPTS:+,$LAB_VRDMA_OPTS}"
              -qmp "unix:$LAB_QMP,server=on,wait=off")
    fi
    timeout -k 5 "$tmo" "$QEMU" -name "lab-$(basename "$out")" -machine q35 \
        -accel "tcg,thread=$thread,tb-size=128" -cpu max -smp "$smp" -m "$LAB_MEM" \
        -nodefaults -no-user-config -display none -no-reboot \
        -serial "file:$out/console.log" \
        -kernel "$LAB/vmlinux" -initrd "$LAB/initrd.img" \
        -append "console=ttyS0 quiet loglevel=4 panic=-1 rdinit=/init mitigations=off nokaslr tsc=reliable no_timer_check $append" \
        -fsdev local,id=fsroot,path=/,security_model=none,readonly=on,multidevs=remap \
        -device virtio-9p-pci,fsdev=fsroot,mount_tag=hostroot \
        -fsdev "local,id=fslab,path=$top/tests/lab,security_model=none,readonly=on,multidevs=remap" \
        -device virtio-9p-pci,fsdev=fslab,mount_tag=labsrc \
        -fsdev "local,id=fsout,path=$out,security_model=none,multidevs=remap" \
        -device virtio-9p-pci,fsdev=fsout,mount_tag=labout \
        -netdev "$nd0,id=n0" -device "virtio-net-pci,netdev=n0,mac=$mac0,addr=04.0$mf" \
        "${rdma[@]}" "${nic1[@]}" > "$out/qemu.log" 2>&1 &
    LAB_PID=$!
}

# lab_guest_results PART DIR: a guest job's own verdicts, DIR/results lines
# "PASS|FAIL NAME details...", as PART/NAME results (none: one FAIL).
lab_guest_results() {
    local line
    if [ ! -s "$2/results" ]; then
        lab_result FAIL "$1/guest" "no results (console: $2/console.log)"
        return
    fi
    while read -r line; do
        lab_result "${line%% *}" "$1/$(echo "$line" | cut -d' ' -f2)" "$(echo "$line" | cut -d' ' -f3-)"
    done < "$2/results"
}

# LAB_QUICK=1: every part runs only its quick cases -- what the CI runs
# (scripts/test.sh) -- named by a regex over its case names that each part
# declares beside its cases (LAB_QUICK_<PART>).  Without it, every case.
# lab_quick_skip REGEX NAME: true when LAB_QUICK leaves case NAME out.
lab_quick_skip() {
    [ "${LAB_QUICK:-0}" = 1 ] && ! [[ $2 =~ $1 ]]
}
