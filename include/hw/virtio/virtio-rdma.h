/*
 * virtio-rdma device state (QEMU side; the engine is in hw/rdma/virtio/core).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_VIRTIO_RDMA_H
#define HW_VIRTIO_RDMA_H

#include "hw/virtio/virtio.h"
#include "hw/rdma/virtio-rdma-core.h"
#include "qemu/thread.h"
#include "qom/object.h"
#include "system/iothread.h"

#define TYPE_VIRTIO_RDMA "virtio-rdma-device"
OBJECT_DECLARE_SIMPLE_TYPE(VirtIORdma, VIRTIO_RDMA)

typedef struct VirtIONet VirtIONet;
typedef struct VirtIORdmaStage VirtIORdmaStage;

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
    IOThread *iothread;     /* NULL: the engine runs under the BQL */
} VirtIORdmaConf;

struct VirtIORdma {
    VirtIODevice parent_obj;

    VirtIORdmaConf conf;
    VirtIONet *nic;         /* function 0 of our slot; set by the proxy */
    char *netdev_name;      /* what RDMA_GID_STATUS_CHANGED reports */
    uint8_t mac[6];

    VrdmaCore *core;
    QemuMutex core_lock;    /* every core call; taken after the BQL */
    VirtIORdmaStage *stage; /* iothread only: virtio-rdma-engine.c */
    VirtQueue *ctrl_vq;
    VirtQueue **data_vqs;   /* CQs, then SQ/RQ pairs, in ABI order */
    unsigned num_data_vqs;
    QEMUBH *ctrl_bh;        /* continues the control queue past the budget */
    QEMUBH *dp_bh;          /* BQL side: queues left over by a kick, the
                               engine's staged output (or, without an
                               iothread, the engine itself) */
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

/* virtio-rdma-engine.c: the engine in an iothread (conf.iothread set). */
void virtio_rdma_engine_init(VirtIORdma *r);
void virtio_rdma_engine_stop(VirtIORdma *r);
void virtio_rdma_engine_cleanup(VirtIORdma *r);
void virtio_rdma_engine_reset(VirtIORdma *r);
void virtio_rdma_engine_kick(VirtIORdma *r);
void virtio_rdma_engine_timer_mod(VirtIORdma *r, uint64_t deadline_ns);
bool virtio_rdma_engine_rx(VirtIORdma *r, const struct iovec *iov, int iovcnt,
                           size_t size);
void virtio_rdma_engine_tx(VirtIORdma *r, const void *frame, size_t len);
/* @cqe NULL: a CQ interrupt. */
void virtio_rdma_engine_cqe(VirtIORdma *r, uint32_t cqn,
                            const struct virtio_rdma_cq_req *cqe);
void virtio_rdma_engine_gid(VirtIORdma *r, uint32_t index,
                            const uint8_t gid[16], bool added);
void virtio_rdma_engine_flush(VirtIORdma *r);
/* virtio-rdma.c: write one completion into CQ @cqn's ring (BQL). */
int virtio_rdma_cq_write(VirtIORdma *r, uint32_t cqn,
                         const struct virtio_rdma_cq_req *cqe);
void virtio_rdma_cq_interrupt(VirtIORdma *r, uint32_t cqn);

#endif
