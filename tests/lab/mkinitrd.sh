#!/usr/bin/env bash
# mkinitrd.sh LAB: LAB/initrd.img = busybox-static + the guest's modules (with
# their dependencies, in load order) + tests/lab/guest-init.sh as /init.
# Needs LAB/kroot (the unpacked kernel package, depmod done) and LAB/bb.
set -euo pipefail
LAB=$1
KVER=${KVER:?}
here=$(cd "$(dirname "$0")" && pwd)
MODDIR=$LAB/kroot/lib/modules/$KVER
W=$LAB/initrd.d
# virtio + 9p root + overlay; the RDMA stack (rdma_ucm pulls in rdma_cm, ib_cm,
# iw_cm: rping; our virtio_rdma.ko needs ib_core, ib_uverbs and virtio); tc
# (egress filter on the RoCE link); af_packet for captures; NVMe over RDMA
# (host and target, with nvme-fabrics and nvmet).  Built-in ones are skipped.
MODS="virtio virtio_pci virtio_net 9pnet_virtio 9p overlay crc32_generic
      ib_core rdma_rxe ib_uverbs rdma_cm rdma_ucm ib_umad
      sch_ingress cls_flower cls_matchall act_gact af_packet ipv6
      nvme_rdma nvmet_rdma"
rm -rf "$W"
mkdir -p "$W"/{bin,proc,sys,dev,mnt/lower,mnt/rw,newroot,lib/modules/$KVER}
cp "$LAB/bb/bin/busybox" "$W/bin/busybox"
for a in $("$W/bin/busybox" --list); do [ "$a" = busybox ] || ln -sf busybox "$W/bin/$a"; done

python3 - "$MODDIR" $MODS > "$W/lib/modules/$KVER/load.order" <<'PY'
import sys, os
moddir, want = sys.argv[1], sys.argv[2:]
norm = lambda n: os.path.basename(n).split('.ko')[0].replace('-', '_')
deps = {}
for line in open(os.path.join(moddir, 'modules.dep')):
    path, _, rest = line.partition(':')
    deps[norm(path)] = (path, [norm(d) for d in rest.split()])
builtin = {norm(l.strip()) for l in open(os.path.join(moddir, 'modules.builtin'))}
order, seen = [], set()
def visit(n):
    if n in seen:
        return
    seen.add(n)
    if n not in deps:
        if n in builtin:
            return
        sys.exit(f"mkinitrd: module {n} neither a module nor built in")
    for d in deps[n][1]:
        visit(d)
    order.append(deps[n][0])
for m in want:
    visit(m.replace('-', '_'))
print('\n'.join(order))
PY
# Uncompressed (6.12's modules are .ko.xz; busybox insmod takes plain ELF).
while read -r p; do
    mkdir -p "$W/lib/modules/$KVER/$(dirname "$p")"
    case $p in
    *.ko.xz)  python3 -c 'import lzma, sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())' \
                  "$MODDIR/$p" > "$W/lib/modules/$KVER/${p%.xz}" ;;
    *.ko.zst) zstd -dcq "$MODDIR/$p" > "$W/lib/modules/$KVER/${p%.zst}" ;;
    *.ko)     cp "$MODDIR/$p" "$W/lib/modules/$KVER/$p" ;;
    *) echo "mkinitrd: unknown module format $p" >&2; exit 1 ;;
    esac
done < "$W/lib/modules/$KVER/load.order"
sed -i 's/\.ko\.\(xz\|zst\)$/.ko/' "$W/lib/modules/$KVER/load.order"
cp "$MODDIR"/modules.builtin* "$MODDIR"/modules.order "$W/lib/modules/$KVER/" 2>/dev/null || true
"$W/bin/busybox" depmod -b "$W" "$KVER"
cp "$here/guest-init.sh" "$W/init"
chmod +x "$W/init"
(cd "$W" && find . | "$W/bin/busybox" cpio -o -H newc 2>/dev/null | gzip -1) > "$LAB/initrd.img.tmp"
mv "$LAB/initrd.img.tmp" "$LAB/initrd.img"
echo "mkinitrd: $(wc -l < "$W/lib/modules/$KVER/load.order") modules: $(sed 's#.*/##; s#\.ko.*##' "$W/lib/modules/$KVER/load.order" | tr '\n' ' ')"
