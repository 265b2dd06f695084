/*
 * virtio-rdma: the soft-RoCE engine in an iothread (iothread=<id>).
 *
 * The expensive work is the engine's: ICRC over every frame, payload copies
 * between guest memory and frames, the RX parse.  With an iothread it all
 * runs there -- vrdma_core_run(), the retransmit/RNR timer and every
 * received RoCE frame -- holding only r->core_lock, never the BQL.
 *
 * The rule that makes that safe: the thread holding core_lock never waits
 * for the BQL, because the main loop holds the BQL when it takes core_lock
 * (control commands, kicks, QMP, reset).  Under TCG an interrupt, a
 * virtio_error() and MMIO all take the BQL, so the engine's thread touches
 * no virtqueue, sends no interrupt and no frame, and reads guest RAM only.
 * What crosses is staged here, in order, under a small lock:
 *
 *   net filter (BQL)  --rx frames-->  engine (iothread, core_lock)
 *   engine  --completions, CQ interrupts, tx frames-->  dp_bh (BQL)
 *
 * The filter cannot ask the core whether a frame is ours without taking
 * core_lock, so it classifies on its own: UDP 4791 to an address of the GID
 * table, which is mirrored here from the core's gid_changed reports.
 *
 * Bounds: received and transmitted frames are capped (a full queue drops the
 * frame, as a NIC ring would: RoCE retransmits); completions are not (each
 * WQE completes once, so the guest's posted work bounds them).  A completion
 * dp_bh cannot write (no CQ buffer) goes back to the core as a late overrun.
 *
 * Lock order: BQL, core_lock, stage->lock.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/iov.h"
#include "qemu/lockable.h"
#include "qemu/main-loop.h"
#include "qemu/queue.h"
#include "qemu/timer.h"
#include "block/aio.h"
#include "block/aio-wait.h"
#include "hw/virtio/virtio-rdma.h"
#include "net/eth.h"
#include "trace.h"

#define VRDMA_STAGE_FRAMES_MAX 1024  /* per direction */
#define VRDMA_ENGINE_RX_BATCH  64    /* frames per turn, then core_lock is let go */
#define VRDMA_FLUSH_BATCH      4096  /* staged items per dp_bh turn */
#define VRDMA_ROCE_PORT        4791

typedef struct VrdmaFrame {
    QSIMPLEQ_ENTRY(VrdmaFrame) next;
    size_t len;
    uint8_t data[];
} VrdmaFrame;

typedef struct VrdmaStagedCqe {
    QSIMPLEQ_ENTRY(VrdmaStagedCqe) next;
    uint32_t cqn;
    bool interrupt;                     /* a CQ interrupt, not a CQE */
    struct virtio_rdma_cq_req cqe;
} VrdmaStagedCqe;

typedef QSIMPLEQ_HEAD(, VrdmaFrame) VrdmaFrameList;
typedef QSIMPLEQ_HEAD(, VrdmaStagedCqe) VrdmaCqeList;

struct VirtIORdmaStage {
    AioContext *ctx;                    /* the iothread's */
    QEMUBH *engine_bh;                  /* in ctx: rx frames, then run */
    QEMUTimer *timer;                   /* in ctx */
    bool stopped;                       /* under core_lock: unrealize */

    QemuMutex lock;
    VrdmaFrameList rx, tx;
    unsigned rx_count, tx_count;
    VrdmaCqeList cq;

    /* Main loop only (gid_changed comes from control commands). */
    bool gid_valid[VRDMA_GID_TABLE_LEN];
    uint8_t gid[VRDMA_GID_TABLE_LEN][16];
};

static void virtio_rdma_frames_free(VrdmaFrameList *l)
{
    VrdmaFrame *f;

    while ((f = QSIMPLEQ_FIRST(l))) {
        QSIMPLEQ_REMOVE_HEAD(l, next);
        g_free(f);
    }
}

static void virtio_rdma_cqes_free(VrdmaCqeList *l)
{
    VrdmaStagedCqe *c;

    while ((c = QSIMPLEQ_FIRST(l))) {
        QSIMPLEQ_REMOVE_HEAD(l, next);
        g_free(c);
    }
}

/* ---- the iothread side ------------------------------------------------------ */

static void virtio_rdma_engine_bh(void *opaque)
{
    VirtIORdma *r = opaque;
    VirtIORdmaStage *s = r->stage;
    VrdmaFrameList batch = QSIMPLEQ_HEAD_INITIALIZER(batch);
    VrdmaFrame *f;
    unsigned n = 0;
    bool more;

    WITH_QEMU_LOCK_GUARD(&s->lock) {
        while (n < VRDMA_ENGINE_RX_BATCH && (f = QSIMPLEQ_FIRST(&s->rx))) {
            QSIMPLEQ_REMOVE_HEAD(&s->rx, next);
            QSIMPLEQ_INSERT_TAIL(&batch, f, next);
            s->rx_count--;
            n++;
        }
        more = !QSIMPLEQ_EMPTY(&s->rx);
    }
    WITH_QEMU_LOCK_GUARD(&r->core_lock) {
        if (s->stopped) {
            break;
        }
        QSIMPLEQ_FOREACH(f, &batch, next) {
            if (!vrdma_core_net_receive(r->core, f->data, f->len)) {
                /* The GID went away while the frame waited. */
                trace_virtio_rdma_engine_rx_not_ours(f->len);
            }
        }
        more |= vrdma_core_run(r->core);
    }
    virtio_rdma_frames_free(&batch);
    if (more) {
        qemu_bh_schedule(s->engine_bh);
    }
}

static void virtio_rdma_engine_timer_cb(void *opaque)
{
    VirtIORdma *r = opaque;

    WITH_QEMU_LOCK_GUARD(&r->core_lock) {
        if (!r->stage->stopped) {
            vrdma_core_timer(r->core);
        }
    }
}

/* ---- staging (any thread; the core's host-ops run under core_lock) ---------- */

void virtio_rdma_engine_kick(VirtIORdma *r)
{
    if (r->stage->engine_bh) {      /* NULL once stopped */
        qemu_bh_schedule(r->stage->engine_bh);
    }
}

void virtio_rdma_engine_timer_mod(VirtIORdma *r, uint64_t deadline_ns)
{
    if (deadline_ns == UINT64_MAX) {
        timer_del(r->stage->timer);
    } else {
        timer_mod(r->stage->timer, MIN(deadline_ns, INT64_MAX));
    }
}

void virtio_rdma_engine_tx(VirtIORdma *r, const void *frame, size_t len)
{
    VirtIORdmaStage *s = r->stage;
    VrdmaFrame *f;

    WITH_QEMU_LOCK_GUARD(&s->lock) {
        if (s->tx_count >= VRDMA_STAGE_FRAMES_MAX) {
            trace_virtio_rdma_engine_tx_full(len);
            return;
        }
        f = g_malloc(sizeof(*f) + len);
        f->len = len;
        memcpy(f->data, frame, len);
        QSIMPLEQ_INSERT_TAIL(&s->tx, f, next);
        s->tx_count++;
    }
    qemu_bh_schedule(r->dp_bh);
}

/* A completion, or with @cqe NULL a CQ interrupt, in the core's order. */
void virtio_rdma_engine_cqe(VirtIORdma *r, uint32_t cqn,
                            const struct virtio_rdma_cq_req *cqe)
{
    VirtIORdmaStage *s = r->stage;
    VrdmaStagedCqe *c = g_new0(VrdmaStagedCqe, 1);

    c->cqn = cqn;
    c->interrupt = !cqe;
    if (cqe) {
        c->cqe = *cqe;
    }
    WITH_QEMU_LOCK_GUARD(&s->lock) {
        QSIMPLEQ_INSERT_TAIL(&s->cq, c, next);
    }
    qemu_bh_schedule(r->dp_bh);
}

/* ---- the BQL side -------------------------------------------------------------- */

void virtio_rdma_engine_gid(VirtIORdma *r, uint32_t index,
                            const uint8_t gid[16], bool added)
{
    VirtIORdmaStage *s = r->stage;

    if (index < VRDMA_GID_TABLE_LEN) {
        s->gid_valid[index] = added;
        memcpy(s->gid[index], gid, 16);
    }
}

/*
 * RoCEv2 for one of our GIDs: Ethernet, IPv4 (the GID is the v4-mapped
 * address) or IPv6, UDP to 4791.  The core checks everything else.
 */
static bool virtio_rdma_engine_claims(VirtIORdmaStage *s, const uint8_t *p,
                                      size_t len)
{
    uint8_t gid[16] = { [10] = 0xff, [11] = 0xff };
    const uint8_t *udp;
    unsigned i;

    if (len < 14 + 20 + 8) {
        return false;
    }
    switch (lduw_be_p(p + 12)) {
    case ETH_P_IP: {
        size_t ihl = (p[14] & 0xf) * 4;

        if ((p[14] >> 4) != 4 || ihl < 20 || len < 14 + ihl + 8 ||
            p[14 + 9] != IPPROTO_UDP) {
            return false;
        }
        memcpy(gid + 12, p + 14 + 16, 4);
        udp = p + 14 + ihl;
        break;
    }
    case ETH_P_IPV6:
        if (len < 14 + 40 + 8 || (p[14] >> 4) != 6 ||
            p[14 + 6] != IPPROTO_UDP) {
            return false;
        }
        memcpy(gid, p + 14 + 24, 16);
        udp = p + 14 + 40;
        break;
    default:
        return false;
    }
    if (lduw_be_p(udp + 2) != VRDMA_ROCE_PORT) {
        return false;
    }
    for (i = 0; i < VRDMA_GID_TABLE_LEN; i++) {
        if (s->gid_valid[i] && !memcmp(s->gid[i], gid, 16)) {
            return true;
        }
    }
    return false;
}

/*
 * From the net filter.  @returns true if the frame is ours: queued for the
 * engine, or dropped because the queue is full.
 */
bool virtio_rdma_engine_rx(VirtIORdma *r, const struct iovec *iov, int iovcnt,
                           size_t size)
{
    VirtIORdmaStage *s = r->stage;
    uint8_t head[14 + 60 + 8];
    size_t hlen = iov_to_buf(iov, iovcnt, 0, head, MIN(size, sizeof(head)));
    VrdmaFrame *f;

    if (!virtio_rdma_engine_claims(s, head, hlen)) {
        return false;
    }
    WITH_QEMU_LOCK_GUARD(&s->lock) {
        if (s->rx_count >= VRDMA_STAGE_FRAMES_MAX) {
            trace_virtio_rdma_engine_rx_full(size);
            return true;
        }
        f = g_malloc(sizeof(*f) + size);
        f->len = size;
        iov_to_buf(iov, iovcnt, 0, f->data, size);
        QSIMPLEQ_INSERT_TAIL(&s->rx, f, next);
        s->rx_count++;
    }
    virtio_rdma_engine_kick(r);
    return true;
}

/*
 * dp_bh: what the engine produced, in order.  A completion without a CQ
 * buffer is a late overrun for the core (whose QP then flushes: more
 * completions, taken in the next round).
 */
void virtio_rdma_engine_flush(VirtIORdma *r)
{
    VirtIORdmaStage *s = r->stage;
    VrdmaFrameList tx = QSIMPLEQ_HEAD_INITIALIZER(tx);
    VrdmaCqeList cq = QSIMPLEQ_HEAD_INITIALIZER(cq);
    unsigned budget = VRDMA_FLUSH_BATCH;
    VrdmaStagedCqe *c;
    VrdmaFrame *f;

    WITH_QEMU_LOCK_GUARD(&s->lock) {
        QSIMPLEQ_CONCAT(&tx, &s->tx);
        s->tx_count = 0;
        QSIMPLEQ_CONCAT(&cq, &s->cq);
    }
    QSIMPLEQ_FOREACH(f, &tx, next) {
        virtio_rdma_net_send(r, f->data, f->len);
    }
    virtio_rdma_frames_free(&tx);
    while (budget && (c = QSIMPLEQ_FIRST(&cq))) {
        QSIMPLEQ_REMOVE_HEAD(&cq, next);
        budget--;
        if (c->interrupt) {
            virtio_rdma_cq_interrupt(r, c->cqn);
        } else if (virtio_rdma_cq_write(r, c->cqn, &c->cqe) != 0) {
            WITH_QEMU_LOCK_GUARD(&r->core_lock) {
                vrdma_core_cq_overrun(r->core, c->cqn,
                                      le32_to_cpu(c->cqe.qp_num),
                                      le32_to_cpu(c->cqe.status));
            }
        }
        g_free(c);
    }
    if (!QSIMPLEQ_EMPTY(&cq)) {
        /* Past the budget: back to the front of the queue, in order. */
        WITH_QEMU_LOCK_GUARD(&s->lock) {
            QSIMPLEQ_PREPEND(&s->cq, &cq);
        }
        qemu_bh_schedule(r->dp_bh);
    }
}

/* Device reset: nothing staged may reach guest memory or the wire after it. */
void virtio_rdma_engine_reset(VirtIORdma *r)
{
    VirtIORdmaStage *s = r->stage;

    WITH_QEMU_LOCK_GUARD(&s->lock) {
        virtio_rdma_frames_free(&s->rx);
        virtio_rdma_frames_free(&s->tx);
        s->rx_count = s->tx_count = 0;
        virtio_rdma_cqes_free(&s->cq);
    }
}

static void virtio_rdma_engine_noop(void *opaque)
{
}

void virtio_rdma_engine_init(VirtIORdma *r)
{
    VirtIORdmaStage *s = g_new0(VirtIORdmaStage, 1);

    s->ctx = iothread_get_aio_context(r->conf.iothread);
    qemu_mutex_init(&s->lock);
    QSIMPLEQ_INIT(&s->rx);
    QSIMPLEQ_INIT(&s->tx);
    QSIMPLEQ_INIT(&s->cq);
    /*
     * No re-entrancy guard: the device's is for its own thread's MMIO, and
     * set from here it would refuse a vCPU's kick while the engine runs.
     * The engine does no MMIO (guest RAM only).
     */
    s->engine_bh = aio_bh_new(s->ctx, virtio_rdma_engine_bh, r);
    s->timer = aio_timer_new(s->ctx, QEMU_CLOCK_REALTIME, SCALE_NS,
                             virtio_rdma_engine_timer_cb, r);
    r->stage = s;
}

/*
 * Unrealize, before the core is freed: after this nothing of ours runs in
 * the iothread.  Waiting for it under the BQL is safe by the rule above.
 */
void virtio_rdma_engine_stop(VirtIORdma *r)
{
    VirtIORdmaStage *s = r->stage;

    WITH_QEMU_LOCK_GUARD(&r->core_lock) {
        s->stopped = true;
    }
    timer_del(s->timer);
    qemu_bh_delete(s->engine_bh);
    s->engine_bh = NULL;
    aio_wait_bh_oneshot(s->ctx, virtio_rdma_engine_noop, NULL);
}

void virtio_rdma_engine_cleanup(VirtIORdma *r)
{
    VirtIORdmaStage *s = r->stage;

    if (!s) {
        return;
    }
    if (s->engine_bh) {
        virtio_rdma_engine_stop(r);
    }
    timer_free(s->timer);
    virtio_rdma_engine_reset(r);
    qemu_mutex_destroy(&s->lock);
    g_free(s);
    r->stage = NULL;
}
