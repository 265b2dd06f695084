/*
 * virtio-rdma: where the soft-RoCE engine runs, and everything that crosses
 * out of it.  This is the one file that knows the placement: the main loop
 * (default) or an iothread (iothread=<id>).  The core's host-ops for the
 * wire, completions, interrupts, GID events, the timer and kicks point here.
 *
 * The rule, in both placements: nothing that can call back into the device
 * runs while core_lock is held.  An interrupt or an event record, a frame
 * handed to the netdev (QEMU delivers it synchronously where it can: slirp,
 * a hub, another device's filter), a QMP event -- each is staged here under
 * core_lock and delivered by dp_bh after the lock is let go.  dp_bh is a
 * guarded bottom half in the main loop, so DMA it does towards the device's
 * own BAR is refused by QEMU's re-entrancy guard instead of re-entering.
 * Guest memory is read and written as RAM only (virtio-rdma-mem.c), so the
 * core's own DMA can never reach MMIO.
 *
 *   main loop:  kick / timer / net filter --core_lock--> engine
 *               engine --staged--> dp_bh (BQL, guarded): interrupts, async
 *               events, frames out, GID events
 *   iothread:   net filter (BQL) --rx frames--> engine_bh (iothread,
 *               core_lock) --staged--> dp_bh (BQL, guarded)
 *
 * In the iothread the engine holds only core_lock, never the BQL, and never
 * waits for it: the main loop takes core_lock while it holds the BQL.  The
 * filter cannot ask the core whether a frame is ours without core_lock, so
 * there it applies the core's own classifier (vrdma_frame_roce_dst) to a
 * mirror of the GID table kept from gid_changed.
 *
 * Bounds (docs/system/devices/virtio-rdma.rst, "Limits"): frames
 * VRDMA_STAGE_FRAMES_MAX each way (full: dropped, as a NIC ring drops;
 * RoCE retransmits); completions are not staged (the core writes them
 * into the CQ's ring in guest RAM); interrupts one per CQ and async events
 * one per object and type (a bit each);
 * GID events VRDMA_GID_EVENT_BURST at once, then VRDMA_GID_EVENTS_PER_S,
 * coalesced per GID index to the latest state; drop traces
 * VRDMA_DROP_TRACES_PER_S.
 *
 * Lock order: BQL, core_lock, stage->lock.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <arpa/inet.h>
#include "qapi/qapi-events-rdma-virtio.h"
#include "qemu/bitmap.h"
#include "qemu/iov.h"
#include "qemu/lockable.h"
#include "qemu/main-loop.h"
#include "qemu/queue.h"
#include "qemu/timer.h"
#include "block/aio.h"
#include "block/aio-wait.h"
#include "block/thread-pool.h"
#include "virtio-rdma.h"
#include "trace.h"

#define VRDMA_STAGE_FRAMES_MAX  1024  /* per direction */
#define VRDMA_ENGINE_RX_BATCH   64    /* frames per turn, then core_lock is let go */
#define VRDMA_GID_EVENT_BURST   16
#define VRDMA_GID_EVENTS_PER_S  10
#define VRDMA_DROP_TRACES_PER_S 50

typedef struct VrdmaFrame {
    QSIMPLEQ_ENTRY(VrdmaFrame) next;
    size_t len;
    uint8_t data[];
} VrdmaFrame;

/* An fd the core watches (backend=ibverbs: its completion channel). */
#define VRDMA_FD_WATCHES 2
typedef struct VrdmaFdWatch {
    VirtIORdma *r;
    int fd;                             /* -1: slot free */
    void (*ready)(void *ctx);
    void *ctx;
} VrdmaFdWatch;

typedef struct VrdmaJobs VrdmaJobs;
typedef QSIMPLEQ_HEAD(, VrdmaFrame) VrdmaFrameList;

struct VirtIORdmaStage {
    AioContext *ctx;                    /* where the engine runs */
    bool in_iothread;
    QEMUBH *engine_bh;                  /* iothread only: rx frames, then run */
    QEMUTimer *timer;                   /* the core's timer, in ctx */
    VrdmaFdWatch fd_watch[VRDMA_FD_WATCHES]; /* handlers in ctx */
    bool stopped;                       /* under core_lock: unrealize */
    VrdmaJobs *jobs;                    /* loop.defer's, shared with them */
    uint8_t *rx_buf;                    /* main loop: a linearised frame */

    QemuMutex lock;                     /* the lists and counts below */
    VrdmaFrameList rx, tx;
    unsigned rx_count, tx_count;
    unsigned long *cq_irq;              /* per CQ (ncq bits): an interrupt */
    bool irq_staged;                    /* a bit of it is set */
    uint32_t ncq;                       /* the CQ number space (VirtIORdma) */
    /* async events staged, per type: virtio_rdma_async_bits() bits */
    unsigned long *async[VIRTIO_RDMA_ASYNC_TYPES];
    uint32_t async_bits[VIRTIO_RDMA_ASYNC_TYPES];
    bool async_staged;                  /* a bit of one is set */
    VirtIORdmaStageStats st;

    /* Under core_lock: drop-trace rate limit. */
    uint64_t drop_window_ns;
    uint32_t drop_traced;
    uint64_t drop_suppressed;

    /* Main loop only (GIDs change from control commands and reset). */
    bool gid_valid[VRDMA_GID_TABLE_LEN];        /* the table's latest state */
    uint8_t gid[VRDMA_GID_TABLE_LEN][16];
    bool gid_told_valid[VRDMA_GID_TABLE_LEN];   /* what QMP was last told */
    uint8_t gid_told[VRDMA_GID_TABLE_LEN][16];
    uint32_t gid_dirty;                         /* bit per index */
    uint32_t gid_tokens;
    int64_t gid_refill_ns;
    QEMUTimer *gid_timer;                       /* next token, main loop */
};

QEMU_BUILD_BUG_ON(VRDMA_GID_TABLE_LEN > 32);

static void virtio_rdma_frames_free(VrdmaFrameList *l)
{
    VrdmaFrame *f;

    while ((f = QSIMPLEQ_FIRST(l))) {
        QSIMPLEQ_REMOVE_HEAD(l, next);
        g_free(f);
    }
}

static bool virtio_rdma_stage_frame(VirtIORdmaStage *s, VrdmaFrameList *l,
                                    unsigned *count, const struct iovec *iov,
                                    int iovcnt, size_t offset, size_t len)
{
    VrdmaFrame *f;

    if (*count >= VRDMA_STAGE_FRAMES_MAX) {
        return false;
    }
    f = g_malloc(sizeof(*f) + len);
    f->len = len;
    iov_to_buf(iov, iovcnt, offset, f->data, len);
    QSIMPLEQ_INSERT_TAIL(l, f, next);
    (*count)++;
    return true;
}

/* ---- the engine ------------------------------------------------------------ */

/* In ctx, holding core_lock: reschedule only while the device lives. */
static void virtio_rdma_engine_again(VirtIORdma *r)
{
    VirtIORdmaStage *s = r->stage;

    if (s->stopped) {
        return;
    }
    qemu_bh_schedule(s->in_iothread ? s->engine_bh : r->dp_bh);
}

/* The iothread: staged frames, then a run of the core. */
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
        if (vrdma_core_run(r->core) || more) {
            virtio_rdma_engine_again(r);
        }
    }
    virtio_rdma_frames_free(&batch);
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

/* In ctx: a watched fd is readable; the core reads it under core_lock. */
static void virtio_rdma_engine_fd_ready(void *opaque)
{
    VrdmaFdWatch *w = opaque;

    WITH_QEMU_LOCK_GUARD(&w->r->core_lock) {
        if (!w->r->stage->stopped && w->ready) {
            w->ready(w->ctx);
        }
    }
}

/* ---- host-ops (under core_lock, in whichever thread runs the core) --------- */

/*
 * Level-triggered in the engine's AioContext; what the core stages while
 * it reads goes out through dp_bh as everything else does.
 */
static void virtio_rdma_engine_fd_watch(void *opaque, int fd,
                                        void (*ready)(void *ctx), void *ctx)
{
    VirtIORdma *r = opaque;
    VirtIORdmaStage *s = r->stage;
    VrdmaFdWatch *w = NULL;
    unsigned i;

    for (i = 0; i < VRDMA_FD_WATCHES; i++) {
        if (s->fd_watch[i].fd == fd) {
            w = &s->fd_watch[i];
        }
    }
    if (!ready) {
        if (w) {
            aio_set_fd_handler(s->ctx, fd, NULL, NULL, NULL, NULL, NULL);
            w->fd = -1;
        }
        return;
    }
    for (i = 0; !w && i < VRDMA_FD_WATCHES; i++) {
        if (s->fd_watch[i].fd < 0) {
            w = &s->fd_watch[i];
        }
    }
    assert(w); /* the core watches at most VRDMA_FD_WATCHES fds */
    *w = (VrdmaFdWatch) { .r = r, .fd = fd, .ready = ready, .ctx = ctx };
    aio_set_fd_handler(s->ctx, fd, virtio_rdma_engine_fd_ready, NULL, NULL,
                       NULL, w);
}

/*
 * loop.defer: blocking host calls (backend=ibverbs: a modify_qp or an
 * address handle that resolves an address, a registration of guest RAM)
 * on QEMU's thread pool.  Asked under core_lock from a control command
 * (main loop) or the data path (the engine's context: the main loop or the
 * iothread); the completion comes back to the context that asked and runs
 * the core's done under core_lock.  Neither a reset nor unrealize waits
 * for them (a host call may take seconds, or minutes to pin a large RAM):
 * a reset orphans the work in the core; unrealize hands the core to its
 * jobs (virtio_rdma_engine_release_core), the last of which frees it.
 */
struct VrdmaJobs {
    /*
     * Held around each done: it runs in the main loop or the iothread,
     * and once the device is gone nothing else orders them.
     */
    QemuMutex lock;
    VirtIORdma *r;          /* NULL once the device let go of the core */
    VrdmaCore *core;        /* then: the core, freed by the last done */
    Object *iothread;       /* then: referenced while its pool runs jobs */
    unsigned inflight;      /* atomic */
};

typedef struct VrdmaDeferred {
    VrdmaJobs *jobs;
    int (*work)(void *ctx);
    void (*done)(void *ctx, int ret);
    void *ctx;
} VrdmaDeferred;

static int virtio_rdma_deferred_work(void *opaque)
{
    VrdmaDeferred *d = opaque;

    return d->work(d->ctx);
}

/* An iothread's last reference goes in the main loop, not in its own thread. */
static void virtio_rdma_jobs_unref_bh(void *opaque)
{
    object_unref(opaque);
}

static void virtio_rdma_jobs_free(VrdmaJobs *j)
{
    if (j->core) {
        trace_virtio_rdma_orphan_core_freed();
        vrdma_core_free(j->core);
    }
    if (j->iothread) {
        aio_bh_schedule_oneshot(qemu_get_aio_context(),
                                virtio_rdma_jobs_unref_bh, j->iothread);
    }
    qemu_mutex_destroy(&j->lock);
    g_free(j);
}

static void virtio_rdma_deferred_done(void *opaque, int ret)
{
    VrdmaDeferred *d = opaque;
    VrdmaJobs *j = d->jobs;
    bool last;

    trace_virtio_rdma_deferred_done(ret);
    qemu_mutex_lock(&j->lock);
    if (j->r) {
        WITH_QEMU_LOCK_GUARD(&j->r->core_lock) {
            d->done(d->ctx, ret);
        }
    } else {
        d->done(d->ctx, ret); /* the core alone: vrdma_core_end() */
    }
    last = qatomic_fetch_dec(&j->inflight) == 1 && !j->r;
    qemu_mutex_unlock(&j->lock);
    g_free(d);
    if (last) {
        virtio_rdma_jobs_free(j);
    }
}

static void virtio_rdma_engine_defer(void *opaque, int (*work)(void *ctx),
                                     void (*done)(void *ctx, int ret),
                                     void *ctx)
{
    VirtIORdma *r = opaque;
    VrdmaJobs *j = r->stage->jobs;
    VrdmaDeferred *d = g_new(VrdmaDeferred, 1);

    *d = (VrdmaDeferred) { .jobs = j, .work = work, .done = done, .ctx = ctx };
    trace_virtio_rdma_deferred(qatomic_fetch_inc(&j->inflight) + 1);
    thread_pool_submit_aio(virtio_rdma_deferred_work, d,
                           virtio_rdma_deferred_done, d);
}

void virtio_rdma_engine_release_core(VirtIORdma *r)
{
    VrdmaJobs *j = r->stage->jobs;

    assert(bql_locked() && r->stage->stopped);
    qemu_mutex_lock(&j->lock);
    j->r = NULL;
    if (qatomic_read(&j->inflight)) {
        /* No done runs meanwhile: each takes j->lock first. */
        trace_virtio_rdma_orphan_core(qatomic_read(&j->inflight));
        vrdma_core_end(r->core);
        j->core = r->core;
        if (r->conf.iothread) {
            j->iothread = OBJECT(r->conf.iothread);
            object_ref(j->iothread);
        }
        r->stage->jobs = NULL; /* theirs now */
        qemu_mutex_unlock(&j->lock);
    } else {
        qemu_mutex_unlock(&j->lock);
        vrdma_core_free(r->core);
    }
    r->core = NULL;
}

static void virtio_rdma_engine_kick(void *opaque)
{
    virtio_rdma_engine_again(opaque);
}

static void virtio_rdma_engine_timer_mod(void *opaque, uint64_t deadline_ns)
{
    VirtIORdma *r = opaque;

    if (deadline_ns == UINT64_MAX) {
        timer_del(r->stage->timer);
    } else {
        timer_mod(r->stage->timer, MIN(deadline_ns, INT64_MAX));
    }
}

/* Real time, also under -accel qtest: peers on a wire do not wait for us. */
static uint64_t virtio_rdma_engine_now_ns(void *opaque)
{
    return qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
}

static void virtio_rdma_engine_tx(void *opaque, const void *frame, size_t len)
{
    VirtIORdma *r = opaque;
    VirtIORdmaStage *s = r->stage;
    struct iovec iov = { .iov_base = (void *)frame, .iov_len = len };
    bool staged;

    WITH_QEMU_LOCK_GUARD(&s->lock) {
        staged = virtio_rdma_stage_frame(s, &s->tx, &s->tx_count, &iov, 1, 0,
                                         len);
        if (!staged) {
            s->st.tx_full++;
        }
    }
    if (!staged) {
        trace_virtio_rdma_engine_tx_full(len);
        return;
    }
    qemu_bh_schedule(r->dp_bh);
}

/*
 * An armed CQ @cqn fired; its completions are in its ring already.  Staged
 * as a bit (arming is one-shot: one interrupt per CQ at most waits), which
 * dp_bh turns into the event record.
 */
static void virtio_rdma_engine_cq_notify(void *opaque, uint32_t cqn)
{
    VirtIORdma *r = opaque;
    VirtIORdmaStage *s = r->stage;

    if (cqn >= s->ncq) {
        return;
    }
    WITH_QEMU_LOCK_GUARD(&s->lock) {
        set_bit(cqn, s->cq_irq);
        s->irq_staged = true;
        s->st.cq_events++;
    }
    qemu_bh_schedule(r->dp_bh);
}

uint32_t virtio_rdma_async_bits(const VirtIORdma *r, uint32_t type)
{
    switch (type) {
    case VIRTIO_RDMA_EVENT_QP_FATAL:
        return r->nqp;
    case VIRTIO_RDMA_EVENT_CQ_ERR:
        return r->ncq;
    case VIRTIO_RDMA_EVENT_SRQ_LIMIT:
    case VIRTIO_RDMA_EVENT_SRQ_ERR:
        return r->nsrq;
    default:
        return 0;
    }
}

/*
 * An async event (QP_FATAL for a qpn, CQ_ERR for a
 * cqn, SRQ_LIMIT and SRQ_ERR for an srqn), staged as a bit: at most one
 * per object and type waits.  dp_bh takes it (virtio_rdma_engine_take_async)
 * and writes the record.
 */
static void virtio_rdma_engine_async_event(void *opaque, uint32_t type,
                                           uint32_t handle)
{
    VirtIORdma *r = opaque;
    VirtIORdmaStage *s = r->stage;
    const unsigned i = VIRTIO_RDMA_ASYNC_INDEX(type);

    if (type < VIRTIO_RDMA_EVENT_QP_FATAL || i >= VIRTIO_RDMA_ASYNC_TYPES ||
        handle >= s->async_bits[i]) {
        trace_virtio_rdma_async_event_bad(type, handle);
        return;
    }
    trace_virtio_rdma_async_event_staged(type, handle);
    WITH_QEMU_LOCK_GUARD(&s->lock) {
        set_bit(handle, s->async[i]);
        s->async_staged = true;
    }
    qemu_bh_schedule(r->dp_bh);
}

void virtio_rdma_engine_async_drop(VirtIORdma *r, uint32_t type,
                                   uint32_t handle)
{
    VirtIORdmaStage *s = r->stage;
    const unsigned i = VIRTIO_RDMA_ASYNC_INDEX(type);

    assert(i < VIRTIO_RDMA_ASYNC_TYPES);
    if (handle < s->async_bits[i]) {
        WITH_QEMU_LOCK_GUARD(&s->lock) {
            clear_bit(handle, s->async[i]);
        }
    }
}

/* At most VRDMA_DROP_TRACES_PER_S traces a second; the counters see all. */
static void virtio_rdma_engine_wire_drop(void *opaque, const char *why,
                                         uint32_t qpn)
{
    VirtIORdma *r = opaque;
    VirtIORdmaStage *s = r->stage;
    uint64_t now = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);

    if (now - s->drop_window_ns >= NANOSECONDS_PER_SECOND) {
        if (s->drop_suppressed) {
            trace_virtio_rdma_wire_drop_suppressed(s->drop_suppressed);
        }
        s->drop_window_ns = now;
        s->drop_traced = 0;
        s->drop_suppressed = 0;
    }
    if (s->drop_traced >= VRDMA_DROP_TRACES_PER_S) {
        s->drop_suppressed++;
        return;
    }
    s->drop_traced++;
    trace_virtio_rdma_wire_drop(why, qpn);
}

/*
 * A GID was added or deleted (control commands, reset, unrealize: always
 * the main loop).  The iothread placement's classifier mirror follows at
 * once; the QMP event waits for dp_bh and the rate limit.
 */
static void virtio_rdma_engine_gid_changed(void *opaque, uint32_t port,
                                           uint32_t index,
                                           const uint8_t gid[16],
                                           uint32_t gid_type, bool added)
{
    VirtIORdma *r = opaque;
    VirtIORdmaStage *s = r->stage;

    assert(bql_locked());
    trace_virtio_rdma_gid_changed(r->netdev_name, port, index, added);
    if (index >= VRDMA_GID_TABLE_LEN) {
        return;
    }
    s->gid_valid[index] = added;
    memcpy(s->gid[index], gid, 16);
    s->gid_dirty |= 1u << index;
    s->st.gid_changes++;
    virtio_rdma_mad_gid_changed(r, index, gid, added);
    qemu_bh_schedule(r->dp_bh);
}

static void virtio_rdma_engine_guest_error(void *opaque, uint8_t cmd,
                                           VrdmaErr err, const char *field,
                                           uint64_t a, uint64_t b)
{
    if (err == VRDMA_ERR_NOT_ALLOWED &&
        trace_event_get_state_backends(TRACE_VIRTIO_RDMA_ERR_GID)) {
        /* @a and @b are the GID's halves: name it as the address it is. */
        static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
        char text[INET6_ADDRSTRLEN] = "?";
        uint8_t gid[16];

        stq_be_p(gid, a);
        stq_be_p(gid + 8, b);
        if (!memcmp(gid, v4mapped, sizeof(v4mapped))) {
            inet_ntop(AF_INET, gid + 12, text, sizeof(text));
        } else {
            inet_ntop(AF_INET6, gid, text, sizeof(text));
        }
        trace_virtio_rdma_err_gid(vrdma_cmd_name(cmd), text, field);
    }
    trace_virtio_rdma_err_cmd(vrdma_cmd_name(cmd), vrdma_err_name(err), field,
                              a, b);
}

void virtio_rdma_engine_host_ops(VirtIORdma *r, VrdmaHostOps *ops)
{
    ops->opaque = r;
    ops->events.gid_changed = virtio_rdma_engine_gid_changed;
    ops->events.guest_error = virtio_rdma_engine_guest_error;
    ops->events.async_event = virtio_rdma_engine_async_event;
    ops->cq.notify = virtio_rdma_engine_cq_notify;
    ops->time.now_ns = virtio_rdma_engine_now_ns;
    ops->time.timer_mod = virtio_rdma_engine_timer_mod;
    ops->time.kick = virtio_rdma_engine_kick;
    ops->wire.send = virtio_rdma_engine_tx;
    ops->wire.drop = virtio_rdma_engine_wire_drop;
    ops->loop.fd_watch = virtio_rdma_engine_fd_watch;
    ops->loop.defer = virtio_rdma_engine_defer;
}

/* ---- the main loop ------------------------------------------------------------ */

/*
 * From the net filter (BQL), @offset bytes into the backend's frame (past a
 * virtio-net header).  @returns true if the frame is ours: taken by the
 * engine, or dropped because its queue is full.
 */
bool virtio_rdma_engine_rx(VirtIORdma *r, const struct iovec *iov, int iovcnt,
                           size_t offset, size_t size)
{
    VirtIORdmaStage *s = r->stage;
    uint8_t head[14 + 4 + 60 + 8], dst[16];
    size_t hlen;
    bool ours = false, staged = false;
    unsigned i;

    assert(bql_locked());
    hlen = iov_to_buf(iov, iovcnt, offset, head, MIN(size, sizeof(head)));
    if (!vrdma_frame_roce_dst(head, hlen, dst)) {
        return false;
    }
    if (!s->in_iothread) {
        const uint8_t *frame = s->rx_buf;

        if (iovcnt == 1) {
            frame = (const uint8_t *)iov[0].iov_base + offset;
        } else {
            iov_to_buf(iov, iovcnt, offset, s->rx_buf, size);
        }
        WITH_QEMU_LOCK_GUARD(&r->core_lock) {
            ours = vrdma_core_net_receive(r->core, frame, size);
        }
        return ours;
    }
    for (i = 0; i < VRDMA_GID_TABLE_LEN && !ours; i++) {
        ours = s->gid_valid[i] && !memcmp(s->gid[i], dst, 16);
    }
    if (!ours) {
        return false;
    }
    WITH_QEMU_LOCK_GUARD(&s->lock) {
        staged = virtio_rdma_stage_frame(s, &s->rx, &s->rx_count, iov, iovcnt,
                                         offset, size);
        if (!staged) {
            s->st.rx_full++;
        }
    }
    if (!staged) {
        trace_virtio_rdma_engine_rx_full(size);
        return true;
    }
    WITH_QEMU_LOCK_GUARD(&r->core_lock) {
        virtio_rdma_engine_again(r);
    }
    return true;
}

static void virtio_rdma_gid_event(VirtIORdma *r, const uint8_t gid[16],
                                  bool added)
{
    uint64_t subnet_prefix, interface_id;

    /*
     * pvrdma's event, unchanged, so libvirt's handler works: the GID's two
     * halves in network byte order, copied raw.
     */
    memcpy(&subnet_prefix, gid, 8);
    memcpy(&interface_id, gid + 8, 8);
    /* Defence in depth: the core refused any other GID at ADD_GID. */
    if (r->allow.n && !vrdma_gid_allowed(&r->allow, gid)) {
        return;
    }
    trace_virtio_rdma_gid_event(r->netdev_name, added);
    r->stage->st.gid_events++;
    qapi_event_send_rdma_gid_status_changed(r->netdev_name, added,
                                            subnet_prefix, interface_id);
}

/*
 * Tell QMP what changed in the GID table since it was last told, coalesced
 * per index to the latest state (an add and a delete in between cost
 * nothing), within the token bucket unless @all (unrealize).
 */
static void virtio_rdma_engine_gid_events(VirtIORdma *r, bool all)
{
    VirtIORdmaStage *s = r->stage;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    const int64_t period = NANOSECONDS_PER_SECOND / VRDMA_GID_EVENTS_PER_S;
    int64_t n = (now - s->gid_refill_ns) / period;
    unsigned i;

    if (s->gid_tokens + n >= VRDMA_GID_EVENT_BURST) {
        s->gid_tokens = VRDMA_GID_EVENT_BURST;
        s->gid_refill_ns = now;
    } else {
        s->gid_tokens += n;
        s->gid_refill_ns += n * period;
    }
    for (i = 0; i < VRDMA_GID_TABLE_LEN && s->gid_dirty; i++) {
        bool was = s->gid_told_valid[i], is = s->gid_valid[i];
        bool same = !memcmp(s->gid_told[i], s->gid[i], 16);
        unsigned need = (was && (!is || !same)) + (is && (!was || !same));

        if (!(s->gid_dirty & (1u << i))) {
            continue;
        }
        if (!all && need > s->gid_tokens) {
            timer_mod(s->gid_timer, s->gid_refill_ns + period * need);
            return;
        }
        if (was && (!is || !same)) {
            virtio_rdma_gid_event(r, s->gid_told[i], false);
        }
        if (is && (!was || !same)) {
            virtio_rdma_gid_event(r, s->gid[i], true);
        }
        s->gid_tokens -= all ? MIN(need, s->gid_tokens) : need;
        s->gid_told_valid[i] = is;
        memcpy(s->gid_told[i], s->gid[i], 16);
        s->gid_dirty &= ~(1u << i);
    }
}

static void virtio_rdma_engine_gid_timer_cb(void *opaque)
{
    VirtIORdma *r = opaque;

    qemu_bh_schedule(r->dp_bh);
}

/*
 * dp_bh (BQL, guarded, core_lock NOT held): the engine's turn in the main
 * loop placement, then what it staged, in order, within a budget.
 */
void virtio_rdma_engine_flush(VirtIORdma *r)
{
    VirtIORdmaStage *s = r->stage;
    VrdmaFrameList tx = QSIMPLEQ_HEAD_INITIALIZER(tx);
    VrdmaFrame *f;

    assert(bql_locked());
    if (!s->in_iothread) {
        WITH_QEMU_LOCK_GUARD(&r->core_lock) {
            if (vrdma_core_run(r->core)) {
                virtio_rdma_engine_again(r);
            }
        }
    }
    WITH_QEMU_LOCK_GUARD(&s->lock) {
        QSIMPLEQ_CONCAT(&tx, &s->tx);
        s->tx_count = 0;
    }
    QSIMPLEQ_FOREACH(f, &tx, next) {
        virtio_rdma_wire_send(r, f->data, f->len);
    }
    virtio_rdma_frames_free(&tx);
    if (s->gid_dirty) {
        virtio_rdma_engine_gid_events(r, false);
    }
}

/*
 * DESTROY_CQ @cqn (main loop, core_lock not held): an interrupt staged for
 * it would reach whichever CQ takes the number next.
 */
void virtio_rdma_engine_cq_destroyed(VirtIORdma *r, uint32_t cqn)
{
    VirtIORdmaStage *s = r->stage;

    assert(bql_locked());
    if (cqn >= s->ncq) {
        return;
    }
    WITH_QEMU_LOCK_GUARD(&s->lock) {
        clear_bit(cqn, s->cq_irq);
    }
    virtio_rdma_engine_async_drop(r, VIRTIO_RDMA_EVENT_CQ_ERR, cqn);
}

/*
 * DESTROY_QP (main loop, core_lock not held): a QP_FATAL staged for queue
 * index @qpn is dropped, since a new QP may take the number.  Its
 * completions are in the CQ rings already.
 */
void virtio_rdma_engine_qp_destroyed(VirtIORdma *r, uint32_t qpn)
{
    assert(bql_locked());
    virtio_rdma_engine_async_drop(r, VIRTIO_RDMA_EVENT_QP_FATAL, qpn);
}

void virtio_rdma_engine_take_events(VirtIORdma *r, unsigned long *cq,
                                    unsigned long **ev)
{
    VirtIORdmaStage *s = r->stage;

    assert(bql_locked());
    WITH_QEMU_LOCK_GUARD(&s->lock) {
        if (s->irq_staged) {
            bitmap_or(cq, cq, s->cq_irq, s->ncq);
            bitmap_zero(s->cq_irq, s->ncq);
            s->irq_staged = false;
        }
        if (!s->async_staged) {
            break;
        }
        for (unsigned i = 0; i < VIRTIO_RDMA_ASYNC_TYPES; i++) {
            bitmap_or(ev[i], ev[i], s->async[i], s->async_bits[i]);
            bitmap_zero(s->async[i], s->async_bits[i]);
        }
        s->async_staged = false;
    }
}

void virtio_rdma_engine_stats(VirtIORdma *r, VirtIORdmaStageStats *st)
{
    VirtIORdmaStage *s = r->stage;

    WITH_QEMU_LOCK_GUARD(&s->lock) {
        *st = s->st;
        st->staged_frames = s->rx_count + s->tx_count;
    }
    st->max_staged_frames = VRDMA_STAGE_FRAMES_MAX;
}

/*
 * Device reset: nothing staged may reach guest memory or the wire after it.
 * GID events stay: the management side must still hear of the deletions.
 */
void virtio_rdma_engine_reset(VirtIORdma *r)
{
    VirtIORdmaStage *s = r->stage;

    timer_del(s->timer);
    WITH_QEMU_LOCK_GUARD(&s->lock) {
        virtio_rdma_frames_free(&s->rx);
        virtio_rdma_frames_free(&s->tx);
        s->rx_count = s->tx_count = 0;
        bitmap_zero(s->cq_irq, s->ncq);
        s->irq_staged = false;
        for (unsigned i = 0; i < VIRTIO_RDMA_ASYNC_TYPES; i++) {
            bitmap_zero(s->async[i], s->async_bits[i]);
        }
        s->async_staged = false;
    }
}

static void virtio_rdma_engine_noop(void *opaque)
{
}

/* Realize, before the core exists (its host-ops point here). */
void virtio_rdma_engine_init(VirtIORdma *r)
{
    VirtIORdmaStage *s = g_new0(VirtIORdmaStage, 1);

    s->in_iothread = r->conf.iothread != NULL;
    s->ctx = s->in_iothread ? iothread_get_aio_context(r->conf.iothread) :
             qemu_get_aio_context();
    qemu_mutex_init(&s->lock);
    s->jobs = g_new0(VrdmaJobs, 1);
    qemu_mutex_init(&s->jobs->lock);
    s->jobs->r = r;
    QSIMPLEQ_INIT(&s->rx);
    QSIMPLEQ_INIT(&s->tx);
    s->ncq = r->ncq;
    s->cq_irq = bitmap_new(s->ncq);
    for (unsigned i = 0; i < VIRTIO_RDMA_ASYNC_TYPES; i++) {
        s->async_bits[i] = virtio_rdma_async_bits(r, VIRTIO_RDMA_ASYNC_TYPE(i));
        s->async[i] = bitmap_new(s->async_bits[i]);
    }
    for (unsigned i = 0; i < VRDMA_FD_WATCHES; i++) {
        s->fd_watch[i].fd = -1;
    }
    s->gid_tokens = VRDMA_GID_EVENT_BURST;
    s->gid_refill_ns = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    s->gid_timer = timer_new_ns(QEMU_CLOCK_REALTIME,
                                virtio_rdma_engine_gid_timer_cb, r);
    if (s->in_iothread) {
        /*
         * No re-entrancy guard: the device's is for its own thread's MMIO,
         * and set from here it would refuse a vCPU's kick while the engine
         * runs.  The engine does no MMIO (guest RAM only).
         */
        s->engine_bh = aio_bh_new(s->ctx, virtio_rdma_engine_bh, r);
    } else {
        s->rx_buf = g_malloc(VIRTIO_RDMA_RX_MAX);
    }
    s->timer = aio_timer_new(s->ctx, QEMU_CLOCK_REALTIME, SCALE_NS,
                             virtio_rdma_engine_timer_cb, r);
    r->stage = s;
}

/*
 * Unrealize, before the core is freed: after this nothing of ours runs in
 * the engine's context.  Waiting for the iothread under the BQL is safe by
 * the rule above.
 */
void virtio_rdma_engine_stop(VirtIORdma *r)
{
    VirtIORdmaStage *s = r->stage;

    WITH_QEMU_LOCK_GUARD(&r->core_lock) {
        s->stopped = true;
    }
    timer_del(s->timer);
    if (s->engine_bh) {
        qemu_bh_delete(s->engine_bh);
        s->engine_bh = NULL;
        aio_wait_bh_oneshot(s->ctx, virtio_rdma_engine_noop, NULL);
    }
}

/* After the core's last host-op: its final GID deletions are told now. */
void virtio_rdma_engine_cleanup(VirtIORdma *r)
{
    VirtIORdmaStage *s = r->stage;

    if (!s) {
        return;
    }
    if (!s->stopped) {
        virtio_rdma_engine_stop(r);
    }
    if (s->gid_dirty) {
        virtio_rdma_engine_gid_events(r, true);
    }
    virtio_rdma_engine_reset(r);
    if (s->jobs) {
        /* None in flight (else release_core handed them the struct). */
        assert(!qatomic_read(&s->jobs->inflight));
        virtio_rdma_jobs_free(s->jobs);
    }
    timer_free(s->timer);
    timer_free(s->gid_timer);
    qemu_mutex_destroy(&s->lock);
    g_free(s->cq_irq);
    for (unsigned i = 0; i < VIRTIO_RDMA_ASYNC_TYPES; i++) {
        g_free(s->async[i]);
    }
    g_free(s->rx_buf);
    g_free(s);
    r->stage = NULL;
}
