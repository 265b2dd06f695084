#!/usr/bin/env bash
# Lab tier set-up: Debian's own kernel + busybox-static, unpacked under
# build/lab/, an uncompressed vmlinux (PVH direct boot: no decompression under
# TCG) and an initramfs with the modules the rxe guests need.
#
#   tests/lab/setup.sh          idempotent: does only what is missing
#   tests/lab/setup.sh --force  redo everything
#
# LAB_KERNEL picks the kernel: unset or 6.1 = what linux-image-amd64 points at
# (bookworm; into build/lab), 6.12 = what bookworm-backports' linux-image-amd64
# points at (into build/lab-6.12; LAB_KERNEL_RELEASE names another target
# release).
#
# The host tools the guests run (rdma-core, perftest, iproute2, tshark) are
# Debian packages installed by scripts/deps.sh; the guests see the host's root
# read-only over 9p.  Every step is bounded; a missing prerequisite fails loudly.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lab/kernel.sh"
force=0; [ "${1:-}" = --force ] && force=1

die() { echo "lab-setup: FAILED: $*" >&2; exit 1; }
mkdir -p "$LAB/debs"

# Host tools the guests use through the 9p root.
for t in rdma ibv_rc_pingpong ibv_ud_pingpong ib_write_bw ib_read_bw ib_send_bw \
         ib_atomic_bw ib_send_lat tc ip tshark python3 gzip zstd nvme fio; do
    command -v "$t" >/dev/null || die "host tool '$t' missing (run scripts/deps.sh)"
done
[ -e /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so ] ||
    ls /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav*.so >/dev/null 2>&1 ||
    die "rdma-core's rxe provider missing (ibverbs-providers; run scripts/deps.sh)"

# The kernel package linux-image-amd64 points at (e.g. linux-image-6.1.0-56-amd64),
# in the target release LAB_KERNEL asks for.
rel=()
[ -n "$LAB_KREL" ] && rel=(-t "$LAB_KREL")
KPKG=$(timeout 60 apt-cache depends "${rel[@]}" linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ && !f {print $2; f = 1}')
[ -n "$KPKG" ] || die "apt-cache knows no linux-image-amd64${LAB_KREL:+ in $LAB_KREL} (apt-get update? scripts/apt-sources.sh?)"
case $KPKG in
linux-image-"$LAB_KSERIES".*) ;;
*) die "LAB_KERNEL=$LAB_KSERIES but linux-image-amd64${LAB_KREL:+ in $LAB_KREL} points at $KPKG" ;;
esac
KVER=${KPKG#linux-image-}
if [ $force = 1 ] || [ "$(cat "$LAB/kver" 2>/dev/null)" != "$KVER" ] || [ ! -f "$LAB/initrd.img" ]; then
    rm -rf "$LAB/kroot" "$LAB/bb" "$LAB/initrd.d"
    if ! ls "$LAB/debs/${KPKG}"_*.deb >/dev/null 2>&1 || ! ls "$LAB/debs/"busybox-static_*.deb >/dev/null 2>&1; then
        echo "lab-setup: apt-get download $KPKG busybox-static"
        (cd "$LAB/debs" && timeout 900 apt-get download -q "$KPKG" busybox-static) ||
            die "apt-get download $KPKG busybox-static"
    fi
    timeout 300 dpkg -x "$(ls "$LAB/debs/${KPKG}"_*.deb | tail -1)" "$LAB/kroot" || die "dpkg -x $KPKG"
    timeout 60 dpkg -x "$(ls "$LAB/debs/"busybox-static_*.deb | tail -1)" "$LAB/bb" || die "dpkg -x busybox-static"
    BB=$LAB/bb/bin/busybox
    [ -x "$BB" ] || die "no busybox in busybox-static"
    cfg=$LAB/kroot/boot/config-$KVER
    for o in CONFIG_RDMA_RXE CONFIG_INFINIBAND_USER_ACCESS CONFIG_9P_FS CONFIG_NET_9P_VIRTIO \
             CONFIG_OVERLAY_FS CONFIG_PVH CONFIG_NET_CLS_FLOWER CONFIG_NET_SCH_INGRESS; do
        grep -qE "^$o=(y|m)" "$cfg" || die "$KPKG lacks $o"
    done
    timeout 300 "$BB" depmod -b "$LAB/kroot" "$KVER" || die "depmod"
    # Uncompressed ELF vmlinux from the bzImage's payload (PVH entry): xz in
    # 6.1, zstd in 6.12.  The boot protocol's header says where it is:
    # setup_sects at 0x1f1, payload_offset/length at 0x248/0x24c (from the
    # protected-mode code, which follows the setup sectors).  The kernel
    # appends the uncompressed size (4 bytes) to the payload; the zstd tool
    # (python3 on bookworm has no zstd module) is given the frame without it.
    timeout 300 python3 - "$LAB/kroot/boot/vmlinuz-$KVER" "$LAB/vmlinux" <<'PY' || die "vmlinux extraction"
import lzma, struct, subprocess, sys
data = open(sys.argv[1], 'rb').read()
if data[0x202:0x206] != b'HdrS':
    sys.exit("not a bzImage: " + sys.argv[1])
sects = data[0x1f1] or 4
off, length = struct.unpack_from('<II', data, 0x248)
payload = data[(sects + 1) * 512 + off:][:length]
if payload[:6] == b'\xfd7zXZ\x00':
    elf = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(payload)
elif payload[:4] == b'\x28\xb5\x2f\xfd':
    elf = subprocess.run(['zstd', '-dcq'], input=payload[:-4], stdout=subprocess.PIPE,
                         check=True).stdout
else:
    sys.exit("payload is neither xz nor zstd: %r" % payload[:6])
if elf[:4] != b'\x7fELF':
    sys.exit("payload is not ELF")
open(sys.argv[2], 'wb').write(elf)
PY
    KVER=$KVER timeout 300 bash "$top/tests/lab/mkinitrd.sh" "$LAB" || die "initramfs"
    echo "$KVER" > "$LAB/kver"
elif [ "$top/tests/lab/guest-init.sh" -nt "$LAB/initrd.img" ] || [ "$top/tests/lab/mkinitrd.sh" -nt "$LAB/initrd.img" ]; then
    # /init and the module list live in the initramfs.
    KVER=$KVER timeout 300 bash "$top/tests/lab/mkinitrd.sh" "$LAB" || die "initramfs"
fi
echo "lab-setup: ok: kernel $KVER, $(du -h "$LAB/vmlinux" | cut -f1) vmlinux, $(du -h "$LAB/initrd.img" | cut -f1) initramfs in $LAB"
