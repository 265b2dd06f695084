/*
 * virtio-rdma device state (QEMU side; the engine is in hw/rdma/virtio/core).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_VIRTIO_RDMA_H
#define HW_VIRTIO_RDMA_H

#include "hw/virtio/virtio.h"
#include "hw/rdma/virtio-rdma-core.h"
#include "qom/object.h"

#define TYPE_VIRTIO_RDMA "virtio-rdma-device"
OBJECT_DECLARE_SIMPLE_TYPE(VirtIORdma, VIRTIO_RDMA)

typedef struct VirtIONet VirtIONet;

typedef struct VirtIORdmaConf {
    uint32_t max_qp;
    uint32_t max_cq;
    uint32_t max_mr;
    uint32_t max_pd;
    uint32_t max_ah;
    uint32_t max_sge;
    uint64_t max_mr_size;
    uint32_t queue_size;
    uint64_t node_guid;     /* 0: derived from the paired NIC's MAC */
    char *netdev;           /* NULL: the paired NIC's netdev id */
} VirtIORdmaConf;

struct VirtIORdma {
    VirtIODevice parent_obj;

    VirtIORdmaConf conf;
    VirtIONet *nic;         /* function 0 of our slot; set by the proxy */
    char *netdev_name;      /* what RDMA_GID_STATUS_CHANGED reports */
    uint8_t mac[6];

    VrdmaCore *core;
    VirtQueue *ctrl_vq;
    VirtQueue **data_vqs;   /* CQs, then SQ/RQ pairs, in ABI order */
    unsigned num_data_vqs;
    QEMUBH *ctrl_bh;        /* continues the control queue past the budget */
    QEMUBH *dp_bh;          /* runs the engine and queues left over by a kick */
    unsigned long *dp_pending; /* data vqs (index - 1) whose kick ran out of budget */
    QEMUTimer *timer;       /* the engine's retransmit / RNR timer */

    Object *wire;           /* net filter on the paired NIC's netdev */
    uint8_t *rx_buf;        /* linearised received frame */
};

/* Called by virtio-rdma-pci before realize: the paired virtio-net device. */
void virtio_rdma_set_nic(VirtIORdma *r, VirtIONet *nic);

/* virtio-rdma-net.c: the paired NIC's wire. */
bool virtio_rdma_net_attach(VirtIORdma *r, Error **errp);
void virtio_rdma_net_detach(VirtIORdma *r);
void virtio_rdma_net_send(VirtIORdma *r, const void *frame, size_t len);

#endif
