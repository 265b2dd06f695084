/*
 * virtio-rdma: the wire.  The soft-RoCE engine shares the paired
 * virtio-net's net backend, like a RoCE NIC shares its port:
 *
 *  - receive: a net filter on that netdev sees every frame the backend sends
 *    towards the guest NIC first; RoCEv2 frames for one of our GIDs are
 *    taken by the core, everything else passes on to virtio-net untouched;
 *  - transmit: our frames leave through the NIC's own queue, so they carry
 *    its MAC and reach the backend like the guest's other traffic.
 *
 * This works over every netdev QEMU has (dgram, socket, stream, tap, user)
 * except vhost ones, whose traffic never passes through QEMU.  A backend
 * that carries a virtio-net header (tap with vnet_hdr) gets one on our
 * frames too: all zero, as a RoCE frame asks for no offload.
 *
 * The filter is the netdev's: netdev_del takes it away with the netdev
 * (then the port is down and our frames go nowhere), and object-del of it
 * is refused while the device uses it.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/iov.h"
#include "qemu/lockable.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qom/object_interfaces.h"
#include "net/filter.h"
#include "net/net.h"
#include "net/vhost_net.h"
#include "hw/virtio/virtio-net.h"
#include "virtio-rdma.h"
#include "trace.h"

#define TYPE_VIRTIO_RDMA_FILTER "x-virtio-rdma-filter"
OBJECT_DECLARE_SIMPLE_TYPE(VirtIORdmaFilter, VIRTIO_RDMA_FILTER)

struct VirtIORdmaFilter {
    NetFilterState parent_obj;
    VirtIORdma *rdma;           /* NULL: pass everything */
};

/* The virtio-net header the backend puts before each frame, if any. */
static size_t virtio_rdma_net_hdr_len(VirtIORdma *r)
{
    return r->nic->has_vnet_hdr ? r->nic->host_hdr_len : 0;
}

/*
 * A frame for virtio-net while its guest driver is not running (not set up
 * yet, reset, or unloaded) would wait in the net queue, and the backend stops
 * reading behind it: our RoCE frames would stall too.  A NIC without a driver
 * drops what it receives; so does the port here.  Once the driver runs, a
 * full receive ring is ordinary back-pressure and the frame waits.
 */
static bool virtio_rdma_nic_absent(VirtIORdma *r)
{
    VirtIODevice *nic = VIRTIO_DEVICE(r->nic);

    if (nic->status & VIRTIO_CONFIG_S_DRIVER_OK) {
        trace_virtio_rdma_nic_pass();
        return false;
    }
    trace_virtio_rdma_nic_absent_drop();
    return true;
}

static ssize_t virtio_rdma_filter_receive_iov(NetFilterState *nf,
                                              NetClientState *sender,
                                              unsigned flags,
                                              const struct iovec *iov,
                                              int iovcnt,
                                              NetPacketSent *sent_cb)
{
    VirtIORdma *r = VIRTIO_RDMA_FILTER(nf)->rdma;
    size_t size = iov_size(iov, iovcnt);
    size_t hdr;

    if (!r || !r->core || VIRTIO_DEVICE(r)->broken) {
        return 0;
    }
    hdr = virtio_rdma_net_hdr_len(r);
    if (size < hdr || size - hdr > VIRTIO_RDMA_RX_MAX) {
        return 0;
    }
    if (virtio_rdma_engine_rx(r, iov, iovcnt, hdr, size - hdr)) {
        return size;
    }
    return virtio_rdma_nic_absent(r) ? size : 0;
}

/* netdev_del, or the device's own detach: the device forgets the filter. */
static void virtio_rdma_filter_cleanup(NetFilterState *nf)
{
    VirtIORdmaFilter *f = VIRTIO_RDMA_FILTER(nf);

    if (f->rdma) {
        trace_virtio_rdma_wire_gone();
        f->rdma->wire = NULL;
        f->rdma = NULL;
    }
}

static bool virtio_rdma_filter_can_be_deleted(UserCreatable *uc)
{
    return !VIRTIO_RDMA_FILTER(uc)->rdma;
}

static void virtio_rdma_filter_class_init(ObjectClass *oc, void *data)
{
    NetFilterClass *nfc = NETFILTER_CLASS(oc);
    UserCreatableClass *ucc = USER_CREATABLE_CLASS(oc);

    nfc->receive_iov = virtio_rdma_filter_receive_iov;
    nfc->cleanup = virtio_rdma_filter_cleanup;
    ucc->can_be_deleted = virtio_rdma_filter_can_be_deleted;
}

static const TypeInfo virtio_rdma_filter_info = {
    .name = TYPE_VIRTIO_RDMA_FILTER,
    .parent = TYPE_NETFILTER,
    .class_init = virtio_rdma_filter_class_init,
    .instance_size = sizeof(VirtIORdmaFilter),
};

static void virtio_rdma_filter_register(void)
{
    type_register_static(&virtio_rdma_filter_info);
}

type_init(virtio_rdma_filter_register)

bool virtio_rdma_wire_attach(VirtIORdma *r, Error **errp)
{
    NetClientState *peer = r->nic->nic_conf.peers.ncs[0];
    g_autofree char *id = NULL;
    Object *obj;

    if (!peer) {
        /* No backend: only QPs of this device can talk to each other. */
        return true;
    }
    if (r->nic->nic_conf.peers.queues > 1) {
        error_setg(errp, "virtio-rdma: the paired NIC's netdev '%s' has %d "
                   "queues; the soft-RoCE engine needs a single queue",
                   peer->name, r->nic->nic_conf.peers.queues);
        return false;
    }
    if (get_vhost_net(peer)) {
        error_setg(errp, "virtio-rdma: the paired NIC's netdev '%s' uses "
                   "vhost, whose traffic bypasses QEMU; the soft-RoCE engine "
                   "needs vhost=off on it", peer->name);
        return false;
    }
    /* Frames the backend sends towards the NIC are its "tx" queue. */
    id = g_strdup_printf("virtio-rdma-wire-%s", peer->name);
    obj = object_new_with_props(TYPE_VIRTIO_RDMA_FILTER,
                                object_get_objects_root(), id, errp,
                                "netdev", peer->name, "queue", "tx", NULL);
    if (!obj) {
        return false;
    }
    VIRTIO_RDMA_FILTER(obj)->rdma = r;
    r->wire = obj;
    trace_virtio_rdma_wire_attach(peer->name);
    return true;
}

void virtio_rdma_wire_detach(VirtIORdma *r)
{
    Object *wire = r->wire;

    if (wire) {
        VIRTIO_RDMA_FILTER(wire)->rdma = NULL;
        r->wire = NULL;
        object_unparent(wire);
    }
}

/*
 * dp_bh (BQL, core_lock not held): the backend may answer at once.  With
 * the wire detached (netdev_del, the NIC unplugged, unrealize) the port is
 * down and the frame goes nowhere.
 */
void virtio_rdma_wire_send(VirtIORdma *r, const void *frame, size_t len)
{
    static const uint8_t zero_hdr[sizeof(struct virtio_net_hdr_v1_hash)];
    struct iovec iov[2] = {
        { .iov_base = (void *)zero_hdr },
        { .iov_base = (void *)frame, .iov_len = len },
    };

    assert(bql_locked());
    if (!r->wire) {
        trace_virtio_rdma_wire_tx_detached(len);
        return;
    }
    iov[0].iov_len = virtio_rdma_net_hdr_len(r);
    if (len > INT_MAX || iov[0].iov_len > sizeof(zero_hdr)) {
        return;
    }
    trace_virtio_rdma_wire_tx(len, iov[0].iov_len);
    qemu_sendv_packet(qemu_get_queue(r->nic->nic), iov, 2);
}
