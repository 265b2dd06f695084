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
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
IP= IP6= USER=0 NEIGH= EGRESS= RUN=
for a in $(cat /proc/cmdline); do case $a in
    lab.ip=*) IP=${a#*=};; lab.ip6=*) IP6=${a#*=};; lab.user=*) USER=${a#*=};;
    lab.neigh=*) NEIGH=${a#*=};; lab.egress=*) EGRESS=${a#*=};; lab.run=*) RUN=${a#*=};;
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
chroot $R /usr/bin/rdma link add rxe0 type rxe netdev eth0 || say "FATAL: rdma link add"
say "ready at $(cut -d' ' -f1 /proc/uptime)s"
if [ -n "$RUN" ]; then
    chroot $R /bin/sh -c "cd /out && exec /bin/bash $RUN"
    say "job rc=$? at $(cut -d' ' -f1 /proc/uptime)s"
fi
sync; umount $R/out 2>/dev/null; poweroff -f
