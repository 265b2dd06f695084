#!/bin/busybox sh
# /init of a lab guest (Debian kernel, busybox initramfs).  Root = the host's
# / over 9p, read-only, under a tmpfs overlay; /lab = tests/lab (read-only);
# /out = this guest's result directory on the host (writable).
# Kernel command line (no spaces inside a value):
#   lab.ip=A/N        eth0 (the RoCE link) IPv4 address
#   lab.ip6=A/N       eth0 IPv6 address (no DAD)
#   lab.user=1        eth1 is QEMU's user network: 10.0.2.15/24, host at 10.0.2.2
#   lab.neigh=IP@MAC,IP@MAC   permanent neighbour entries on eth0 (a peer
#                     without an OS answers no ARP / ND)
#   lab.egress=roce   eth0 sends RoCEv2 (UDP 4791) only: tc drops the rest,
#                     before the link comes up (ARP, ND, MLD, ...)
#   lab.run=PATH      job to run (inside the new root), then power off
#   lab.rdma=rxe|vrdma  the RDMA device on eth0: kernel rxe (rxe0, default) or
#                     our virtio-rdma-pci through lab.ko (vrdma0)
#   lab.ko=PATH       virtio_rdma.ko, an absolute path of the host root
#   lab.prov=DIR      host-root directory of the rdma-core provider
#                     (libvirtio_rdma-rdmav*.so): made a provider of the
#                     guest's libibverbs in the tmpfs overlay
#   lab.stages=1      stop at the stages up, done, held, unloaded, reloaded
#                     (guest-lib.sh's `stage`: the host reads the device's
#                     counters there); after the job, rmmod virtio_rdma
#                     under a live application, then reload it
# The job gets LAB_DEV, the RDMA device's name.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
IP= IP6= USER=0 NEIGH= EGRESS= RUN= RDMA=rxe KO= PROV= STAGES=0
for a in $(cat /proc/cmdline); do case $a in
    lab.ip=*) IP=${a#*=};; lab.ip6=*) IP6=${a#*=};; lab.user=*) USER=${a#*=};;
    lab.neigh=*) NEIGH=${a#*=};; lab.egress=*) EGRESS=${a#*=};; lab.run=*) RUN=${a#*=};;
    lab.rdma=*) RDMA=${a#*=};; lab.ko=*) KO=${a#*=};; lab.prov=*) PROV=${a#*=};;
    lab.stages=*) STAGES=${a#*=};;
esac; done
say() { echo "LAB: $*"; }
KVER=$(uname -r)
for p in $(cat /lib/modules/$KVER/load.order); do
    /bin/insmod /lib/modules/$KVER/$p || say "insmod $p FAILED"
done
R=/newroot
mount -t 9p -o ro,trans=virtio,version=9p2000.L,msize=512000,cache=loose hostroot /mnt/lower ||
    { say "FATAL: 9p root"; poweroff -f; }
mount -t tmpfs -o mode=755 rw /mnt/rw; mkdir -p /mnt/rw/u /mnt/rw/w
mount -t overlay -o lowerdir=/mnt/lower,upperdir=/mnt/rw/u,workdir=/mnt/rw/w overlay $R ||
    { say "FATAL: overlay"; poweroff -f; }
mount -t proc proc $R/proc; mount -t sysfs sys $R/sys; mount -t devtmpfs dev $R/dev
mkdir -p $R/dev/pts $R/dev/shm $R/lab $R/out
mount -t devpts devpts $R/dev/pts; mount -t tmpfs tmpfs $R/dev/shm
mount -t tmpfs tmpfs $R/tmp; mount -t tmpfs tmpfs $R/run
mount -t 9p -o ro,trans=virtio,version=9p2000.L,msize=512000 labsrc $R/lab || say "FATAL: /lab not mounted"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 labout $R/out || say "FATAL: /out not mounted"
# Modules for late request_module() calls (the host has no kmod).
mkdir -p $R/lib/modules $R/run/lab && cp -a /lib/modules/$KVER $R/lib/modules/
cp /bin/busybox $R/run/lab/busybox && ln -sf busybox $R/run/lab/modprobe &&
    echo /run/lab/modprobe > /proc/sys/kernel/modprobe
hostname lab-guest
ip link set lo up
for k in accept_dad:0 accept_ra:0 router_solicitations:0 dad_transmits:0; do
    echo ${k#*:} > /proc/sys/net/ipv6/conf/eth0/${k%:*} 2>/dev/null
    echo ${k#*:} > /proc/sys/net/ipv6/conf/default/${k%:*} 2>/dev/null
done
if [ "$EGRESS" = roce ]; then
    T="chroot $R /usr/sbin/tc"
    $T qdisc add dev eth0 clsact &&
    $T filter add dev eth0 egress prio 1 protocol ip flower ip_proto udp dst_port 4791 action pass &&
    $T filter add dev eth0 egress prio 2 protocol ipv6 flower ip_proto udp dst_port 4791 action pass &&
    $T filter add dev eth0 egress prio 9 protocol all matchall action drop ||
        { say "FATAL: tc egress filter"; poweroff -f; }
fi
# iproute2 from the host root (busybox's ip lacks neigh replace, nodad, ...)
I="chroot $R /usr/sbin/ip"
$I link set eth0 up
[ -n "$IP" ] && { $I addr add $IP dev eth0 || say "FATAL: ip $IP"; }
[ -n "$IP6" ] && { $I -6 addr add $IP6 dev eth0 nodad || say "FATAL: ip $IP6"; }
for n in $(echo $NEIGH | tr , ' '); do
    $I neigh replace ${n%@*} lladdr ${n#*@} nud permanent dev eth0 || say "FATAL: neigh $n"
done
if [ "$USER" = 1 ]; then
    $I link set eth1 up && $I addr add 10.0.2.15/24 dev eth1 || say "FATAL: eth1"
fi
# at NAME TEXT: with lab.stages=1, the stage NAME of the guest protocol
# (tests/lab/vrdma_lab/protocol.py).
LAB_OUT=$R/out . $R/lab/guest-lib.sh || say "FATAL: no /lab/guest-lib.sh"
at() {
    [ "$STAGES" = 1 ] || return 0
    stage "$1" "$2" || say "stage $1: no answer from the host"
}
# has_gids DEV: an IPv4-mapped GID (when lab.ip) and a global IPv6 one (when
# lab.ip6) are in DEV's table.
has_gids() {
    g=$(cat /sys/class/infiniband/$1/ports/1/gids/* 2>/dev/null)
    { [ -z "$IP" ] || echo "$g" | grep -q '^0000:0000:0000:0000:0000:ffff:'; } &&
    { [ -z "$IP6" ] || echo "$g" | grep -v '^fe80:' | grep -qv '^0000:'; }
}
# load_vrdma: insmod lab.ko, then (bounded) vrdma0 with eth0's GIDs.
load_vrdma() {
    /bin/insmod $R$KO || { say "FATAL: insmod $KO"; return 1; }
    i=0
    while [ ! -e /sys/class/infiniband/vrdma0 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
    [ -e /sys/class/infiniband/vrdma0 ] || { say "FATAL: no /sys/class/infiniband/vrdma0 after insmod"; return 1; }
    i=0
    while ! has_gids vrdma0 && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
    has_gids vrdma0 && return 0
    say "FATAL: vrdma0 lacks eth0's GIDs: $(cat /sys/class/infiniband/vrdma0/ports/1/gids/* 2>/dev/null | grep -v '^0000:0000:0000:0000:0000:0000:0000:0000' | tr '\n' ' ')"
    return 1
}
DEV=
case $RDMA in
rxe)
    chroot $R /usr/bin/rdma link add rxe0 type rxe netdev eth0 && DEV=rxe0 || say "FATAL: rdma link add" ;;
vrdma)
    if [ -n "$PROV" ]; then
        for so in $R$PROV/lib*-rdmav*.so; do
            [ -f "$so" ] || { say "FATAL: no provider in $PROV"; break; }
            stem=${so##*/lib}; stem=${stem%-rdmav*}
            cp "$so" $R/usr/lib/x86_64-linux-gnu/libibverbs/ &&
                echo "driver $stem" > $R/etc/libibverbs.d/$stem.driver ||
                say "FATAL: provider $so"
        done
    fi
    load_vrdma && DEV=vrdma0 ;;
*) say "FATAL: lab.rdma=$RDMA" ;;
esac
say "ready at $(cut -d' ' -f1 /proc/uptime)s${DEV:+ with $DEV}"
at up "${DEV:-nodev}"
if [ -n "$RUN" ]; then
    chroot $R /usr/bin/env LAB_DEV=${DEV:-none} /bin/sh -c "cd /out && exec /bin/bash $RUN"
    say "job rc=$? at $(cut -d' ' -f1 /proc/uptime)s"
fi
if [ "$STAGES" = 1 ]; then
    at done "$DEV"
    r=none
    if [ "$RDMA" = vrdma ] && [ "$DEV" = vrdma0 ]; then
        # Unload under a live application: an ibv_rc_pingpong server holds
        # its context, PD, MR, CQ and QP while it waits for a client that
        # never comes.  The driver disassociates it; the device's object
        # counts must come back to zero, and a reload must work.
        chroot $R /usr/bin/stdbuf -oL /usr/bin/ibv_rc_pingpong -d vrdma0 -p 18999 > $R/out/holder.out 2>&1 &
        h=$!
        i=0
        while ! grep -qs 'local address' $R/out/holder.out && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
        at held "$(grep -c 'local address' $R/out/holder.out)"
        /bin/rmmod virtio_rdma && r=0 || r=$?
        dmesg > $R/out/dmesg-final.txt
        at unloaded "rmmod=$r"
        kill -9 $h 2>/dev/null; wait $h
        load_vrdma && l=0 || l=1
        at reloaded "reload=$l"
        /bin/rmmod virtio_rdma
        dmesg > $R/out/dmesg-final.txt
    else
        at unloaded "rmmod=$r"
    fi
fi
sync; umount $R/out 2>/dev/null; poweroff -f
