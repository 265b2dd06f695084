/*
 * virtio-rdma device: QOM type, properties, its two virtqueues (the
 * control queue here, the event queue in virtio-rdma-event.c), doorbells
 * and dp_bh.  The core's host-ops live in virtio-rdma-mem.c (guest memory)
 * and virtio-rdma-engine.c (everything else);
 * docs/devel/virtio-rdma-threads.rst says what runs where.
 *
 * Everything here runs under the BQL, in the main loop; every core call
 * also holds r->core_lock.  A kick only schedules a guarded bottom half:
 * the work is done there, under QEMU's re-entrancy guard whether the kick
 * came as an MMIO write or through an ioeventfd, and never with core_lock
 * held across anything that can call back into the device.  Control
 * requests are copied out of the virtqueue once (iov_to_buf) and handed to
 * the core, which validates them; work requests the core copies out of
 * the rings in guest memory itself (core/rings.cc).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/iov.h"
#include "qemu/lockable.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/bitmap.h"
#include "qemu/guest-random.h"
#include "exec/memory.h"
#include "hw/boards.h"
#include "hw/qdev-properties.h"
#include "hw/qdev-properties-system.h"
#include "hw/virtio/virtio.h"
#include "hw/virtio/virtio-net.h"
#include "virtio-rdma.h"
#include "migration/vmstate.h"
#include "net/net.h"
#include "trace.h"

#define VIRTIO_RDMA_DEFAULT_MTU 1500
/* 4 GiB of MRs; each mapped page costs the core 8 bytes of host memory. */
#define VIRTIO_RDMA_MAPPED_PAGES_DEFAULT (1 * MiB)
/*
 * Guest pages one ctrl_bh turn may map: a 1 GiB MR (a larger one is a turn
 * of its own).
 */
#define VIRTIO_RDMA_KICK_PAGES_MAX ((uint64_t)VIRTIO_RDMA_PT2_PAGES)

/* ---- control queue ---------------------------------------------------------- */

/* The object a destroy command names, read from its request (host order). */
static bool virtio_rdma_destroy_handle(const uint8_t *req, size_t req_len,
                                       uint8_t cmd, uint32_t *handle)
{
    /* DESTROY_QP, DESTROY_CQ and DESTROY_SRQ requests are one le32 handle. */
    QEMU_BUILD_BUG_ON(sizeof(struct virtio_rdma_cmd_destroy_qp) != 4);
    QEMU_BUILD_BUG_ON(sizeof(struct virtio_rdma_cmd_destroy_cq) != 4);
    QEMU_BUILD_BUG_ON(sizeof(struct virtio_rdma_cmd_destroy_srq) != 4);
    if (req[0] != cmd || req_len != 1 + 4) {
        return false;
    }
    *handle = ldl_le_p(req + 1);
    return true;
}

/* Writes a command's status byte and response, and returns its buffer. */
static void virtio_rdma_ctrl_answer(VirtQueue *vq, VirtQueueElement *elem,
                                    uint8_t status, const void *rsp,
                                    size_t rsp_len)
{
    iov_from_buf(elem->in_sg, elem->in_num, 0, &status, 1);
    if (rsp_len) {
        iov_from_buf(elem->in_sg, elem->in_num, 1, rsp, rsp_len);
    }
    virtqueue_push(vq, elem, 1 + rsp_len);
}

typedef enum {
    VRDMA_CTRL_BROKEN,      /* virtio_error() was raised */
    VRDMA_CTRL_ANSWERED,
    VRDMA_CTRL_HELD,        /* the core answers later: r->ctrl_held */
} VrdmaCtrlResult;

/* Adds the guest pages the command mapped to *@pages. */
static VrdmaCtrlResult virtio_rdma_ctrl_one(VirtIORdma *r, VirtQueue *vq,
                                            VirtQueueElement *elem,
                                            uint64_t *pages)
{
    /* One byte more than any request: an over-long one is still refused. */
    uint8_t req[1 + VRDMA_CTRL_REQ_MAX + 1];
    uint8_t rsp[VRDMA_CTRL_RSP_MAX];
    size_t out_len = iov_size(elem->out_sg, elem->out_num);
    size_t in_len = iov_size(elem->in_sg, elem->in_num);
    size_t req_len, rsp_len = 0;
    uint32_t qpn = 0, cqn = 0, srqn = 0;
    uint8_t status;

    if (out_len < 1 || in_len < 1) {
        trace_virtio_rdma_err_ctrl_framing(out_len, in_len);
        virtio_error(VIRTIO_DEVICE(r),
                     "virtio-rdma: control request without %s byte",
                     out_len < 1 ? "command" : "status");
        virtqueue_detach_element(vq, elem, 0);
        return VRDMA_CTRL_BROKEN;
    }
    if (!virtio_rdma_elem_in_ram(elem)) {
        virtio_rdma_not_ram(r, vq, elem);
        return VRDMA_CTRL_BROKEN;
    }
    req_len = iov_to_buf(elem->out_sg, elem->out_num, 0, req, sizeof(req));
    WITH_QEMU_LOCK_GUARD(&r->core_lock) {
        uint64_t before = vrdma_core_mapped_pages(r->core);

        status = vrdma_core_ctrl(r->core, req[0], req + 1, req_len - 1, rsp,
                                 MIN(in_len - 1, sizeof(rsp)), &rsp_len);
        *pages += vrdma_core_mapped_pages(r->core) -
                  MIN(before, vrdma_core_mapped_pages(r->core));
    }
    if (status == VRDMA_CTRL_PENDING) {
        /* Blocking host work runs off the main loop; answered by ctrl_bh. */
        trace_virtio_rdma_ctrl_pending(vrdma_cmd_name(req[0]));
        r->ctrl_held = elem;
        r->ctrl_held_done = false;
        return VRDMA_CTRL_HELD;
    }
    trace_virtio_rdma_ctrl_cmd(vrdma_cmd_name(req[0]), status, rsp_len);
    if (status == VIRTIO_RDMA_OK &&
        virtio_rdma_destroy_handle(req, req_len, VIRTIO_RDMA_CMD_DESTROY_CQ,
                                   &cqn) && cqn < r->ncq) {
        /* Its pending events go with it: a new CQ may take the number. */
        clear_bit(cqn, r->ev_pending);
        clear_bit(cqn, r->ev_async[VIRTIO_RDMA_ASYNC_INDEX(
                           VIRTIO_RDMA_EVENT_CQ_ERR)]);
        virtio_rdma_engine_cq_destroyed(r, cqn);
    }
    if (status == VIRTIO_RDMA_OK &&
        virtio_rdma_destroy_handle(req, req_len, VIRTIO_RDMA_CMD_DESTROY_SRQ,
                                   &srqn) && srqn < r->nsrq) {
        for (uint32_t t = VIRTIO_RDMA_EVENT_SRQ_LIMIT;
             t <= VIRTIO_RDMA_EVENT_SRQ_ERR; t++) {
            clear_bit(srqn, r->ev_async[VIRTIO_RDMA_ASYNC_INDEX(t)]);
            virtio_rdma_engine_async_drop(r, t, srqn);
        }
    }
    if (status == VIRTIO_RDMA_OK &&
        virtio_rdma_destroy_handle(req, req_len, VIRTIO_RDMA_CMD_DESTROY_QP,
                                   &qpn) && qpn < r->nqp) {
        /* As for a CQ's events: a new QP may take the queue index. */
        clear_bit(qpn, r->ev_async[VIRTIO_RDMA_ASYNC_INDEX(
                           VIRTIO_RDMA_EVENT_QP_FATAL)]);
        virtio_rdma_engine_qp_destroyed(r, qpn);
    }

    virtio_rdma_ctrl_answer(vq, elem, status, rsp, rsp_len);
    return VRDMA_CTRL_ANSWERED;
}

/* loop.ctrl_done (under core_lock, main loop): ctrl_bh answers it. */
static void virtio_rdma_ctrl_done(void *opaque, uint8_t status,
                                  const void *rsp, size_t rsp_len)
{
    VirtIORdma *r = opaque;

    assert(bql_locked() && r->ctrl_held);
    assert(rsp_len <= sizeof(r->ctrl_held_rsp));
    r->ctrl_held_status = status;
    memcpy(r->ctrl_held_rsp, rsp, rsp_len);
    r->ctrl_held_rsp_len = MIN(rsp_len,
                               iov_size(r->ctrl_held->in_sg,
                                        r->ctrl_held->in_num) - 1);
    r->ctrl_held_done = true;
    qemu_bh_schedule(r->ctrl_bh);
}

/* A held command's buffer goes back unanswered: the device is reset. */
static void virtio_rdma_ctrl_drop_held(VirtIORdma *r)
{
    if (r->ctrl_held) {
        virtqueue_detach_element(r->ctrl_vq, r->ctrl_held, 0);
        g_clear_pointer(&r->ctrl_held, g_free);
        r->ctrl_held_done = false;
    }
}

/*
 * ctrl_bh: the control queue.  The driver busy-polls it.  One turn does at
 * most a ring's worth of commands, and stops early once the commands have
 * mapped kick_pages_max guest pages (a maximal MR is 512 x 512 pages); the
 * rest waits for the next turn, so the main loop runs in between.
 */
static void virtio_rdma_ctrl_bh(void *opaque)
{
    VirtIORdma *r = opaque;
    VirtIODevice *vdev = VIRTIO_DEVICE(r);
    VirtQueue *vq = r->ctrl_vq;
    unsigned budget = virtio_queue_get_num(vdev, virtio_get_queue_index(vq));
    uint64_t pages = 0;
    unsigned done = 0;
    VirtQueueElement *elem;

    assert(bql_locked());
    if (vdev->broken) {
        return;
    }
    if (!r->core) {
        /* Only a hot-plugged function 0 that could not be paired gets here. */
        virtio_error(vdev, "virtio-rdma: not paired with a virtio-net-pci at "
                     "function 0 of its slot");
        return;
    }
    if (r->ctrl_held) {
        if (!r->ctrl_held_done) {
            return; /* the host is still at it; commands wait in order */
        }
        trace_virtio_rdma_ctrl_resumed(r->ctrl_held_status);
        virtio_rdma_ctrl_answer(vq, r->ctrl_held, r->ctrl_held_status,
                                r->ctrl_held_rsp, r->ctrl_held_rsp_len);
        g_clear_pointer(&r->ctrl_held, g_free);
        r->ctrl_held_done = false;
        done++;
    }
    while (done < budget && pages < r->kick_pages_max &&
           (elem = virtqueue_pop(vq, sizeof(*elem)))) {
        VrdmaCtrlResult res = virtio_rdma_ctrl_one(r, vq, elem, &pages);

        done++;
        if (res == VRDMA_CTRL_HELD) {
            break;
        }
        g_free(elem);
        if (res == VRDMA_CTRL_BROKEN) {
            break;
        }
    }
    if (done) {
        virtio_notify(vdev, vq);
    }
    if (!vdev->broken && !r->ctrl_held && !virtio_queue_empty(vq)) {
        trace_virtio_rdma_ctrl_budget(done, pages);
        qemu_bh_schedule(r->ctrl_bh);
    }
}

/* A kick, by MMIO write or ioeventfd: the work is done in the guarded BH. */
static void virtio_rdma_handle_ctrl(VirtIODevice *vdev, VirtQueue *vq)
{
    qemu_bh_schedule(VIRTIO_RDMA(vdev)->ctrl_bh);
}

/* ---- doorbells ------------------------------------------------------------- */

/* The driver accepted the features and FEATURES_OK held (validate_features). */
static bool virtio_rdma_rings_on(VirtIODevice *vdev)
{
    return virtio_vdev_has_feature(vdev, VIRTIO_RDMA_F_RINGS) &&
           (vdev->status & VIRTIO_CONFIG_S_FEATURES_OK);
}

/*
 * A vCPU's write (BQL) to the doorbell region: page c is context c's.  The
 * core checks the value and records it; the rings are read in dp_bh, never
 * in the vCPU's write.  Anything but an 8-byte write at offset 0 of a page
 * is ignored.
 */
static void virtio_rdma_db_write(void *opaque, hwaddr addr, uint64_t value,
                                 unsigned size)
{
    VirtIORdma *r = opaque;
    VirtIODevice *vdev = VIRTIO_DEVICE(r);
    uint32_t ctx = addr / VIRTIO_RDMA_DB_PAGE;
    uint32_t offset = addr % VIRTIO_RDMA_DB_PAGE;
    const char *why = NULL;
    bool more = false;

    assert(bql_locked());
    if (size != 8 || offset) {
        why = "not an 8-byte write at offset 0 of a page";
    } else if (!virtio_rdma_rings_on(vdev)) {
        why = "features not negotiated";
    } else if (ctx > r->conf.max_ctx) {
        why = "page beyond max-contexts";
    } else if (vdev->broken || !r->core) {
        why = "device broken or unpaired";
    }
    if (why) {
        trace_virtio_rdma_doorbell_ignored(why, ctx, offset, size);
        return;
    }
    WITH_QEMU_LOCK_GUARD(&r->core_lock) {
        more = vrdma_core_doorbell(r->core, ctx, value);
    }
    if (more) {
        qemu_bh_schedule(r->dp_bh);
    }
}

static uint64_t virtio_rdma_db_read(void *opaque, hwaddr addr, unsigned size)
{
    trace_virtio_rdma_doorbell_read(addr / VIRTIO_RDMA_DB_PAGE,
                                    addr % VIRTIO_RDMA_DB_PAGE, size);
    return 0;
}

/* Every access reaches the handlers whole, so each ignored one is traced. */
static const MemoryRegionOps virtio_rdma_db_ops = {
    .read = virtio_rdma_db_read,
    .write = virtio_rdma_db_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 1,
        .max_access_size = 8,
        .unaligned = true,
    },
    .impl = {
        .min_access_size = 1,
        .max_access_size = 8,
        .unaligned = true,
    },
};

/* What the device offers and the driver must accept: ABI version 2. */
#define VIRTIO_RDMA_FEATURES (1ull << VIRTIO_RDMA_F_RINGS | \
                              1ull << VIRTIO_RDMA_F_WIRE_QPN | \
                              1ull << VIRTIO_RDMA_F_EVENT_QUEUE)

MemoryRegion *virtio_rdma_doorbells(VirtIORdma *r)
{
    return &r->db_mr;
}

/* Realize: (1 + max-contexts) pages, a power of two for the BAR. */
static void virtio_rdma_db_init(VirtIORdma *r)
{
    uint64_t size = pow2ceil((1 + (uint64_t)r->conf.max_ctx) *
                             VIRTIO_RDMA_DB_PAGE);
    DeviceState *transport = qdev_get_parent_bus(DEVICE(r))->parent;

    /*
     * Owned by the PCI proxy, whose allocation holds r and so db_mr, as its
     * other BAR regions are: a flatview that still maps the BAR after an
     * unplug keeps the proxy alive until RCU drops it.  Owned by r it kept
     * only r's count up, and the proxy's memory was freed under db_mr.
     */
    memory_region_init_io(&r->db_mr, OBJECT(transport), &virtio_rdma_db_ops,
                          r, "virtio-rdma-doorbells", size);
}

/*
 * dp_bh: the work the doorbells announced (VRDMA_RING_TURN_BUDGET a turn),
 * then the engine's turn and what it staged (virtio-rdma-engine.c), then
 * the event records.
 */
static void virtio_rdma_dp_bh(void *opaque)
{
    VirtIORdma *r = opaque;
    VirtIODevice *vdev = VIRTIO_DEVICE(r);

    assert(bql_locked());
    if (vdev->broken || !r->core) {
        return;
    }
    if (virtio_rdma_rings_on(vdev)) {
        bool more = false;

        WITH_QEMU_LOCK_GUARD(&r->core_lock) {
            more = vrdma_core_rings_turn(r->core);
        }
        if (more) {
            qemu_bh_schedule(r->dp_bh);
        }
    }
    virtio_rdma_engine_flush(r);
    virtio_rdma_event_flush(r);
}

/* ---- virtio device ---------------------------------------------------------- */

static void virtio_rdma_get_config(VirtIODevice *vdev, uint8_t *config)
{
    VirtIORdma *r = VIRTIO_RDMA(vdev);
    struct virtio_rdma_config cfg = { 0 };

    if (r->core) {
        WITH_QEMU_LOCK_GUARD(&r->core_lock) {
            vrdma_core_get_config(r->core, &cfg);
        }
    }
    memcpy(config, &cfg, sizeof(cfg));
}

static uint64_t virtio_rdma_get_features(VirtIODevice *vdev, uint64_t features,
                                         Error **errp)
{
    return features | VIRTIO_RDMA_FEATURES;
}

/*
 * A driver that does not accept all three (a version 1 driver, which would
 * use the virtqueue data path) fails FEATURES_OK.
 */
static int virtio_rdma_validate_features(VirtIODevice *vdev)
{
    if ((vdev->guest_features & VIRTIO_RDMA_FEATURES) != VIRTIO_RDMA_FEATURES) {
        trace_virtio_rdma_features_refused(vdev->guest_features);
        return -EINVAL;
    }
    return 0;
}

/* From feature negotiation, and with 0 after every reset. */
static void virtio_rdma_set_features(VirtIODevice *vdev, uint64_t features)
{
    VirtIORdma *r = VIRTIO_RDMA(vdev);

    trace_virtio_rdma_set_features(features);
    if (!r->core) {
        return;
    }
    WITH_QEMU_LOCK_GUARD(&r->core_lock) {
        vrdma_core_set_features(r->core, features);
    }
}

static void virtio_rdma_reset(VirtIODevice *vdev)
{
    VirtIORdma *r = VIRTIO_RDMA(vdev);
    VrdmaStats st;
    unsigned i;

    assert(bql_locked());
    /*
     * Blocking host work in flight (backend=ibverbs: an address nobody
     * answers, guest RAM being pinned) is not waited for: the core's reset
     * orphans it, and it undoes itself when it ends.
     */
    qemu_bh_cancel(r->ctrl_bh);
    virtio_rdma_ctrl_drop_held(r);
    bitmap_zero(r->ev_pending, r->ncq);
    for (i = 0; i < VIRTIO_RDMA_ASYNC_TYPES; i++) {
        bitmap_zero(r->ev_async[i],
                    virtio_rdma_async_bits(r, VIRTIO_RDMA_ASYNC_TYPE(i)));
    }
    if (!r->core) {
        return;
    }
    WITH_QEMU_LOCK_GUARD(&r->core_lock) {
        vrdma_core_get_stats(r->core, &st);
        trace_virtio_rdma_reset(st.pds, st.cqs, st.qps, st.mrs);
        vrdma_core_reset(r->core);
    }
    /* Staged output is dropped; the GID deletions reset reported are kept. */
    virtio_rdma_engine_reset(r);
}

void virtio_rdma_set_nic(VirtIORdma *r, VirtIONet *nic)
{
    r->nic = nic;
}

void virtio_rdma_defer_pairing(VirtIORdma *r)
{
    r->pair_later = true;
}

static bool virtio_rdma_check_limit(const char *name, uint64_t val,
                                    uint64_t min, uint64_t max, Error **errp)
{
    if (val < min || val > max) {
        error_setg(errp, "virtio-rdma: %s=%" PRIu64 " is outside %" PRIu64
                   "..%" PRIu64, name, val, min, max);
        return false;
    }
    return true;
}

static bool virtio_rdma_check_conf(const VirtIORdmaConf *c, Error **errp)
{
    if (!virtio_rdma_check_limit("max-qp", c->max_qp, 2,
                                 VIRTIO_RDMA_RING_MAX_QP, errp) ||
        !virtio_rdma_check_limit("max-cq", c->max_cq, 1,
                                 VIRTIO_RDMA_RING_MAX_CQ, errp) ||
        !virtio_rdma_check_limit("max-mr", c->max_mr, VIRTIO_RDMA_LIMIT_MIN,
                                 VIRTIO_RDMA_LIMIT_MAX, errp) ||
        !virtio_rdma_check_limit("max-pd", c->max_pd, VIRTIO_RDMA_LIMIT_MIN,
                                 VIRTIO_RDMA_LIMIT_MAX, errp) ||
        !virtio_rdma_check_limit("max-ah", c->max_ah, VIRTIO_RDMA_LIMIT_MIN,
                                 VIRTIO_RDMA_LIMIT_MAX, errp) ||
        !virtio_rdma_check_limit("max-sge", c->max_sge, 1, VRDMA_MAX_SGE,
                                 errp) ||
        !virtio_rdma_check_limit("max-mr-size", c->max_mr_size,
                                 VIRTIO_RDMA_PAGE_SIZE,
                                 (uint64_t)VIRTIO_RDMA_MAX_MR_PAGES *
                                 VIRTIO_RDMA_PAGE_SIZE, errp) ||
        !virtio_rdma_check_limit("max-contexts", c->max_ctx, 0,
                                 VRDMA_MAX_CTX, errp) ||
        !virtio_rdma_check_limit("max-srq", c->max_srq, 0,
                                 VIRTIO_RDMA_RING_MAX_SRQ, errp) ||
        (c->max_mapped_pages &&
         !virtio_rdma_check_limit("max-mapped-pages", c->max_mapped_pages, 1,
                                  UINT32_MAX, errp))) {
        return false;
    }
    return true;
}

/*
 * max-mr-size=0, the default: all of guest RAM (hot-pluggable memory too),
 * at least 1 GiB (the two-level page table's reach, the old default), at
 * most what a three-level table reaches (512 GiB).
 */
static uint64_t virtio_rdma_auto_mr_size(void)
{
    const uint64_t ram = ROUND_UP(current_machine->maxram_size,
                                  VIRTIO_RDMA_PAGE_SIZE);

    return MIN(MAX(ram, (uint64_t)VIRTIO_RDMA_PT2_PAGES *
                        VIRTIO_RDMA_PAGE_SIZE),
               (uint64_t)VIRTIO_RDMA_MAX_MR_PAGES * VIRTIO_RDMA_PAGE_SIZE);
}

/*
 * max-mapped-pages=0, the default: 4 GiB of MRs, or all of guest RAM if
 * more (an MR of max-mr-size fits); with backend=ibverbs also
 * room for four registrations of all of guest RAM (a guest kernel's DMA
 * MRs: one per PD -- its MAD layer's and each ULP's -- each pins all RAM).
 */
static uint64_t virtio_rdma_auto_mapped_pages(const VirtIORdma *r)
{
    uint64_t pages = MAX(VIRTIO_RDMA_MAPPED_PAGES_DEFAULT,
                         current_machine->maxram_size / VIRTIO_RDMA_PAGE_SIZE);

    if (r->backend == VIRTIO_RDMA_BACKEND_IBVERBS) {
        pages += 4 * (current_machine->maxram_size / VIRTIO_RDMA_PAGE_SIZE);
    }
    return MIN(pages, UINT32_MAX);
}

/* EUI-64 from the NIC's MAC, as Linux derives a RoCE node GUID. */
static uint64_t virtio_rdma_guid_from_mac(const uint8_t mac[6])
{
    uint8_t eui[8] = { mac[0] ^ 2, mac[1], mac[2], 0xff, 0xfe,
                       mac[3], mac[4], mac[5] };
    uint64_t guid;

    memcpy(&guid, eui, 8);          /* network byte order in memory */
    return guid;
}

/*
 * The paired NIC is unrealized (slot unplug takes the functions in any
 * order): its NICState is freed, so the wire goes now and nothing of ours
 * looks at the NIC again.  Under the BQL, like every frame out.
 */
static void virtio_rdma_nic_unrealized(DeviceListener *listener,
                                       DeviceState *dev)
{
    VirtIORdma *r = container_of(listener, VirtIORdma, nic_listener);

    if (!r->nic || dev != DEVICE(r->nic)) {
        return;
    }
    trace_virtio_rdma_nic_gone(r->nic_path);
    virtio_rdma_wire_detach(r);
    r->nic = NULL;
}

static void virtio_rdma_nic_unlisten(VirtIORdma *r)
{
    if (r->nic_listening) {
        device_listener_unregister(&r->nic_listener);
        r->nic_listening = false;
    }
}

/*
 * Everything that follows the paired NIC: its MAC (node GUID, source MAC),
 * its MTU, the name GID events report, the core built with those, and the
 * wire on the NIC's netdev.  Before the guest can run: at realize, or when
 * function 0 is realized after us (virtio-rdma-pci.c).
 */
bool virtio_rdma_pair(VirtIORdma *r, VirtIONet *nic, Error **errp)
{
    VirtIORdmaConf *c = &r->conf;
    NetClientState *peer;
    VrdmaLimits lim;
    VrdmaHostOps ops = {
        .opaque = r,
        .mem = {
            .map = virtio_rdma_mem_map,
            .unmap = virtio_rdma_mem_unmap,
            .read = virtio_rdma_mem_read,
            .write = virtio_rdma_mem_write,
            .ram_ranges = virtio_rdma_mem_ram_ranges,
        },
    };

    assert(!r->core);
    r->nic = nic;
    r->nic_path = object_get_canonical_path(OBJECT(nic));
    r->nic_listener = (DeviceListener) {
        .unrealize = virtio_rdma_nic_unrealized,
    };
    device_listener_register(&r->nic_listener);
    r->nic_listening = true;
    virtio_rdma_engine_host_ops(r, &ops);
    ops.loop.ctrl_done = virtio_rdma_ctrl_done;
    virtio_rdma_mad_init(r, &ops);

    memcpy(r->mac, nic->nic_conf.macaddr.a, sizeof(r->mac));
    peer = nic->nic_conf.peers.ncs[0];
    /*
     * The name RDMA_GID_STATUS_CHANGED gives, where libvirt adds the
     * guest's addresses: a host interface only when management names one
     * (netdev=; with backend=ibverbs only next to allowed-gids, see
     * virtio-rdma-backend.c).  Never the host RDMA device's netdev by
     * default: that would put guest-chosen addresses on the host's link.
     * Else the NIC's netdev id, which is QEMU's name, not an interface's.
     */
    r->netdev_name = g_strdup(c->netdev ? c->netdev : peer ? peer->name : "");

    if (!r->conf.max_mapped_pages) {
        r->conf.max_mapped_pages = virtio_rdma_auto_mapped_pages(r);
    }
    lim = (VrdmaLimits) {
        .max_qp = c->max_qp,
        .max_cq = c->max_cq,
        .max_mr = c->max_mr,
        .max_pd = c->max_pd,
        .max_ah = c->max_ah,
        .max_mr_size = c->max_mr_size,
        .max_sge = c->max_sge,
        .sys_image_guid = c->node_guid ? cpu_to_be64(c->node_guid) :
                          virtio_rdma_guid_from_mac(r->mac),
        .phys_mtu = nic->net_conf.mtu ? nic->net_conf.mtu :
                    VIRTIO_RDMA_DEFAULT_MTU,
        .max_mapped_pages = c->max_mapped_pages,
        .allow = r->allow,
        .max_ctx = c->max_ctx,
        .max_srq = c->max_srq,
    };
    memcpy(lim.mac, r->mac, sizeof(lim.mac));
    /*
     * Keys and QP numbers a peer cannot guess (-seed makes them repeatable);
     * the core takes seed 0 to mean "deterministic", which it never is here.
     */
    qemu_guest_getrandom_nofail(&lim.rng_seed, sizeof(lim.rng_seed));
    lim.rng_seed += !lim.rng_seed;
    if (r->backend == VIRTIO_RDMA_BACKEND_IBVERBS) {
        char why[256];

        /* The host device moves the data: no wire on the NIC's netdev. */
        r->core = vrdma_core_new_ibverbs(&lim, &ops, c->ibdev, r->ib.port,
                                         why, sizeof(why));
        if (!r->core) {
            error_setg(errp, "virtio-rdma: backend=ibverbs: %s", why);
            goto fail;
        }
    } else {
        r->core = vrdma_core_new(&lim, &ops);
        if (!r->core) {
            error_setg(errp, "virtio-rdma: the core refused the limits");
            goto fail;
        }
        if (!virtio_rdma_wire_attach(r, errp)) {
            goto fail;
        }
    }
    r->pair_later = false;
    trace_virtio_rdma_paired(object_get_typename(OBJECT(nic)), r->netdev_name);
    return true;

fail:
    virtio_rdma_mad_stop(r);
    vrdma_core_free(r->core);
    r->core = NULL;
    virtio_rdma_mad_cleanup(r);
    g_clear_pointer(&r->netdev_name, g_free);
    virtio_rdma_nic_unlisten(r);
    g_clear_pointer(&r->nic_path, g_free);
    r->nic = NULL;
    return false;
}

static void virtio_rdma_device_realize(DeviceState *dev, Error **errp)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(dev);
    VirtIORdma *r = VIRTIO_RDMA(dev);
    VirtIORdmaConf *c = &r->conf;
    unsigned i;

    if (!r->nic && !r->pair_later) {
        error_setg(errp, "virtio-rdma: no paired virtio-net device");
        error_append_hint(errp, "Use -device virtio-rdma-pci at function 1 of "
                          "a slot whose function 0 is virtio-net-pci\n");
        return;
    }
    if (c->allowed_gids) {
        char why[160];

        if (!vrdma_gid_allow_parse(c->allowed_gids, &r->allow, why,
                                   sizeof(why))) {
            error_setg(errp, "virtio-rdma: allowed-gids: %s", why);
            error_append_hint(errp, "Give IPv4 or IPv6 addresses or prefixes "
                              "(a.b.c.d[/n], x:y::z[/n]) separated by ';', "
                              "at most %d\n", VRDMA_GID_ALLOW_MAX);
            return;
        }
    }
    if (!c->max_mr_size) {
        c->max_mr_size = virtio_rdma_auto_mr_size();
    }
    if (!virtio_rdma_backend_check(r, errp)) {
        return;
    }
    /* 0, the default: as many as the ABI allows (backend=ibverbs: its host). */
    c->max_qp = c->max_qp ? c->max_qp : VIRTIO_RDMA_RING_MAX_QP;
    c->max_cq = c->max_cq ? c->max_cq : VIRTIO_RDMA_RING_MAX_CQ;
    if (r->backend != VIRTIO_RDMA_BACKEND_IBVERBS) { /* it set its host's */
        c->max_srq = c->max_srq ? c->max_srq : VIRTIO_RDMA_RING_MAX_SRQ;
    }
    if (!virtio_rdma_check_conf(c, errp)) {
        virtio_rdma_backend_release(r);
        return;
    }
    r->nqp = c->max_qp;
    r->ncq = c->max_cq;
    r->nsrq = c->max_srq + 1;
    qemu_mutex_init(&r->core_lock);
    /* Before the core: its host-ops stage for these. */
    r->ctrl_bh = virtio_bh_new_guarded(dev, virtio_rdma_ctrl_bh, r);
    r->dp_bh = virtio_bh_new_guarded(dev, virtio_rdma_dp_bh, r);
    r->kick_pages_max = VIRTIO_RDMA_KICK_PAGES_MAX;
    virtio_rdma_engine_init(r);
    virtio_rdma_mem_init(r);
    if (r->nic && !virtio_rdma_pair(r, r->nic, errp)) {
        goto fail;
    }

    virtio_init(vdev, VIRTIO_ID_RDMA_DEVICE, sizeof(struct virtio_rdma_config));
    /* VIRTIO_RDMA_VQ_CTRL, then VIRTIO_RDMA_VQ_EVENT: the only two. */
    r->ctrl_vq = virtio_add_queue(vdev, VIRTQUEUE_MAX_SIZE,
                                  virtio_rdma_handle_ctrl);
    r->event_vq = virtio_add_queue(vdev, VIRTQUEUE_MAX_SIZE,
                                   virtio_rdma_handle_event);
    r->ev_pending = bitmap_new(r->ncq);
    for (i = 0; i < VIRTIO_RDMA_ASYNC_TYPES; i++) {
        r->ev_async[i] =
            bitmap_new(virtio_rdma_async_bits(r, VIRTIO_RDMA_ASYNC_TYPE(i)));
    }
    virtio_rdma_db_init(r);
    trace_virtio_rdma_realize(c->max_qp, c->max_cq, VIRTIO_RDMA_NUM_VQS,
                              r->core != NULL);
    return;

fail:
    virtio_rdma_mem_cleanup(r);
    virtio_rdma_engine_cleanup(r);
    g_clear_pointer(&r->ctrl_bh, qemu_bh_delete);
    g_clear_pointer(&r->dp_bh, qemu_bh_delete);
    qemu_mutex_destroy(&r->core_lock);
    virtio_rdma_backend_release(r);
}

static void virtio_rdma_device_unrealize(DeviceState *dev)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(dev);
    VirtIORdma *r = VIRTIO_RDMA(dev);
    unsigned i;

    virtio_rdma_nic_unlisten(r);
    virtio_rdma_ctrl_drop_held(r);
    /* The wire first: no frame may reach a core being freed. */
    virtio_rdma_wire_detach(r);
    virtio_rdma_engine_stop(r); /* then nothing of the engine runs */
    virtio_rdma_mad_stop(r);    /* nor of the MAD link */
    if (r->core) {
        /* Not waiting for blocking host calls: they may keep the core. */
        virtio_rdma_engine_release_core(r);
    }
    virtio_rdma_mad_cleanup(r);
    virtio_rdma_mem_cleanup(r);    /* after the core's last unmap */
    virtio_rdma_engine_cleanup(r); /* after the core's last host-op */
    qemu_bh_delete(r->ctrl_bh);
    qemu_bh_delete(r->dp_bh);
    qemu_mutex_destroy(&r->core_lock);
    g_free(r->ev_pending);
    for (i = 0; i < VIRTIO_RDMA_ASYNC_TYPES; i++) {
        g_free(r->ev_async[i]);
    }
    virtio_delete_queue(r->event_vq);
    virtio_delete_queue(r->ctrl_vq);
    virtio_cleanup(vdev);
    g_clear_pointer(&r->netdev_name, g_free);
    g_clear_pointer(&r->nic_path, g_free);
    r->nic = NULL;
    virtio_rdma_backend_release(r);
}

/* QP state lives in the core and on the wire: not migratable yet. */
static const VMStateDescription vmstate_virtio_rdma = {
    .name = "virtio-rdma",
    .unmigratable = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_END_OF_LIST()
    },
};

static const Property virtio_rdma_properties[] = {
    /* 0: as many as the ABI allows (VIRTIO_RDMA_RING_MAX_QP / _CQ) */
    DEFINE_PROP_UINT32("max-qp", VirtIORdma, conf.max_qp, 0),
    DEFINE_PROP_UINT32("max-cq", VirtIORdma, conf.max_cq, 0),
    DEFINE_PROP_UINT32("max-mr", VirtIORdma, conf.max_mr, 1024),
    DEFINE_PROP_UINT32("max-pd", VirtIORdma, conf.max_pd, 256),
    DEFINE_PROP_UINT32("max-ah", VirtIORdma, conf.max_ah, 256),
    DEFINE_PROP_UINT32("max-sge", VirtIORdma, conf.max_sge, 8),
    DEFINE_PROP_SIZE("max-mr-size", VirtIORdma, conf.max_mr_size, 0),
    /* 0: virtio_rdma_auto_mapped_pages() */
    DEFINE_PROP_UINT64("max-mapped-pages", VirtIORdma, conf.max_mapped_pages,
                       0),
    DEFINE_PROP_UINT64("node-guid", VirtIORdma, conf.node_guid, 0),
    DEFINE_PROP_STRING("netdev", VirtIORdma, conf.netdev),
    /* GIDs the guest may use: docs/system/devices/virtio-rdma.rst */
    DEFINE_PROP_STRING("allowed-gids", VirtIORdma, conf.allowed_gids),
    DEFINE_PROP_UINT32("max-contexts", VirtIORdma, conf.max_ctx, 255),
    DEFINE_PROP_UINT32("max-srq", VirtIORdma, conf.max_srq, 0),
    DEFINE_PROP_LINK("iothread", VirtIORdma, conf.iothread, TYPE_IOTHREAD,
                     IOThread *),
    /* soft-roce (default) or ibverbs: virtio-rdma-backend.c */
    DEFINE_PROP_STRING("backend", VirtIORdma, conf.backend),
    DEFINE_PROP_STRING("ibdev", VirtIORdma, conf.ibdev),
    DEFINE_PROP_UINT32("ibport", VirtIORdma, conf.ibport, 0),
    DEFINE_PROP_CHR("mad-chardev", VirtIORdma, conf.mad_chr),
};

static void virtio_rdma_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    VirtioDeviceClass *vdc = VIRTIO_DEVICE_CLASS(klass);

    device_class_set_props(dc, virtio_rdma_properties);
    dc->vmsd = &vmstate_virtio_rdma;
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
    vdc->realize = virtio_rdma_device_realize;
    vdc->unrealize = virtio_rdma_device_unrealize;
    vdc->get_config = virtio_rdma_get_config;
    vdc->get_features = virtio_rdma_get_features;
    vdc->set_features = virtio_rdma_set_features;
    vdc->validate_features = virtio_rdma_validate_features;
    vdc->reset = virtio_rdma_reset;
}

static const TypeInfo virtio_rdma_info = {
    .name = TYPE_VIRTIO_RDMA,
    .parent = TYPE_VIRTIO_DEVICE,
    .instance_size = sizeof(VirtIORdma),
    .class_init = virtio_rdma_class_init,
};

static void virtio_rdma_register_types(void)
{
    type_register_static(&virtio_rdma_info);
}

type_init(virtio_rdma_register_types)
