/*
 * virtio-rdma device state (QEMU side; the engine is in hw/rdma/virtio/core).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_VIRTIO_RDMA_H
#define HW_VIRTIO_RDMA_H

#include "hw/virtio/virtio.h"
#include "chardev/char-fe.h"
#include "hw/rdma/virtio-rdma-core.h"
#include "hw/rdma/virtio-rdma-ibverbs.h"
#include "qapi/qapi-types-rdma-virtio.h"
#include "qemu/thread.h"
#include "qom/object.h"
#include "system/iothread.h"

#define TYPE_VIRTIO_RDMA "virtio-rdma-device"
/* Largest frame a backend hands over (NET_BUFSIZE and more). */
#define VIRTIO_RDMA_RX_MAX (64 * 1024 + 64)
OBJECT_DECLARE_SIMPLE_TYPE(VirtIORdma, VIRTIO_RDMA)

typedef struct VirtIONet VirtIONet;
typedef struct VirtIORdmaStage VirtIORdmaStage;
typedef struct VirtIORdmaMem VirtIORdmaMem;
typedef struct VirtIORdmaMad VirtIORdmaMad;

/*
 * The async event types (QP_FATAL .. SRQ_ERR), each
 * staged as a bitmap over its handles' number space (virtio_rdma_async_bits).
 */
#define VIRTIO_RDMA_ASYNC_TYPES \
    (VIRTIO_RDMA_EVENT_SRQ_ERR - VIRTIO_RDMA_EVENT_QP_FATAL + 1)
#define VIRTIO_RDMA_ASYNC_INDEX(type) ((type) - VIRTIO_RDMA_EVENT_QP_FATAL)
#define VIRTIO_RDMA_ASYNC_TYPE(i) ((i) + VIRTIO_RDMA_EVENT_QP_FATAL)

typedef struct VirtIORdmaConf {
    uint32_t max_qp;        /* QP numbers 0..max_qp-1 (0: the ABI's most) */
    uint32_t max_cq;        /* CQ numbers 0..max_cq-1 (0: likewise) */
    uint32_t max_mr;
    uint32_t max_pd;
    uint32_t max_ah;
    uint32_t max_sge;
    uint64_t max_mr_size;
    uint64_t max_mapped_pages; /* guest pages all MRs may map together */
    uint32_t max_ctx;       /* user contexts */
    uint32_t max_srq;       /* SRQ numbers 1..max_srq */
    uint64_t node_guid;     /* 0: derived from the paired NIC's MAC */
    char *netdev;           /* NULL: the paired NIC's netdev id (never a
                               host interface of backend=ibverbs's) */
    char *allowed_gids;     /* NULL: no allow-list; parsed into allow */
    IOThread *iothread;     /* NULL: the engine runs under the BQL */
    char *backend;          /* VirtioRdmaBackend by name; NULL: soft-roce */
    char *ibdev;            /* backend=ibverbs: the host RDMA device */
    uint32_t ibport;        /* backend=ibverbs: its port; 0: port 1 */
    CharBackend mad_chr;    /* backend=ibverbs: rdmacm-mux's socket */
} VirtIORdmaConf;

struct VirtIORdma {
    VirtIODevice parent_obj;

    VirtIORdmaConf conf;
    VirtIONet *nic;         /* function 0 of our slot, once paired; NULL
                               again once it is unrealized (nic_listener) */
    DeviceListener nic_listener;
    bool nic_listening;     /* nic_listener registered */
    char *nic_path;         /* its QOM path, for QMP after it is gone */
    bool pair_later;        /* realized without it: virtio_rdma_pair() comes
                               when function 0 is realized */
    char *netdev_name;      /* what RDMA_GID_STATUS_CHANGED reports */
    uint8_t mac[6];

    VrdmaCore *core;
    VirtIORdmaMem *mem;     /* guest memory for the core: virtio-rdma-mem.c */
    QemuMutex core_lock;    /* every core call; taken after the BQL */
    VirtIORdmaStage *stage; /* the engine's placement and what it staged:
                               virtio-rdma-engine.c */
    uint32_t nqp, ncq;      /* conf.max_qp / max_cq: per-QP, per-CQ state */
    uint32_t nsrq;          /* SRQ numbers 0..nsrq-1 (0 unused); 1: none */
    VirtQueue *ctrl_vq;     /* VIRTIO_RDMA_VQ_CTRL */
    /*
     * Both bottom halves are guarded (QEMU's re-entrancy guard) and run in
     * the main loop with the BQL; every kick is handled in one of them.
     */
    QEMUBH *ctrl_bh;        /* the control queue */
    QEMUBH *dp_bh;          /* the rings' work, the engine (main loop
                               placement), everything staged */
    VirtQueue *event_vq;    /* VIRTIO_RDMA_VQ_EVENT */
    unsigned long *ev_pending; /* CQs (ncq) whose event waits for an event
                                  buffer (BQL) */
    /*
     * Async events that wait for an event buffer, one bitmap per type
     * (VIRTIO_RDMA_ASYNC_INDEX), a bit per object (BQL)
     */
    unsigned long *ev_async[VIRTIO_RDMA_ASYNC_TYPES];
    /*
     * The doorbell region, one page per context, the PCI proxy's virtio
     * shared memory region VIRTIO_RDMA_SHM_DOORBELLS (made at realize).
     */
    MemoryRegion db_mr;
    uint64_t kick_pages_max;   /* most guest pages one ctrl_bh turn maps */

    Object *wire;           /* net filter on the paired NIC's netdev; NULL
                               once the netdev is gone */

    /*
     * A control command the core left pending (VRDMA_CTRL_PENDING): no
     * other is taken until loop.ctrl_done gives its status (BQL).
     */
    VirtQueueElement *ctrl_held;
    bool ctrl_held_done;
    uint8_t ctrl_held_status;
    uint8_t ctrl_held_rsp[VRDMA_CTRL_RSP_MAX]; /* and its response */
    size_t ctrl_held_rsp_len;

    VirtioRdmaBackend backend; /* conf.backend, parsed at realize */
    VrdmaIbHostInfo ib;     /* backend=ibverbs: the host side at realize */
    Error *migration_blocker; /* backend=ibverbs */
    VirtIORdmaMad *mad;     /* backend=ibverbs with mad-chardev: the MAD link */
    VrdmaGidAllow allow;    /* allowed-gids, parsed at realize (n 0: none) */
    bool discard_disabled;  /* backend=ibverbs: ram_block_discard_disable() */
};

/*
 * Pairing with the virtio-net device at function 0 of our slot, by
 * virtio-rdma-pci.  Before realize, either the NIC (it exists: realize pairs,
 * and its errors are realize's) or a promise that virtio_rdma_pair() follows
 * once function 0 is realized.  Until then the device has no core: the guest
 * cannot see the slot before function 0 is there.
 */
void virtio_rdma_set_nic(VirtIORdma *r, VirtIONet *nic);
void virtio_rdma_defer_pairing(VirtIORdma *r);
bool virtio_rdma_pair(VirtIORdma *r, VirtIONet *nic, Error **errp);

/* The doorbell region, once realized. */
MemoryRegion *virtio_rdma_doorbells(VirtIORdma *r);

/*
 * virtio-rdma-mem.c: guest memory for the core, RAM only (never MMIO, so
 * no access can call back into a device), in both engine placements.
 * The four host-ops run under core_lock; init/cleanup under the BQL.
 */
void virtio_rdma_mem_init(VirtIORdma *r);
void virtio_rdma_mem_cleanup(VirtIORdma *r);
void *virtio_rdma_mem_map(void *opaque, uint64_t gpa, uint64_t len,
                          bool is_write);
void virtio_rdma_mem_unmap(void *opaque, void *host, uint64_t len,
                           bool is_write);
int virtio_rdma_mem_read(void *opaque, uint64_t gpa, void *buf, uint64_t len);
int virtio_rdma_mem_write(void *opaque, uint64_t gpa, const void *buf,
                          uint64_t len);
size_t virtio_rdma_mem_ram_ranges(void *opaque, VrdmaRamRange *out,
                                  size_t max);

/*
 * virtio-rdma-backend.c: which backend moves the data (property backend=),
 * the properties that belong to each, and the host side of backend=ibverbs
 * (guest RAM the host device can map, the device and port, limits lowered
 * to the host's, the migration blocker).  Realize calls check before it
 * sizes anything by the limits; unrealize calls release.
 */
bool virtio_rdma_backend_check(VirtIORdma *r, Error **errp);
void virtio_rdma_backend_release(VirtIORdma *r);

/*
 * virtio-rdma-mad.c: backend=ibverbs's MAD link to contrib/rdmacm-mux
 * (mad-chardev=), which serves the guest's GSI QP.  init (pairing, before
 * the core: sets ops->mad.send) does nothing without mad-chardev; stop
 * before the core is freed, cleanup after.  gid_changed (main loop, under
 * core_lock: it only records, the bottom half writes) keeps the mux's
 * routing claims on the guest's GIDs.
 */
void virtio_rdma_mad_init(VirtIORdma *r, VrdmaHostOps *ops);
void virtio_rdma_mad_gid_changed(VirtIORdma *r, uint32_t index,
                                 const uint8_t gid[16], bool added);
void virtio_rdma_mad_stop(VirtIORdma *r);
void virtio_rdma_mad_cleanup(VirtIORdma *r);
VirtioRdmaMadLink *virtio_rdma_mad_info(VirtIORdma *r);

/* virtio-rdma-wire.c: the paired NIC's wire. */
bool virtio_rdma_wire_attach(VirtIORdma *r, Error **errp);
void virtio_rdma_wire_detach(VirtIORdma *r);
void virtio_rdma_wire_send(VirtIORdma *r, const void *frame, size_t len);

/*
 * virtio-rdma-engine.c: where the engine runs (main loop or iothread) and
 * everything it stages for dp_bh.  The only file that tests the placement.
 */
typedef struct VirtIORdmaStageStats {
    uint64_t staged_frames, max_staged_frames; /* frames waiting, each way */
    uint64_t cq_events;             /* armed CQs that fired */
    uint64_t rx_full, tx_full;      /* frames dropped: queue full */
    uint64_t gid_changes;           /* GID table changes */
    uint64_t gid_events;            /* RDMA_GID_STATUS_CHANGED sent */
} VirtIORdmaStageStats;

void virtio_rdma_engine_init(VirtIORdma *r);
/* The host-ops for the wire, completions, events, time and kicks. */
void virtio_rdma_engine_host_ops(VirtIORdma *r, VrdmaHostOps *ops);
void virtio_rdma_engine_stop(VirtIORdma *r);
void virtio_rdma_engine_cleanup(VirtIORdma *r);
void virtio_rdma_engine_reset(VirtIORdma *r);
/*
 * Unrealize, after the engine stopped (BQL, core_lock not held): frees the
 * core, or, while blocking host calls it deferred to the thread pool
 * (loop.defer) still run, ends it (vrdma_core_end) and leaves it to them:
 * the last one frees it.  r->core is NULL after.
 */
void virtio_rdma_engine_release_core(VirtIORdma *r);
bool virtio_rdma_engine_rx(VirtIORdma *r, const struct iovec *iov, int iovcnt,
                           size_t offset, size_t size);
void virtio_rdma_engine_flush(VirtIORdma *r);
/* DESTROY_CQ @cqn succeeded: its staged interrupt and async event go. */
void virtio_rdma_engine_cq_destroyed(VirtIORdma *r, uint32_t cqn);
/* DESTROY_QP of queue index @qpn succeeded: its staged async event goes. */
void virtio_rdma_engine_qp_destroyed(VirtIORdma *r, uint32_t qpn);
/*
 * dp_bh: the CQ interrupts staged since the last call are added to @cq
 * (ncq bits), the async events to @ev, one bitmap per type
 * (VIRTIO_RDMA_ASYNC_INDEX); BQL.
 */
void virtio_rdma_engine_take_events(VirtIORdma *r, unsigned long *cq,
                                    unsigned long **ev);
/* An object was destroyed: its staged async event of @type is dropped. */
void virtio_rdma_engine_async_drop(VirtIORdma *r, uint32_t type,
                                   uint32_t handle);
/* The number space of async event @type's handles: nqp, ncq or nsrq. */
uint32_t virtio_rdma_async_bits(const VirtIORdma *r, uint32_t type);
void virtio_rdma_engine_stats(VirtIORdma *r, VirtIORdmaStageStats *st);

/* virtio-rdma-event.c */
/* Every buffer of @elem is guest RAM (else virtio_rdma_not_ram()). */
bool virtio_rdma_elem_in_ram(const VirtQueueElement *elem);
/* A buffer that is not RAM: virtio_error(), @elem given back unused. */
void virtio_rdma_not_ram(VirtIORdma *r, VirtQueue *vq, VirtQueueElement *elem);
/* dp_bh (BQL): the staged events into the event queue, one notification. */
void virtio_rdma_event_flush(VirtIORdma *r);
/* The event queue's handler: the driver added buffers. */
void virtio_rdma_handle_event(VirtIODevice *vdev, VirtQueue *vq);

#endif
