/*
 * virtio-rdma-ring-test: virtio-rdma-pci's queues in guest memory
 * (VIRTIO_RDMA_F_RINGS; docs/specs/virtio-rdma.rst, "Queues in guest
 * memory"), driven through libqos/virtio-rdma-ring.c, each test on its own
 * QEMU with virtio-net-pci at 04.0 and virtio-rdma-pci at 04.1.
 *
 *   features/...    RINGS needs WIRE_QPN and EVENT_QUEUE (FEATURES_OK);
 *                   the ring commands need RINGS; the virtqueue data path's
 *                   commands are refused with it;
 *   doorbells/...   the doorbell region: shared memory region 0, its size,
 *                   reads of 0;
 *   context/...     ALLOC_CONTEXT / FREE_CONTEXT: limits, EBUSY, reset;
 *   create/...      CREATE_CQ_RING and CREATE_QP_RING field checks, in the
 *                   spec's order, and what a ring maps;
 *   loopback/...    two RC QPs of one device: SEND/RECV and RDMA WRITE
 *                   through 4-entry rings that wrap several times, byte
 *                   for byte in guest memory, CQE by CQE in the CQ rings,
 *                   every trailer index checked;
 *   cq-arm/...      CQ_ARM by doorbell: one VIRTIO_RDMA_EVENT_CQ per arm;
 *   srq/...         a shared receive queue: QPs take one entry per message
 *                   in ring order, the SRQ_LIMIT and SRQ_ERR events
 *                   through the event queue, DESTROY_SRQ while in use;
 *   boundary/...    each abuse ends as the spec says and the device serves
 *                   another QP afterwards: an SQ doorbell beyond the ring
 *                   (QP_FATAL), doorbells on another context's page or for
 *                   queues that are gone (ignored), a CQ that fills or
 *                   whose driver_idx is nonsense (CQ_ERR).
 *
 * A plain qtest:
 *   QTEST_QEMU_BINARY=./qemu-system-x86_64 ./tests/qtest/virtio-rdma-ring-test
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "qemu/bswap.h"
#include "qemu/host-utils.h"
#include "qobject/qdict.h"
#include "standard-headers/linux/virtio_config.h"
#include "libqos/virtio-rdma.h"
#include "libqos/virtio-rdma-dp.h"
#include "libqos/virtio-rdma-ring.h"

#define MAC         "52:54:00:12:34:56"
#define MAX_CTX     4
#define RDMA_OPTS   "max-contexts=4"

/* Each side's memory region: 4 pages at a user virtual address. */
#define MR_PAGES    4
#define MR_LEN      (MR_PAGES * 4096)
#define VA_A        0x7f0000100000ull
#define VA_B        0x7f0000200000ull
#define VA_C        0x7f0000300000ull
#define VA_D        0x7f0000400000ull
/* SEND sources below 0x2000; receive buffers at 0x2000, WRITEs at 0x3000. */
#define RECV_AREA   0x2000u
#define WRITE_AREA  0x3000u
#define AREA_LEN    0x1000u

/* Far above RAM and every MMIO window of "-M pc". */
#define OUTSIDE_RAM 0xfffff000000ull
#define EV_LEN      sizeof(struct virtio_rdma_event)
/* How long a CQ ring or the event queue must stay quiet to count as idle. */
#define QUIET_US    (200 * 1000)
#define ANY         0xffffffffu
#define NEXT        VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION

#define ACCESS_ALL \
    (VIRTIO_RDMA_ACCESS_LOCAL_WRITE | VIRTIO_RDMA_ACCESS_REMOTE_WRITE | \
     VIRTIO_RDMA_ACCESS_REMOTE_READ | VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC)

#define ST(call, want) \
    g_assert_cmpstr(qvrdma_status_name(call), ==, want)

/* ---- one device --------------------------------------------------------- */

typedef struct Fix {
    QVrdmaRingDev *rd;
    QVrdmaDev *d;
    QVrdmaEq *eq;
    uint32_t pdn;
    uint8_t gid[16];            /* GID 0: ::ffff:10.0.0.1 */
} Fix;

static void fix_boot_opts(Fix *f, const char *opts)
{
    memset(f, 0, sizeof(*f));
    f->rd = qvrdma_ring_dev_boot(MAC, opts);
    f->d = f->rd->d;
    f->eq = qvrdma_dp_eq_create(f->d, 8, EV_LEN, 8);
    ST(qvrdma_create_pd(&f->d->r, &f->pdn), "OK");
    qvrdma_dp_loopback_gid(f->gid);
    qvrdma_dp_add_gid(f->d, 0, f->gid);
}

static void fix_boot(Fix *f)
{
    fix_boot_opts(f, RDMA_OPTS);
}

static void fix_quit(Fix *f)
{
    qvrdma_dp_eq_free(f->eq);
    qvrdma_ring_dev_quit(f->rd);
}

static void assert_healthy(Fix *f, const char *after)
{
    uint8_t status = qvrdma_status(&f->d->r);

    if (status & VIRTIO_CONFIG_S_NEEDS_RESET) {
        g_error("%s: the device wants a reset (status 0x%x)", after, status);
    }
}

static uint64_t mapped_pages(Fix *f)
{
    QDict *rsp;
    uint64_t n = qdict_get_int(qvrdma_dp_query(f->d, &rsp), "mapped-pages");

    qobject_unref(rsp);
    return n;
}

/* query-virtio-rdma's live PDs, CQs, QPs, MRs. */
static void assert_objects(Fix *f, uint32_t cqs, uint32_t qps)
{
    uint32_t n[4];

    qvrdma_dp_objects(f->d, false, n);
    g_assert_cmpuint(n[1], ==, cqs);
    g_assert_cmpuint(n[2], ==, qps);
}

/* ---- events ------------------------------------------------------------- */

static void expect_event(Fix *f, const char *what, uint32_t type,
                         uint32_t handle)
{
    struct virtio_rdma_event ev;

    if (!qvrdma_dp_eq_poll(f->eq, &ev, QVRDMA_DP_TIMEOUT_US)) {
        g_error("%s: no event (want type %u handle %u) within %d s", what,
                type, handle, QVRDMA_DP_TIMEOUT_US / 1000000);
    }
    if (le32_to_cpu(ev.type) != type || le32_to_cpu(ev.handle) != handle ||
        ev.reserved[0] || ev.reserved[1]) {
        g_error("%s: event type %u handle %u reserved 0x%x 0x%x, want type "
                "%u handle %u", what, le32_to_cpu(ev.type),
                le32_to_cpu(ev.handle), ev.reserved[0], ev.reserved[1],
                type, handle);
    }
    g_test_message("%s: event type %u handle %u", what, type, handle);
}

static void expect_no_event(Fix *f, const char *what)
{
    struct virtio_rdma_event ev;

    if (qvrdma_dp_eq_poll(f->eq, &ev, QUIET_US)) {
        g_error("%s: unexpected event type %u handle %u", what,
                le32_to_cpu(ev.type), le32_to_cpu(ev.handle));
    }
}

/* ---- one end of a conversation ------------------------------------------ */

typedef struct Side {
    const char *name;
    Fix *f;
    uint32_t ctx;
    QVrdmaRingCq *cq;           /* both queues of the QP */
    QVrdmaRingQp *qp;
    bool qp_gone;               /* destroyed by the test */
    QVrdmaPageTable pt;
    struct virtio_rdma_rsp_mr mr;
    uint64_t va;
    uint32_t sq_psn;
    uint8_t *shadow;            /* what the MR must hold */
} Side;

/*
 * A CQ of 2^@cq_log entries (cqe as many) and an RC QP with 2^@qp_log WRs
 * and 2 SGEs each way on rings of as many entries, both in @ctx, and an MR
 * of random bytes.
 */
static void side_init_any(Side *s, Fix *f, const char *name, uint32_t ctx,
                          uint64_t va, uint32_t sq_psn, uint8_t cq_log,
                          uint8_t qp_log, const QVrdmaRingSrq *srq)
{
    size_t i;

    memset(s, 0, sizeof(*s));
    s->name = name;
    s->f = f;
    s->ctx = ctx;
    s->va = va;
    s->sq_psn = sq_psn;
    s->cq = qvrdma_ring_cq_create(f->rd, ctx, 1u << cq_log, cq_log);
    s->qp = srq ? qvrdma_ring_qp_create_on_srq(f->rd, ctx, f->pdn, s->cq,
                                               s->cq, 1u << qp_log, 2, qp_log,
                                               srq)
                : qvrdma_ring_qp_create(f->rd, ctx, f->pdn, s->cq, s->cq,
                                        1u << qp_log, 2, qp_log);
    /* 24 random bits: equal to a queue index below 16 once in 2^20. */
    g_assert_cmpuint(s->qp->vq.wire_qpn, >=, 16);
    g_assert_cmpuint(s->qp->vq.wire_qpn, <, 0xffffff);

    qvrdma_pt_build(&f->d->r, &s->pt, MR_PAGES, NULL);
    ST(qvrdma_reg_user_mr(&f->d->r, f->pdn, ACCESS_ALL, va, MR_LEN, va,
                          s->pt.l1, MR_PAGES, &s->mr), "OK");
    s->shadow = g_malloc(MR_LEN);
    for (i = 0; i < MR_LEN; i++) {
        s->shadow[i] = g_test_rand_int_range(0, 256);
    }
    qtest_memwrite(f->d->qts, s->pt.data, s->shadow, MR_LEN);
}

static void side_init_sized(Side *s, Fix *f, const char *name, uint32_t ctx,
                            uint64_t va, uint32_t sq_psn, uint8_t cq_log,
                            uint8_t qp_log)
{
    side_init_any(s, f, name, ctx, va, sq_psn, cq_log, qp_log, NULL);
}

static void side_init(Side *s, Fix *f, const char *name, uint32_t ctx,
                      uint64_t va, uint32_t sq_psn)
{
    side_init_sized(s, f, name, ctx, va, sq_psn, 2, 2);
}

static void side_free(Side *s)
{
    QVirtioRdma *r = &s->f->d->r;

    if (!s->qp_gone) {
        qvrdma_ring_qp_destroy(s->qp);
    }
    qvrdma_ring_qp_free(s->qp);
    qvrdma_ring_cq_destroy(s->cq);
    qvrdma_ring_cq_free(s->cq);
    ST(qvrdma_dereg_mr(r, s->mr.mrn), "OK");
    qvrdma_pt_free(r, &s->pt);
    g_free(s->shadow);
}

static void connect_one(Side *s, Side *peer)
{
    QVrdmaPath p = {
        .dest_qpn = peer->qp->vq.wire_qpn,
        .sgid_index = 0,
        .rq_psn = peer->sq_psn,
        .sq_psn = s->sq_psn,
        .retry_cnt = 7,
        .rnr_retry = 7,
    };

    memcpy(p.dgid, s->f->gid, 16);
    memcpy(p.dmac, s->f->d->mac, 6);     /* loopback: our own MAC */
    qvrdma_dp_rc_connect(s->f->d, &s->qp->vq, &p);
}

static void connect_pair(Side *a, Side *b)
{
    connect_one(a, b);
    connect_one(b, a);
}

static uint32_t qp_state(Side *s)
{
    return qvrdma_dp_qp_state(s->f->d, &s->qp->vq);
}

/* MODIFY_QP to RESET, on the device's side and ours. */
static void reset_qp(Side *s)
{
    struct virtio_rdma_qp_attr attr = { .qp_state = VIRTIO_RDMA_QPS_RESET };

    ST(qvrdma_modify_qp(&s->f->d->r, s->qp->vq.qpn, VIRTIO_RDMA_QP_STATE,
                        &attr), "OK");
    qvrdma_ring_qp_counters_reset(s->qp);
}

static struct virtio_rdma_sge sge_of(Side *s, uint32_t off, uint32_t len)
{
    g_assert_cmpuint(off + len, <=, MR_LEN);
    return (struct virtio_rdma_sge) {
        .addr = cpu_to_le64(s->va + off),
        .length = cpu_to_le32(len),
        .lkey = cpu_to_le32(s->mr.lkey),
    };
}

/* The whole region must equal the shadow. */
static void side_check_mem(Side *s, const char *after)
{
    g_autofree uint8_t *mem = g_malloc(MR_LEN);
    size_t i;

    qtest_memread(s->f->d->qts, s->pt.data, mem, MR_LEN);
    for (i = 0; i < MR_LEN; i++) {
        if (mem[i] != s->shadow[i]) {
            size_t j = i;

            while (j < MR_LEN && mem[j] != s->shadow[j]) {
                j++;
            }
            g_error("%s: %s's memory differs at MR offset 0x%zx..0x%zx: got "
                    "0x%02x, expected 0x%02x", after, s->name, i, j - 1,
                    mem[i], s->shadow[i]);
        }
    }
}

/* ---- completions -------------------------------------------------------- */

static void expect_cqe(QVrdmaRingCq *cq, const char *what, uint64_t wr_id,
                       uint32_t status, uint32_t opcode, uint32_t byte_len,
                       uint32_t qp_num)
{
    struct virtio_rdma_cq_req c;
    g_autofree char *got = NULL;

    if (!qvrdma_ring_cq_poll(cq, &c, QVRDMA_DP_TIMEOUT_US)) {
        g_error("%s: no completion at counter %u of CQ %u within %d s "
                "(want wr_id 0x%" PRIx64 " %s; device_idx %u)", what,
                cq->cons, cq->cqn, QVRDMA_DP_TIMEOUT_US / 1000000, wr_id,
                qvrdma_wc_status_name(status),
                qvrdma_gring_device_idx(&cq->ring));
    }
    got = qvrdma_cqe_str(&c);
    if (le64_to_cpu(c.wr_id) != wr_id || le32_to_cpu(c.status) != status ||
        (opcode != ANY && le32_to_cpu(c.opcode) != opcode) ||
        (byte_len != ANY && le32_to_cpu(c.byte_len) != byte_len) ||
        le32_to_cpu(c.qp_num) != qp_num) {
        g_error("%s: wrong completion on CQ %u: want wr_id 0x%" PRIx64
                " %s opcode %s byte_len %d qp_num %u; got %s", what, cq->cqn,
                wr_id, qvrdma_wc_status_name(status),
                opcode == ANY ? "any" : qvrdma_wc_opcode_name(opcode),
                byte_len == ANY ? -1 : (int)byte_len, qp_num, got);
    }
    g_test_message("%s: %s", what, got);
}

static void expect_cq_quiet(QVrdmaRingCq *cq, const char *what)
{
    struct virtio_rdma_cq_req c;

    if (qvrdma_ring_cq_poll(cq, &c, QUIET_US)) {
        g_autofree char *got = qvrdma_cqe_str(&c);

        g_error("%s: unexpected completion on CQ %u: %s", what, cq->cqn,
                got);
    }
}

/* ---- operations (requester s, responder t) ------------------------------ */

/* Posts (without doorbells) a receive on t and a SEND from s. */
static void write_send_recv(Side *s, Side *t, uint32_t src, uint32_t dst,
                            uint32_t len, uint64_t wr_id)
{
    struct virtio_rdma_sge from = sge_of(s, src, len);
    /* The rest of the receive area: the device writes only len bytes. */
    struct virtio_rdma_sge to = sge_of(t, dst, RECV_AREA + AREA_LEN - dst);
    struct virtio_rdma_sq_req wr = qvrdma_wr_send(wr_id);

    g_assert_cmpuint(dst, >=, RECV_AREA);
    g_assert_cmpuint(dst + len, <=, RECV_AREA + AREA_LEN);
    qvrdma_ring_write_recv(t->qp, wr_id + 1, &to, 1);
    qvrdma_ring_write_send(s->qp, &wr, &from, 1);
    memcpy(t->shadow + dst, s->shadow + src, len);
}

/* Posts (without a doorbell) an RDMA WRITE from s to t. */
static void write_rdma_write(Side *s, Side *t, uint32_t src, uint32_t dst,
                             uint32_t len, uint64_t wr_id)
{
    struct virtio_rdma_sge from = sge_of(s, src, len);
    struct virtio_rdma_sq_req wr =
        qvrdma_wr_rdma(VIRTIO_RDMA_WR_RDMA_WRITE, wr_id, t->va + dst,
                       t->mr.rkey);

    qvrdma_ring_write_send(s->qp, &wr, &from, 1);
    memcpy(t->shadow + dst, s->shadow + src, len);
}

/* One SEND s -> t, doorbells rung, both completions and memory checked. */
static void send_one(Side *s, Side *t, uint32_t len, uint64_t wr_id,
                     const char *what)
{
    write_send_recv(s, t, 0x100, RECV_AREA + 0x10, len, wr_id);
    qvrdma_ring_rq_doorbell(t->qp);
    qvrdma_ring_sq_doorbell(s->qp);
    expect_cqe(s->cq, what, wr_id, VIRTIO_RDMA_WC_SUCCESS,
               VIRTIO_RDMA_WC_SEND, len, s->qp->vq.wire_qpn);
    expect_cqe(t->cq, what, wr_id + 1, VIRTIO_RDMA_WC_SUCCESS,
               VIRTIO_RDMA_WC_RECV, len, t->qp->vq.wire_qpn);
    side_check_mem(t, what);
    side_check_mem(s, what);
}

/* Two fresh QPs of the device still carry a SEND, byte for byte. */
static void assert_still_serves(Fix *f, const char *after)
{
    g_autofree char *what = g_strdup_printf("after %s: C->D SEND", after);
    Side c, d;

    assert_healthy(f, after);
    side_init(&c, f, "C", 0, VA_C, 0x300);
    side_init(&d, f, "D", 0, VA_D, 0x400);
    connect_pair(&c, &d);
    send_one(&c, &d, 777, 0xc0de00, what);
    side_free(&d);
    side_free(&c);
}

/* ---- features ----------------------------------------------------------- */

/*
 * "The device offers all three and fails FEATURES_OK unless the driver
 * accepts all three"; its config says version 2 and it has two
 * virtqueues.
 */
static void test_features_all_required(void)
{
    const uint64_t wire = 1ull << VIRTIO_RDMA_F_WIRE_QPN;
    const uint64_t eq = 1ull << VIRTIO_RDMA_F_EVENT_QUEUE;
    const uint64_t rings = 1ull << VIRTIO_RDMA_F_RINGS;
    const uint64_t subsets[] = { 0, wire, eq, rings, wire | eq, rings | wire,
                                 rings | eq };
    QVrdmaDev *d = qvrdma_dev_boot("user,id=n0", MAC, RDMA_OPTS);
    QVirtioDevice *vdev = &d->vpci->vdev;
    uint32_t ctx;
    size_t i;

    g_assert_cmphex(qvirtio_get_features(vdev) & QVRDMA_RING_FEATURES, ==,
                    QVRDMA_RING_FEATURES);
    g_assert_cmpuint(le32_to_cpu(d->cfg.hw_ver), ==, VIRTIO_RDMA_ABI_VERSION);
    for (i = 0; i < ARRAY_SIZE(subsets); i++) {
        g_assert_false(qvrdma_ring_try_features(d, subsets[i]));
    }
    g_assert_true(qvrdma_ring_try_features(d, QVRDMA_RING_FEATURES));
    /* Control and event queue; nothing beyond (size 0: no such queue). */
    for (i = 0; i < 4; i++) {
        vdev->bus->queue_select(vdev, i);
        g_test_message("virtqueue %zu: size %u", i,
                       vdev->bus->get_queue_size(vdev));
        if (i < VIRTIO_RDMA_NUM_VQS) {
            g_assert_cmpuint(vdev->bus->get_queue_size(vdev), >, 0);
        } else {
            g_assert_cmpuint(vdev->bus->get_queue_size(vdev), ==, 0);
        }
    }

    /* And the device works after the refusals. */
    d->r.want_features = QVRDMA_RING_FEATURES;
    qvrdma_dp_reinit(d);
    g_assert_cmphex(d->r.features, ==, QVRDMA_RING_FEATURES);
    ST(qvrdma_alloc_context(&d->r, &ctx), "OK");
    qvrdma_dev_quit(d);
}

/*
 * "CREATE_CQ (2), CREATE_QP (11) and REQ_NOTIFY_CQ (18), version 1's
 * virtqueue data path, are refused with EOPNOTSUPP", whatever the request.
 */
static void test_features_virtqueue_cmds_refused(void)
{
    static const struct {
        uint8_t cmd;
        size_t len;
    } cmds[] = {
        { VIRTIO_RDMA_CMD_CREATE_CQ, 4 },
        { VIRTIO_RDMA_CMD_CREATE_QP, sizeof(struct virtio_rdma_cmd_create_qp) },
        { VIRTIO_RDMA_CMD_REQ_NOTIFY_CQ, 8 },
        { VIRTIO_RDMA_CMD_CREATE_CQ, 0 },
    };
    Fix f;
    QVrdmaRingCq *cq;
    struct virtio_rdma_cmd_create_qp req;
    uint8_t buf[64] = { 0 }, rsp[8];
    size_t i;

    fix_boot(&f);
    cq = qvrdma_ring_cq_create(f.rd, 0, 4, 2);
    /* A request CREATE_QP_RING would take, and a real CQ to arm. */
    req = qvrdma_qp_req(f.pdn, VIRTIO_RDMA_QPT_RC, cq->cqn);
    memcpy(buf, &req, sizeof(req));
    for (i = 0; i < ARRAY_SIZE(cmds); i++) {
        if (cmds[i].cmd == VIRTIO_RDMA_CMD_REQ_NOTIFY_CQ) {
            stl_le_p(buf, cq->cqn);
            stl_le_p(buf + 4, VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);
        }
        ST(qvrdma_cmd(&f.d->r, cmds[i].cmd, buf, cmds[i].len, rsp,
                      sizeof(rsp)), "EOPNOTSUPP");
    }
    assert_objects(&f, 1, 0);
    qvrdma_ring_cq_destroy(cq);
    qvrdma_ring_cq_free(cq);
    fix_quit(&f);
}

/* ---- the doorbell region ------------------------------------------------ */

/*
 * "virtio shared memory region 0 ... of (1 + max_ctx) · 4096 bytes rounded
 * up to a power of two"; "Reads of the region return 0".
 */
static void test_doorbells_region(void)
{
    QVrdmaRingDev *rd = qvrdma_ring_dev_boot(MAC, RDMA_OPTS);
    QVrdmaShm shm;
    uint32_t page;

    g_assert_cmpuint(rd->max_ctx, ==, MAX_CTX);
    g_assert_true(qvrdma_find_shm(rd->d->vpci, VIRTIO_RDMA_SHM_DOORBELLS,
                                  &shm));
    g_assert_cmpuint(shm.length, ==,
                     pow2ceil((1 + MAX_CTX) * VIRTIO_RDMA_DB_PAGE));
    g_test_message("doorbells: BAR %u offset 0x%" PRIx64 " length 0x%" PRIx64,
                   shm.bar, shm.offset, shm.length);
    for (page = 0; page < shm.length / VIRTIO_RDMA_DB_PAGE; page++) {
        g_assert_cmphex(qvrdma_ring_doorbell_read(rd, page, 0), ==, 0);
        g_assert_cmphex(qvrdma_ring_doorbell_read(rd, page,
                                                  VIRTIO_RDMA_DB_PAGE - 8),
                        ==, 0);
    }
    qvrdma_ring_dev_quit(rd);
}

/* ---- contexts ----------------------------------------------------------- */

static void test_context_alloc_free(void)
{
    Fix f;
    QVirtioRdma *r;
    uint32_t ctx[MAX_CTX], extra, again, i, j;
    QVrdmaRingCq *cq;
    QVrdmaRingQp *qp;

    fix_boot(&f);
    r = &f.d->r;
    /* 1 .. max_ctx, each once; then none free. */
    for (i = 0; i < MAX_CTX; i++) {
        ST(qvrdma_alloc_context(r, &ctx[i]), "OK");
        g_assert_cmpuint(ctx[i], >=, 1);
        g_assert_cmpuint(ctx[i], <=, MAX_CTX);
        for (j = 0; j < i; j++) {
            g_assert_cmpuint(ctx[i], !=, ctx[j]);
        }
    }
    ST(qvrdma_alloc_context(r, &extra), "ENOMEM");
    ST(qvrdma_free_context(r, ctx[1]), "OK");
    ST(qvrdma_alloc_context(r, &again), "OK");
    g_assert_cmpuint(again, ==, ctx[1]);

    /* Not a user context, or not allocated. */
    ST(qvrdma_free_context(r, VIRTIO_RDMA_KERNEL_CTX), "ENOENT");
    ST(qvrdma_free_context(r, MAX_CTX + 1), "ENOENT");
    ST(qvrdma_free_context(r, 0xffffffffu), "ENOENT");

    /* A context that owns a CQ or a QP is busy. */
    cq = qvrdma_ring_cq_create(f.rd, ctx[0], 4, 2);
    ST(qvrdma_free_context(r, ctx[0]), "EBUSY");
    qp = qvrdma_ring_qp_create(f.rd, ctx[0], f.pdn, cq, cq, 4, 1, 2);
    ST(qvrdma_free_context(r, ctx[0]), "EBUSY");
    qvrdma_ring_qp_destroy(qp);
    qvrdma_ring_qp_free(qp);
    ST(qvrdma_free_context(r, ctx[0]), "EBUSY");
    qvrdma_ring_cq_destroy(cq);
    qvrdma_ring_cq_free(cq);
    ST(qvrdma_free_context(r, ctx[0]), "OK");
    ST(qvrdma_free_context(r, ctx[0]), "ENOENT");

    /* "Device reset frees every user context." */
    qvrdma_dp_reinit(f.d);
    for (i = 0; i < MAX_CTX; i++) {
        ST(qvrdma_alloc_context(r, &ctx[i]), "OK");
    }
    ST(qvrdma_alloc_context(r, &extra), "ENOMEM");
    fix_quit(&f);
}

/* ---- creation checks ---------------------------------------------------- */

/* A CQ ring request that is right, and variants that are not. */
static void test_create_cq_ring(void)
{
    Fix f;
    QVirtioRdma *r;
    QVrdmaGRing g, big, bad_data;
    struct virtio_rdma_ring ok, x;
    uint64_t outside[1] = { OUTSIDE_RAM };
    uint32_t cqn, cqn2, max_cqe;

    /* A cap of 3 mapped pages: a 2-page ring fits, a second does not. */
    fix_boot_opts(&f, RDMA_OPTS ",max-mapped-pages=3");
    r = &f.d->r;
    max_cqe = le32_to_cpu(f.d->cfg.max_ring_cqe);
    qvrdma_gring_alloc(r, &g, 2, VIRTIO_RDMA_CQE_LOG_STRIDE);
    ok = qvrdma_gring_desc(&g);
    g_assert_cmpuint(ok.npages, ==, 1);

    /* ctx, then cqe, then the CQ's own ring rules. */
    ST(qvrdma_create_cq_ring(r, 1, 4, &ok, &cqn), "ENOENT");
    ST(qvrdma_create_cq_ring(r, MAX_CTX + 1, 4, &ok, &cqn), "ENOENT");
    ST(qvrdma_create_cq_ring(r, 0, 0, &ok, &cqn), "ERANGE");
    ST(qvrdma_create_cq_ring(r, 0, max_cqe + 1, &ok, &cqn), "ERANGE");
    ST(qvrdma_create_cq_ring(r, 0, 5, &ok, &cqn), "ERANGE"); /* > entries */
    x = ok;
    x.log_stride = 7;
    x.npages = qvrdma_gring_npages(2, 7);
    ST(qvrdma_create_cq_ring(r, 0, 4, &x, &cqn), "ERANGE");

    /* The ring checks: reserved, log_entries, npages, then the table. */
    x = ok;
    x.reserved = 1;
    ST(qvrdma_create_cq_ring(r, 0, 4, &x, &cqn), "EINVAL");
    x = ok;
    x.log_entries = VIRTIO_RDMA_RING_MAX_LOG_ENTRIES + 1;
    ST(qvrdma_create_cq_ring(r, 0, 4, &x, &cqn), "ERANGE");
    x = ok;
    x.npages = 2;
    ST(qvrdma_create_cq_ring(r, 0, 4, &x, &cqn), "EINVAL");
    x.npages = 0;
    ST(qvrdma_create_cq_ring(r, 0, 4, &x, &cqn), "EINVAL");
    /* 64 entries of 64 bytes fill a page: the trailer needs a second. */
    qvrdma_gring_alloc(r, &big, 6, VIRTIO_RDMA_CQE_LOG_STRIDE);
    x = qvrdma_gring_desc(&big);
    g_assert_cmpuint(x.npages, ==, 2);
    x.npages = 1;
    ST(qvrdma_create_cq_ring(r, 0, 64, &x, &cqn), "EINVAL");

    x = ok;
    x.pages = OUTSIDE_RAM;
    ST(qvrdma_create_cq_ring(r, 0, 4, &x, &cqn), "EFAULT");
    x.pages = ok.pages + 8;
    ST(qvrdma_create_cq_ring(r, 0, 4, &x, &cqn), "EINVAL");
    qvrdma_pt_set_l1(r, &g.pt, 0, OUTSIDE_RAM);
    ST(qvrdma_create_cq_ring(r, 0, 4, &ok, &cqn), "EFAULT");
    qvrdma_pt_set_l1(r, &g.pt, 0, g.pt.l2 + 8);
    ST(qvrdma_create_cq_ring(r, 0, 4, &ok, &cqn), "EINVAL");
    qvrdma_pt_set_l1(r, &g.pt, 0, g.pt.l2);
    qvrdma_pt_set_page(r, &g.pt, 0, g.pt.data + 0x800);
    ST(qvrdma_create_cq_ring(r, 0, 4, &ok, &cqn), "EINVAL");
    qvrdma_pt_set_page(r, &g.pt, 0, g.pt.data);
    memset(&bad_data, 0, sizeof(bad_data));
    qvrdma_pt_build(r, &bad_data.pt, 1, outside);
    x = ok;
    x.pages = bad_data.pt.l1;
    ST(qvrdma_create_cq_ring(r, 0, 4, &x, &cqn), "EFAULT");
    assert_objects(&f, 0, 0);
    g_assert_cmpuint(mapped_pages(&f), ==, 0);

    /* Right: the ring's pages are mapped for the CQ's life, and capped. */
    x = qvrdma_gring_desc(&big);
    ST(qvrdma_create_cq_ring(r, 0, 64, &x, &cqn), "OK");
    g_assert_cmpuint(mapped_pages(&f), ==, 2);
    ST(qvrdma_create_cq_ring(r, 0, 64, &x, &cqn2), "ENOMEM");
    ST(qvrdma_create_cq_ring(r, 0, 4, &ok, &cqn2), "OK");
    g_assert_cmpuint(mapped_pages(&f), ==, 3);
    assert_objects(&f, 2, 0);
    ST(qvrdma_destroy_cq(r, cqn), "OK");
    ST(qvrdma_destroy_cq(r, cqn2), "OK");
    g_assert_cmpuint(mapped_pages(&f), ==, 0);

    qvrdma_pt_free(r, &bad_data.pt);
    qvrdma_gring_free(r, &big);
    qvrdma_gring_free(r, &g);
    fix_quit(&f);
}

/* A QP ring request that is right, and variants that are not. */
static void test_create_qp_ring(void)
{
    Fix f;
    QVirtioRdma *r;
    QVrdmaRingCq *cq0, *cq1;
    QVrdmaGRing sq, rq, bad_data;
    struct virtio_rdma_cmd_create_qp_ring ok, x;
    uint64_t outside[1] = { OUTSIDE_RAM };
    uint32_t ctx1, qpn, wire, pages0;

    fix_boot(&f);
    r = &f.d->r;
    ST(qvrdma_alloc_context(r, &ctx1), "OK");
    cq0 = qvrdma_ring_cq_create(f.rd, 0, 4, 2);
    cq1 = qvrdma_ring_cq_create(f.rd, ctx1, 4, 2);
    /* 4 WRs of 2 SGEs: SQ entries of 128 (88 + 32) bytes, RQ of 64 (16 + 32) */
    qvrdma_gring_alloc(r, &sq, 2, 7);
    qvrdma_gring_alloc(r, &rq, 2, 6);
    ok = qvrdma_ring_qp_req(0, f.pdn, cq0->cqn, cq0->cqn, 4, 2, &sq, &rq);
    pages0 = mapped_pages(&f);

    /* CREATE_QP's checks come first. */
    x = ok;
    x.qp.pdn = f.pdn + 1;
    ST(qvrdma_create_qp_ring(r, &x, &qpn, &wire), "ENOENT");
    x = ok;
    x.qp.max_inline_data = 1;
    ST(qvrdma_create_qp_ring(r, &x, &qpn, &wire), "ERANGE");

    /* ctx, and both CQs belong to it. */
    x = ok;
    x.ctx = ctx1 == 1 ? 2 : 1;  /* a user context not allocated */
    ST(qvrdma_create_qp_ring(r, &x, &qpn, &wire), "ENOENT");
    x = ok;
    x.qp.send_cqn = cq1->cqn;
    ST(qvrdma_create_qp_ring(r, &x, &qpn, &wire), "EINVAL");
    x = ok;
    x.qp.recv_cqn = cq1->cqn;
    ST(qvrdma_create_qp_ring(r, &x, &qpn, &wire), "EINVAL");
    x = ok;
    x.ctx = ctx1;
    ST(qvrdma_create_qp_ring(r, &x, &qpn, &wire), "EINVAL");

    /* An srqn that names no SRQ; flags: none defined. */
    x = ok;
    x.srqn = 1;
    ST(qvrdma_create_qp_ring(r, &x, &qpn, &wire), "ENOENT");
    x = ok;
    x.flags = 1;
    ST(qvrdma_create_qp_ring(r, &x, &qpn, &wire), "EOPNOTSUPP");

    /* The rings hold the QP's WRs and SGEs. */
    x = ok;
    x.qp.max_send_wr = 5;
    ST(qvrdma_create_qp_ring(r, &x, &qpn, &wire), "ERANGE");
    x = ok;
    x.qp.max_recv_wr = 5;
    ST(qvrdma_create_qp_ring(r, &x, &qpn, &wire), "ERANGE");
    x = ok;
    x.qp.max_send_sge = 3;      /* 88 + 48 > 128 */
    ST(qvrdma_create_qp_ring(r, &x, &qpn, &wire), "ERANGE");
    x = ok;
    x.qp.max_recv_sge = 3;      /* 16 + 48 = 64: fits */
    ST(qvrdma_create_qp_ring(r, &x, &qpn, &wire), "OK");
    ST(qvrdma_destroy_qp(r, qpn), "OK");
    x.qp.max_recv_sge = 4;      /* 16 + 64 > 64 */
    ST(qvrdma_create_qp_ring(r, &x, &qpn, &wire), "ERANGE");

    /* The ring checks, sq then rq. */
    x = ok;
    x.sq.reserved = 1;
    ST(qvrdma_create_qp_ring(r, &x, &qpn, &wire), "EINVAL");
    x = ok;
    x.rq.reserved = 0x100;
    ST(qvrdma_create_qp_ring(r, &x, &qpn, &wire), "EINVAL");
    x = ok;
    x.sq.log_stride = VIRTIO_RDMA_RING_MAX_LOG_STRIDE + 1;
    ST(qvrdma_create_qp_ring(r, &x, &qpn, &wire), "ERANGE");
    x = ok;
    x.rq.log_stride = VIRTIO_RDMA_RING_MIN_LOG_STRIDE - 1;
    ST(qvrdma_create_qp_ring(r, &x, &qpn, &wire), "ERANGE");
    x = ok;
    x.rq.log_entries = VIRTIO_RDMA_RING_MAX_LOG_ENTRIES + 1;
    ST(qvrdma_create_qp_ring(r, &x, &qpn, &wire), "ERANGE");
    x = ok;
    x.sq.npages = 2;
    ST(qvrdma_create_qp_ring(r, &x, &qpn, &wire), "EINVAL");
    x = ok;
    x.rq.npages = 0;
    ST(qvrdma_create_qp_ring(r, &x, &qpn, &wire), "EINVAL");
    x = ok;
    x.sq.pages = OUTSIDE_RAM;
    ST(qvrdma_create_qp_ring(r, &x, &qpn, &wire), "EFAULT");
    x = ok;
    x.sq.pages += 8;
    ST(qvrdma_create_qp_ring(r, &x, &qpn, &wire), "EINVAL");
    memset(&bad_data, 0, sizeof(bad_data));
    qvrdma_pt_build(r, &bad_data.pt, 1, outside);
    x = ok;
    x.rq.pages = bad_data.pt.l1;
    ST(qvrdma_create_qp_ring(r, &x, &qpn, &wire), "EFAULT");
    /* A failed rq leaves the sq it had mapped unmapped again. */
    assert_objects(&f, 2, 0);
    g_assert_cmpuint(mapped_pages(&f), ==, pages0);

    /* Right, in ctx 0 and in a user context; a queue of no WRs has no ring. */
    ST(qvrdma_create_qp_ring(r, &ok, &qpn, &wire), "OK");
    g_assert_cmpuint(mapped_pages(&f), ==, pages0 + 2);
    ST(qvrdma_destroy_qp(r, qpn), "OK");
    g_assert_cmpuint(mapped_pages(&f), ==, pages0);
    x = qvrdma_ring_qp_req(ctx1, f.pdn, cq1->cqn, cq1->cqn, 4, 2, &sq, NULL);
    ST(qvrdma_create_qp_ring(r, &x, &qpn, &wire), "OK");
    g_assert_cmpuint(mapped_pages(&f), ==, pages0 + 1);
    ST(qvrdma_destroy_qp(r, qpn), "OK");
    assert_objects(&f, 2, 0);

    qvrdma_pt_free(r, &bad_data.pt);
    qvrdma_gring_free(r, &sq);
    qvrdma_gring_free(r, &rq);
    qvrdma_ring_cq_destroy(cq1);
    qvrdma_ring_cq_free(cq1);
    qvrdma_ring_cq_destroy(cq0);
    qvrdma_ring_cq_free(cq0);
    fix_quit(&f);
}

/*
 * CREATE_*_RING number QPs and CQs up to max-qp / max-cq, which the config
 * (max_ring_qp, max_ring_cq) and query-virtio-rdma say; the default is the
 * ABI's largest.  Version 1's virtqueue limits in the config are 0.
 */
static void test_create_limits(void)
{
    Fix f;
    QVirtioRdma *r;
    QVrdmaRingCq *cqs[24];
    QVrdmaGRing sq, extra;
    struct virtio_rdma_ring desc;
    struct virtio_rdma_cmd_create_qp_ring req;
    uint32_t qpns[38], qpn, wire, cqn, ring_qp, ring_cq, highest = 0;
    QDict *rsp;
    unsigned i;

    fix_boot(&f);
    /* A host RDMA device lowers them to its own. */
    ring_qp = le32_to_cpu(f.d->cfg.max_ring_qp);
    ring_cq = le32_to_cpu(f.d->cfg.max_ring_cq);
    if (!qvrdma_dp_ibverbs()) {
        g_assert_cmpuint(ring_qp, ==, VIRTIO_RDMA_RING_MAX_QP);
        g_assert_cmpuint(ring_cq, ==, VIRTIO_RDMA_RING_MAX_CQ);
    }
    g_assert_cmpuint(ring_qp, >, 40);
    g_assert_cmpuint(ring_cq, >, 24);
    g_assert_cmpuint(qdict_get_int(qvrdma_dp_query(f.d, &rsp), "max-qp"),
                     ==, ring_qp);
    qobject_unref(rsp);
    g_assert_cmpuint(f.d->cfg.reserved_max_qp | f.d->cfg.reserved_max_qp_wr |
                     f.d->cfg.reserved_max_cq | f.d->cfg.reserved_max_cqe,
                     ==, 0);
    fix_quit(&f);

    fix_boot_opts(&f, RDMA_OPTS ",max-qp=40,max-cq=24");
    r = &f.d->r;
    g_assert_cmpuint(le32_to_cpu(f.d->cfg.max_ring_qp), ==, 40);
    g_assert_cmpuint(le32_to_cpu(f.d->cfg.max_ring_cq), ==, 24);
    for (i = 0; i < 24; i++) {
        cqs[i] = qvrdma_ring_cq_create(f.rd, 0, 4, 2);
        g_assert_cmpuint(cqs[i]->cqn, ==, i);
    }
    qvrdma_gring_alloc(r, &extra, 2, VIRTIO_RDMA_CQE_LOG_STRIDE);
    desc = qvrdma_gring_desc(&extra);
    ST(qvrdma_create_cq_ring(r, 0, 4, &desc, &cqn), "ENOMEM");
    qvrdma_gring_free(r, &extra);

    /* QPs 2..39 on one SQ ring's pages (the device keeps no per-page state). */
    qvrdma_gring_alloc(r, &sq, 2, 7);
    req = qvrdma_ring_qp_req(0, f.pdn, cqs[23]->cqn, cqs[23]->cqn, 4, 2, &sq,
                             NULL);
    for (i = 0; i < 38; i++) {
        ST(qvrdma_create_qp_ring(r, &req, &qpns[i], &wire), "OK");
        highest = MAX(highest, qpns[i]);
    }
    g_assert_cmpuint(highest, ==, 39);
    ST(qvrdma_create_qp_ring(r, &req, &qpn, &wire), "ENOMEM");
    assert_objects(&f, 24, 38);
    assert_healthy(&f, "max-qp=40 and max-cq=24 used up");

    for (i = 0; i < 38; i++) {
        ST(qvrdma_destroy_qp(r, qpns[i]), "OK");
    }
    qvrdma_gring_free(r, &sq);
    for (i = 0; i < 24; i++) {
        qvrdma_ring_cq_destroy(cqs[i]);
        qvrdma_ring_cq_free(cqs[i]);
    }
    fix_quit(&f);
}

/* ---- loopback ----------------------------------------------------------- */

/* Every trailer says what the driver saw. */
static void check_trailers(Side *s, Side *t, const char *what)
{
    g_assert_cmpuint(qvrdma_gring_device_idx(&s->qp->sq), ==, s->qp->sq_prod);
    g_assert_cmpuint(qvrdma_gring_device_idx(&t->qp->rq), ==, t->qp->rq_prod);
    g_assert_cmpuint(qvrdma_gring_device_idx(&s->cq->ring), ==, s->cq->cons);
    g_assert_cmpuint(qvrdma_gring_device_idx(&t->cq->ring), ==, t->cq->cons);
    g_assert_cmpuint(qvrdma_gring_driver_idx(&s->cq->ring), ==, s->cq->cons);
    g_test_message("%s: A sq %u, B rq %u, A cq %u, B cq %u", what,
                   s->qp->sq_prod, t->qp->rq_prod, s->cq->cons, t->cq->cons);
}

/*
 * SEND/RECV and RDMA WRITE A -> B through 4-entry rings (4-entry CQs), in
 * batches of 1 to 4 WRs behind one doorbell each (4: the whole ring), so
 * every ring wraps several times.
 */
static void test_loopback_send_write(void)
{
    enum { NMSG = 30 };
    typedef struct Want {
        uint64_t wr_id;
        uint32_t opcode;
        uint32_t len;
    } Want;
    Fix f;
    Side a, b;
    uint32_t msg = 0, batch, entries;

    fix_boot(&f);
    side_init(&a, &f, "A", 0, VA_A, 0x100);
    side_init(&b, &f, "B", 0, VA_B, 0xabcde);
    connect_pair(&a, &b);
    entries = qvrdma_gring_entries(&a.qp->sq);
    g_assert_cmpuint(entries, ==, 4);

    for (batch = 0; msg < NMSG; batch++) {
        g_autofree char *what = g_strdup_printf("batch %u", batch);
        Want sent[4], recvd[4];
        uint32_t k = MIN(1 + batch % 4, NMSG - msg), n_sent = 0, n_recv = 0;
        uint32_t i;

        for (i = 0; i < k; i++, msg++) {
            uint32_t len = 1 + (msg * 389) % 3000;
            uint32_t src = (msg * 257) % (RECV_AREA - len);
            uint64_t wr_id = 0x1000 + 0x10 * msg;

            if (msg % 3 != 2) {
                uint32_t dst = RECV_AREA + (msg * 131) % (AREA_LEN - len);

                write_send_recv(&a, &b, src, dst, len, wr_id);
                sent[n_sent++] = (Want) { wr_id, VIRTIO_RDMA_WC_SEND, len };
                recvd[n_recv++] = (Want) { wr_id + 1, VIRTIO_RDMA_WC_RECV,
                                           len };
            } else {
                uint32_t dst = WRITE_AREA + (msg * 61) % (AREA_LEN - len);

                write_rdma_write(&a, &b, src, dst, len, wr_id);
                sent[n_sent++] = (Want) { wr_id, VIRTIO_RDMA_WC_RDMA_WRITE,
                                          len };
            }
        }
        if (n_recv) {
            qvrdma_ring_rq_doorbell(b.qp);
        }
        qvrdma_ring_sq_doorbell(a.qp);
        for (i = 0; i < n_sent; i++) {
            expect_cqe(a.cq, what, sent[i].wr_id, VIRTIO_RDMA_WC_SUCCESS,
                       sent[i].opcode, sent[i].len, a.qp->vq.wire_qpn);
        }
        for (i = 0; i < n_recv; i++) {
            expect_cqe(b.cq, what, recvd[i].wr_id, VIRTIO_RDMA_WC_SUCCESS,
                       recvd[i].opcode, recvd[i].len, b.qp->vq.wire_qpn);
        }
        side_check_mem(&b, what);
        side_check_mem(&a, what);
        check_trailers(&a, &b, what);
    }
    /* Nothing more than asked for. */
    expect_cq_quiet(a.cq, "after the last batch");
    expect_cq_quiet(b.cq, "after the last batch");
    expect_no_event(&f, "after the last batch");
    g_assert_cmpuint(a.qp->sq_prod / entries, >=, 3);
    g_assert_cmpuint(b.qp->rq_prod / entries, >=, 3);
    g_assert_cmpuint(a.cq->cons / qvrdma_gring_entries(&a.cq->ring), >=, 3);
    g_assert_cmpuint(b.cq->cons / qvrdma_gring_entries(&b.cq->ring), >=, 3);
    g_assert_cmpuint(qvrdma_dp_counter(f.d, "completions"), ==,
                     a.cq->taken + b.cq->taken);
    g_assert_cmpuint(qvrdma_dp_counter(f.d, "cq-overruns"), ==, 0);
    side_free(&b);
    side_free(&a);
    fix_quit(&f);
}

/* ---- CQ arming ---------------------------------------------------------- */

/*
 * "CQ_ARM arms the CQ as REQ_NOTIFY_CQ did, with the same rules ... The
 * event is a VIRTIO_RDMA_EVENT_CQ record."
 */
static void test_cq_arm_doorbell(void)
{
    struct virtio_rdma_cqe e;
    struct virtio_rdma_sge from, to;
    struct virtio_rdma_sq_req wr;
    Fix f;
    Side a, b;

    fix_boot(&f);
    side_init(&a, &f, "A", 0, VA_A, 0x100);
    side_init(&b, &f, "B", 0, VA_B, 0xabcde);
    connect_pair(&a, &b);

    send_one(&a, &b, 100, 0x100, "not armed");
    expect_no_event(&f, "a completion on an unarmed CQ");

    qvrdma_ring_cq_arm(b.cq, VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);
    write_send_recv(&a, &b, 0x200, RECV_AREA + 0x40, 200, 0x200);
    qvrdma_ring_rq_doorbell(b.qp);
    qvrdma_ring_sq_doorbell(a.qp);
    expect_event(&f, "armed NEXT_COMPLETION", VIRTIO_RDMA_EVENT_CQ,
                 b.cq->cqn);
    /* The completion that fired it is in the ring before the record. */
    g_assert_true(qvrdma_ring_cq_peek(b.cq, b.cq->cons, &e));
    expect_cqe(b.cq, "armed", 0x201, VIRTIO_RDMA_WC_SUCCESS,
               VIRTIO_RDMA_WC_RECV, 200, b.qp->vq.wire_qpn);
    expect_cqe(a.cq, "armed", 0x200, VIRTIO_RDMA_WC_SUCCESS,
               VIRTIO_RDMA_WC_SEND, 200, a.qp->vq.wire_qpn);
    expect_no_event(&f, "one event per arm");

    /* Arming is one-shot. */
    send_one(&a, &b, 300, 0x300, "after the event");
    expect_no_event(&f, "a completion after the arm was used");

    /* SOLICITED: not a successful send completion, a solicited receive. */
    qvrdma_ring_cq_arm(a.cq, VIRTIO_RDMA_NOTIFY_SOLICITED);
    qvrdma_ring_cq_arm(b.cq, VIRTIO_RDMA_NOTIFY_SOLICITED);
    send_one(&a, &b, 50, 0x400, "unsolicited SEND");
    expect_no_event(&f, "SOLICITED arms and an unsolicited SEND");
    from = sge_of(&a, 0x300, 60);
    to = sge_of(&b, RECV_AREA + 0x100, 60);
    wr = qvrdma_wr_send(0x500);
    wr.send_flags |= VIRTIO_RDMA_SEND_SOLICITED;
    qvrdma_ring_post_recv(b.qp, 0x501, &to, 1);
    qvrdma_ring_post_send(a.qp, &wr, &from, 1);
    memcpy(b.shadow + RECV_AREA + 0x100, a.shadow + 0x300, 60);
    expect_event(&f, "SOLICITED receive", VIRTIO_RDMA_EVENT_CQ, b.cq->cqn);
    expect_cqe(b.cq, "solicited", 0x501, VIRTIO_RDMA_WC_SUCCESS,
               VIRTIO_RDMA_WC_RECV, 60, b.qp->vq.wire_qpn);
    expect_cqe(a.cq, "solicited", 0x500, VIRTIO_RDMA_WC_SUCCESS,
               VIRTIO_RDMA_WC_SEND, 60, a.qp->vq.wire_qpn);
    expect_no_event(&f, "A's CQ, armed SOLICITED, by a successful send");
    side_check_mem(&b, "solicited");

    side_free(&b);
    side_free(&a);
    fix_quit(&f);
}

/* ---- boundaries --------------------------------------------------------- */

/*
 * "An SQ or RQ doorbell whose producer counter minus the device's consumer
 * counter (mod 2^32) exceeds the ring's entries puts the QP in ERR with one
 * QP_FATAL event; the device then reads nothing more from that QP's rings
 * until it is reset."  "its outstanding work completes with WR_FLUSH_ERR."
 */
/* ---- shared receive queues ---------------------------------------------- */

/* A receive of the rest of t's receive area into @srq, and a SEND s -> t. */
static void srq_send(Side *s, Side *t, QVrdmaRingSrq *srq, uint32_t len,
                     uint32_t src, uint32_t dst, uint64_t wr_id)
{
    struct virtio_rdma_sge from = sge_of(s, src, len);
    struct virtio_rdma_sge to = sge_of(t, dst, RECV_AREA + AREA_LEN - dst);
    struct virtio_rdma_sq_req wr = qvrdma_wr_send(wr_id);

    qvrdma_ring_srq_write(srq, wr_id + 1, &to, 1);
    qvrdma_ring_srq_doorbell(srq);
    qvrdma_ring_post_send(s->qp, &wr, &from, 1);
    memcpy(t->shadow + dst, s->shadow + src, len);
}

static struct virtio_rdma_rsp_query_srq query_srq(Fix *f, uint32_t srqn)
{
    struct virtio_rdma_cmd_query_srq req = { .srqn = cpu_to_le32(srqn) };
    struct virtio_rdma_rsp_query_srq rsp = { 0 };

    ST(qvrdma_cmd(&f->d->r, VIRTIO_RDMA_CMD_QUERY_SRQ, &req, sizeof(req),
                  &rsp, sizeof(rsp)), "OK");
    return rsp;
}

/*
 * "a QP takes one entry, the next in ring order, when a message needs a
 * receive ... Its receive completions go to its own receive CQ, with its
 * own qp_num."  Two QPs (B, D) on one 4-entry SRQ; A and C send to them in
 * turn, twelve messages, so the SRQ ring wraps three times.  (On
 * backend=ibverbs the host's SRQ hands the entries out, in its order: one
 * at a time posted, they are taken in ring order there too.)
 */
static void test_srq_loopback(void)
{
    QVrdmaRingSrq *srq;
    Fix f;
    Side a, b, c, d;
    uint32_t m;

    fix_boot(&f);
    srq = qvrdma_ring_srq_create(f.rd, 0, f.pdn, 4, 2, 2);
    g_assert_cmpuint(srq->srqn, >=, 1);
    side_init(&a, &f, "A", 0, VA_A, 0x100);
    side_init_any(&b, &f, "B", 0, VA_B, 0xabcde, 2, 2, srq);
    side_init(&c, &f, "C", 0, VA_C, 0x300);
    side_init_any(&d, &f, "D", 0, VA_D, 0x400, 2, 2, srq);
    connect_pair(&a, &b);
    connect_pair(&c, &d);
    for (m = 0; m < 12; m++) {
        g_autofree char *what = g_strdup_printf("message %u", m);
        Side *s = m % 2 ? &c : &a, *t = m % 2 ? &d : &b;
        uint32_t len = 1 + (m * 389) % 3000;
        uint64_t wr_id = 0x5000 + 0x10 * m;

        srq_send(s, t, srq, len, (m * 257) % (RECV_AREA - len), RECV_AREA,
                 wr_id);
        expect_cqe(s->cq, what, wr_id, VIRTIO_RDMA_WC_SUCCESS,
                   VIRTIO_RDMA_WC_SEND, len, s->qp->vq.wire_qpn);
        expect_cqe(t->cq, what, wr_id + 1, VIRTIO_RDMA_WC_SUCCESS,
                   VIRTIO_RDMA_WC_RECV, len, t->qp->vq.wire_qpn);
        side_check_mem(t, what);
        if (!qvrdma_dp_ibverbs()) { /* by need: one entry a message */
            g_assert_cmpuint(qvrdma_gring_device_idx(&srq->ring), ==, m + 1);
        } else { /* everything announced, into the host's SRQ */
            g_assert_true(qvrdma_gring_wait_device_idx(&srq->ring, srq->prod,
                                                       QVRDMA_DP_TIMEOUT_US));
        }
    }
    expect_cq_quiet(b.cq, "after the last message");
    expect_cq_quiet(d.cq, "after the last message");
    expect_no_event(&f, "after the last message");
    side_free(&d);
    side_free(&c);
    side_free(&b);
    side_free(&a);
    qvrdma_ring_srq_destroy(srq);
    qvrdma_ring_srq_free(srq);
    fix_quit(&f);
}

/*
 * "when, after the device took an entry, fewer than srq_limit announced
 * entries remain untaken, the device sends one SRQ_LIMIT event and sets
 * srq_limit to 0"; "an index beyond the ring breaks the SRQ (one SRQ_ERR
 * event)"; DESTROY_SRQ with a QP on it: EBUSY.  The device goes on.
 */
static void test_srq_limit_and_break(void)
{
    struct virtio_rdma_cmd_modify_srq mod = {
        .attr_mask = cpu_to_le32(VIRTIO_RDMA_SRQ_LIMIT),
        .srq_limit = cpu_to_le32(3),
    };
    struct virtio_rdma_cmd_destroy_srq des;
    struct virtio_rdma_sq_req wr;
    struct virtio_rdma_sge to, from;
    QVrdmaRingSrq *srq;
    Fix f;
    Side a, b;
    uint32_t i, taken;

    fix_boot(&f);
    srq = qvrdma_ring_srq_create(f.rd, 0, f.pdn, 8, 2, 3);
    side_init(&a, &f, "A", 0, VA_A, 0x100);
    side_init_any(&b, &f, "B", 0, VA_B, 0xabcde, 3, 2, srq);
    connect_pair(&a, &b);
    to = sge_of(&b, RECV_AREA, AREA_LEN);
    for (i = 0; i < 3; i++) {
        qvrdma_ring_srq_write(srq, 0x900 + i, &to, 1);
    }
    mod.srqn = cpu_to_le32(srq->srqn);
    ST(qvrdma_cmd(&f.d->r, VIRTIO_RDMA_CMD_MODIFY_SRQ, &mod, sizeof(mod),
                  NULL, 0), "OK");
    g_assert_cmpuint(le32_to_cpu(query_srq(&f, srq->srqn).srq_limit), ==, 3);

    /* One more entry and a SEND: 3 left, not below the limit. */
    srq_send(&a, &b, srq, 100, 0, RECV_AREA, 0x700);
    expect_cqe(b.cq, "first", 0x900, VIRTIO_RDMA_WC_SUCCESS,
               VIRTIO_RDMA_WC_RECV, 100, b.qp->vq.wire_qpn);
    expect_no_event(&f, "3 entries left, limit 3");
    wr = qvrdma_wr_send(0x710);
    from = sge_of(&a, 0, 50);
    qvrdma_ring_post_send(a.qp, &wr, &from, 1);
    expect_cqe(b.cq, "second", 0x901, VIRTIO_RDMA_WC_SUCCESS,
               VIRTIO_RDMA_WC_RECV, 50, b.qp->vq.wire_qpn);
    expect_event(&f, "2 entries left, limit 3", VIRTIO_RDMA_EVENT_SRQ_LIMIT,
                 srq->srqn);
    g_assert_cmpuint(le32_to_cpu(query_srq(&f, srq->srqn).srq_limit), ==, 0);

    des.srqn = cpu_to_le32(srq->srqn);
    ST(qvrdma_cmd(&f.d->r, VIRTIO_RDMA_CMD_DESTROY_SRQ, &des, sizeof(des),
                  NULL, 0), "EBUSY");

    /*
     * A doorbell beyond the 8-entry ring: the SRQ breaks, nothing else.
     * The device took 2 (soft-RoCE: by need) or all 4 (ibverbs: for the
     * host's SRQ).
     */
    taken = qvrdma_gring_device_idx(&srq->ring);
    g_assert_cmpuint(taken, ==, qvrdma_dp_ibverbs() ? 4 : 2);
    qvrdma_ring_doorbell(f.rd, 0, VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_SRQ,
                                                 srq->srqn, taken + 8 + 1));
    expect_event(&f, "SRQ doorbell beyond the ring", VIRTIO_RDMA_EVENT_SRQ_ERR,
                 srq->srqn);
    g_assert_cmpuint(qvrdma_gring_device_idx(&srq->ring), ==, taken);
    g_assert_cmpuint(qp_state(&b), ==, VIRTIO_RDMA_QPS_RTS);
    expect_cq_quiet(b.cq, "a broken SRQ");
    assert_still_serves(&f, "SRQ_ERR");

    side_free(&b);
    qvrdma_ring_srq_destroy(srq);
    qvrdma_ring_srq_free(srq);
    side_free(&a);
    fix_quit(&f);
}

static void test_boundary_sq_beyond_ring(void)
{
    struct virtio_rdma_sge buf, from;
    struct virtio_rdma_sq_req wr;
    uint32_t entries, consumed;
    Fix f;
    Side a, b;

    fix_boot(&f);
    side_init(&a, &f, "A", 0, VA_A, 0x100);
    side_init(&b, &f, "B", 0, VA_B, 0xabcde);
    connect_pair(&a, &b);
    send_one(&a, &b, 64, 0x10, "first");    /* A's consumer counter: 1 */
    entries = qvrdma_gring_entries(&a.qp->sq);

    /* Two receives A's QP holds outstanding. */
    buf = sge_of(&a, RECV_AREA, 256);
    qvrdma_ring_write_recv(a.qp, 0x71, &buf, 1);
    qvrdma_ring_write_recv(a.qp, 0x72, &buf, 1);
    qvrdma_ring_rq_doorbell(a.qp);
    g_assert_true(qvrdma_gring_wait_device_idx(&a.qp->rq, 2,
                                               QVRDMA_DP_TIMEOUT_US));

    consumed = qvrdma_gring_device_idx(&a.qp->sq);
    g_assert_cmpuint(consumed, ==, 1);
    qvrdma_ring_doorbell(f.rd, 0, VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_SQ,
                                                 a.qp->vq.qpn,
                                                 consumed + entries + 1));
    expect_event(&f, "SQ doorbell beyond the ring", VIRTIO_RDMA_EVENT_QP_FATAL,
                 a.qp->vq.qpn);
    g_assert_cmpuint(qp_state(&a), ==, VIRTIO_RDMA_QPS_ERR);
    expect_cqe(a.cq, "flushed", 0x71, VIRTIO_RDMA_WC_WR_FLUSH_ERR, ANY, ANY,
               a.qp->vq.wire_qpn);
    expect_cqe(a.cq, "flushed", 0x72, VIRTIO_RDMA_WC_WR_FLUSH_ERR, ANY, ANY,
               a.qp->vq.wire_qpn);
    expect_cq_quiet(a.cq, "after the flushes");
    g_assert_cmpuint(qvrdma_gring_device_idx(&a.qp->sq), ==, consumed);

    /* A well-formed WR behind a valid doorbell: not read any more. */
    from = sge_of(&a, 0x100, 32);
    wr = qvrdma_wr_send(0x80);
    qvrdma_ring_post_send(a.qp, &wr, &from, 1);
    expect_cq_quiet(a.cq, "a doorbell after QP_FATAL");
    g_assert_cmpuint(qvrdma_gring_device_idx(&a.qp->sq), ==, consumed);
    expect_no_event(&f, "one QP_FATAL");
    g_assert_cmpuint(qp_state(&b), ==, VIRTIO_RDMA_QPS_RTS);

    /*
     * "MODIFY_QP to RESET sets the QP's ring counters to 0 (the device's
     * producer and consumer counters and both device_idx)".
     */
    reset_qp(&a);
    g_assert_cmpuint(qvrdma_gring_device_idx(&a.qp->sq), ==, 0);
    g_assert_cmpuint(qvrdma_gring_device_idx(&a.qp->rq), ==, 0);
    expect_cq_quiet(a.cq, "RESET drops without completions");

    assert_still_serves(&f, "QP_FATAL");
    side_free(&b);
    side_free(&a);
    fix_quit(&f);
}

/*
 * "writes of another ... offset, of an unknown type, for a queue that ...
 * belongs to another context than the page's are ignored ... So a process
 * can ring only its own queues."
 */
static void test_boundary_other_context(void)
{
    uint32_t ctx1, ctx2;
    uint64_t db;
    Fix f;
    Side a, b;

    fix_boot(&f);
    ST(qvrdma_alloc_context(&f.d->r, &ctx1), "OK");
    ST(qvrdma_alloc_context(&f.d->r, &ctx2), "OK");
    side_init(&a, &f, "A", ctx1, VA_A, 0x100);
    side_init(&b, &f, "B", VIRTIO_RDMA_KERNEL_CTX, VA_B, 0xabcde);
    connect_pair(&a, &b);

    /* A's SEND waits in its SQ (context ctx1), B's receive is taken. */
    write_send_recv(&a, &b, 0x100, RECV_AREA, 500, 0x10);
    qvrdma_ring_rq_doorbell(b.qp);
    g_assert_true(qvrdma_gring_wait_device_idx(&b.qp->rq, 1,
                                               QVRDMA_DP_TIMEOUT_US));
    db = VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_SQ, a.qp->vq.qpn, a.qp->sq_prod);
    qvrdma_ring_doorbell(f.rd, VIRTIO_RDMA_KERNEL_CTX, db);
    qvrdma_ring_doorbell(f.rd, ctx2, db);
    /* On its own page, but not a doorbell: another offset, another type. */
    qvrdma_ring_doorbell_at(f.rd, ctx1, 8, db);
    qvrdma_ring_doorbell(f.rd, ctx1,
                         VIRTIO_RDMA_DB(2, a.qp->vq.qpn, a.qp->sq_prod));
    /* Arms from other pages. */
    qvrdma_ring_doorbell(f.rd, ctx2,
                         VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_CQ_ARM, a.cq->cqn,
                                        VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION));
    qvrdma_ring_doorbell(f.rd, ctx1,
                         VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_CQ_ARM, b.cq->cqn,
                                        VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION));
    expect_cq_quiet(a.cq, "A's SQ rung from other pages");
    expect_cq_quiet(b.cq, "A's SQ rung from other pages");
    g_assert_cmpuint(qvrdma_gring_device_idx(&a.qp->sq), ==, 0);
    expect_no_event(&f, "A's SQ rung from other pages");
    assert_healthy(&f, "A's SQ rung from other pages");

    /* Its own page: the same doorbell works. */
    qvrdma_ring_sq_doorbell(a.qp);
    expect_cqe(a.cq, "A's own page", 0x10, VIRTIO_RDMA_WC_SUCCESS,
               VIRTIO_RDMA_WC_SEND, 500, a.qp->vq.wire_qpn);
    expect_cqe(b.cq, "A's own page", 0x11, VIRTIO_RDMA_WC_SUCCESS,
               VIRTIO_RDMA_WC_RECV, 500, b.qp->vq.wire_qpn);
    side_check_mem(&b, "A's own page");
    expect_no_event(&f, "the arms from other pages were ignored");

    /* The kernel's queue rung from a user context's page: ignored too. */
    write_send_recv(&b, &a, 0x400, RECV_AREA + 0x200, 300, 0x20);
    qvrdma_ring_rq_doorbell(a.qp);
    g_assert_true(qvrdma_gring_wait_device_idx(&a.qp->rq, 1,
                                               QVRDMA_DP_TIMEOUT_US));
    qvrdma_ring_doorbell(f.rd, ctx1,
                         VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_SQ, b.qp->vq.qpn,
                                        b.qp->sq_prod));
    expect_cq_quiet(b.cq, "B's SQ rung from A's page");
    g_assert_cmpuint(qvrdma_gring_device_idx(&b.qp->sq), ==, 0);
    qvrdma_ring_sq_doorbell(b.qp);
    expect_cqe(b.cq, "B's own page", 0x20, VIRTIO_RDMA_WC_SUCCESS,
               VIRTIO_RDMA_WC_SEND, 300, b.qp->vq.wire_qpn);
    expect_cqe(a.cq, "B's own page", 0x21, VIRTIO_RDMA_WC_SUCCESS,
               VIRTIO_RDMA_WC_RECV, 300, a.qp->vq.wire_qpn);
    side_check_mem(&a, "B's own page");

    assert_still_serves(&f, "doorbells from other contexts' pages");
    side_free(&b);
    side_free(&a);
    fix_quit(&f);
}

/* "... for a queue that does not exist ... are ignored". */
static void test_boundary_dead_queues(void)
{
    struct virtio_rdma_sq_req wr;
    struct virtio_rdma_sge from;
    QVrdmaRingCq *x;
    QVrdmaRingQp *c;
    uint32_t qpn, free_qpn = 0, dead_cqn;
    Fix f;
    Side a, b;

    fix_boot(&f);
    side_init(&a, &f, "A", 0, VA_A, 0x100);
    side_init(&b, &f, "B", 0, VA_B, 0xabcde);
    connect_pair(&a, &b);
    x = qvrdma_ring_cq_create(f.rd, 0, 4, 2);
    c = qvrdma_ring_qp_create(f.rd, 0, f.pdn, x, x, 4, 2, 2);

    /* What a doorbell does for a live QP in RESET: the send fails at once. */
    from = sge_of(&a, 0x100, 16);
    wr = qvrdma_wr_send(0x90);
    qvrdma_ring_post_send(c, &wr, &from, 1);
    expect_cqe(x, "a live QP in RESET", 0x90, VIRTIO_RDMA_WC_LOC_QP_OP_ERR,
               ANY, ANY, c->vq.wire_qpn);
    g_assert_cmpuint(qvrdma_gring_device_idx(&c->sq), ==, 1);

    /* Destroyed: its doorbells do nothing, its rings are not touched. */
    wr.wr_id = 0x91;
    qvrdma_ring_write_send(c, &wr, &from, 1);
    qvrdma_ring_write_recv(c, 0x92, &from, 1);
    qvrdma_ring_qp_destroy(c);
    qvrdma_ring_sq_doorbell(c);
    qvrdma_ring_rq_doorbell(c);
    expect_cq_quiet(x, "doorbells of a destroyed QP");
    g_assert_cmpuint(qvrdma_gring_device_idx(&c->sq), ==, 1);
    g_assert_cmpuint(qvrdma_gring_device_idx(&c->rq), ==, 0);

    /* Queues that never were: a free QP number, 0, QP1, the largest. */
    for (qpn = 2; qpn < f.d->max_qp; qpn++) {
        if (qpn != a.qp->vq.qpn && qpn != b.qp->vq.qpn &&
            qpn != c->vq.qpn) {
            free_qpn = qpn;
            break;
        }
    }
    g_assert_cmpuint(free_qpn, !=, 0);
    qvrdma_ring_doorbell(f.rd, 0, VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_SQ,
                                                 free_qpn, 1));
    qvrdma_ring_doorbell(f.rd, 0, VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_RQ,
                                                 free_qpn, 1));
    qvrdma_ring_doorbell(f.rd, 0, VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_SQ, 0, 1));
    qvrdma_ring_doorbell(f.rd, 0, VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_SQ, 1, 1));
    qvrdma_ring_doorbell(f.rd, 0, VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_SQ,
                                                 VIRTIO_RDMA_DB_QN_MASK, 1));
    qvrdma_ring_doorbell(f.rd, 0, VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_CQ_ARM,
                                                 f.d->max_cq - 1, NEXT));
    qvrdma_ring_doorbell(f.rd, 0, VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_CQ_ARM,
                                                 VIRTIO_RDMA_DB_QN_MASK, NEXT));
    /* A destroyed CQ. */
    dead_cqn = x->cqn;
    qvrdma_ring_cq_destroy(x);
    qvrdma_ring_doorbell(f.rd, 0, VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_CQ_ARM,
                                                 dead_cqn, NEXT));
    expect_no_event(&f, "doorbells for queues that are gone");
    expect_cq_quiet(a.cq, "doorbells for queues that are gone");
    expect_cq_quiet(b.cq, "doorbells for queues that are gone");
    assert_healthy(&f, "doorbells for queues that are gone");
    qvrdma_ring_cq_free(x);
    qvrdma_ring_qp_free(c);

    send_one(&a, &b, 1000, 0x1000, "A->B after doorbells for dead queues");
    assert_still_serves(&f, "doorbells for dead queues");
    side_free(&b);
    side_free(&a);
    fix_quit(&f);
}

/*
 * "one where it equals entries is full.  A full or broken CQ takes no
 * completion: the completion is lost and counted, the QP that completed
 * goes to ERR ..., and the CQ gets one CQ_ERR event."
 */
static void test_boundary_cq_full(void)
{
    struct virtio_rdma_cqe e;
    uint32_t i;
    Fix f;
    Side a, b;

    fix_boot(&f);
    /* A: a CQ of 4 under a QP of 8 WRs; B: room for everything. */
    side_init_sized(&a, &f, "A", 0, VA_A, 0x100, 2, 3);
    side_init_sized(&b, &f, "B", 0, VA_B, 0xabcde, 3, 3);
    connect_pair(&a, &b);
    for (i = 0; i < 5; i++) {
        write_send_recv(&a, &b, 0x100 + 0x40 * i, RECV_AREA + 0x100 * i, 64,
                        0x10 * (i + 1));
    }
    qvrdma_ring_rq_doorbell(b.qp);
    qvrdma_ring_sq_doorbell(a.qp);

    expect_event(&f, "a CQ whose driver_idx stays 0", VIRTIO_RDMA_EVENT_CQ_ERR,
                 a.cq->cqn);
    g_assert_cmpuint(qp_state(&a), ==, VIRTIO_RDMA_QPS_ERR);
    /* The first four are in the ring, the fifth is not. */
    for (i = 0; i < 4; i++) {
        g_assert_true(qvrdma_ring_cq_peek(a.cq, i, &e));
        g_assert_cmphex(le64_to_cpu(e.wc.wr_id), ==, 0x10 * (i + 1));
    }
    g_assert_false(qvrdma_ring_cq_peek(a.cq, 4, &e));
    g_assert_cmpuint(qvrdma_gring_device_idx(&a.cq->ring), ==, 4);
    for (i = 0; i < 4; i++) {
        expect_cqe(a.cq, "before the CQ filled", 0x10 * (i + 1),
                   VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_SEND, 64,
                   a.qp->vq.wire_qpn);
    }
    expect_cq_quiet(a.cq, "the lost completion stays lost");
    g_assert_cmpuint(qvrdma_dp_counter(f.d, "cq-overruns"), >=, 1);
    /* B received all five. */
    for (i = 0; i < 5; i++) {
        expect_cqe(b.cq, "B", 0x10 * (i + 1) + 1, VIRTIO_RDMA_WC_SUCCESS,
                   VIRTIO_RDMA_WC_RECV, 64, b.qp->vq.wire_qpn);
    }
    side_check_mem(&b, "a CQ that filled");
    expect_no_event(&f, "one CQ_ERR");

    assert_still_serves(&f, "CQ_ERR (full)");
    side_free(&b);
    side_free(&a);
    fix_quit(&f);
}

/*
 * "A CQ whose producer counter minus driver_idx (mod 2^32) is more than
 * entries is broken ... A broken CQ stays broken until it is destroyed."
 */
static void test_boundary_cq_broken(void)
{
    struct virtio_rdma_event ev;
    struct virtio_rdma_sq_req wr;
    struct virtio_rdma_sge from;
    struct virtio_rdma_cqe e;
    QVrdmaRingQp *c;
    Fix f;
    Side a, b;

    fix_boot(&f);
    side_init(&a, &f, "A", 0, VA_A, 0x100);
    side_init(&b, &f, "B", 0, VA_B, 0xabcde);
    connect_pair(&a, &b);

    qvrdma_gring_set_driver_idx(&a.cq->ring, 0x1000);  /* 0 - 0x1000 > 4 */
    write_send_recv(&a, &b, 0x100, RECV_AREA, 128, 0x10);
    qvrdma_ring_rq_doorbell(b.qp);
    qvrdma_ring_sq_doorbell(a.qp);
    expect_event(&f, "driver_idx out of range", VIRTIO_RDMA_EVENT_CQ_ERR,
                 a.cq->cqn);
    g_assert_cmpuint(qp_state(&a), ==, VIRTIO_RDMA_QPS_ERR);
    g_assert_false(qvrdma_ring_cq_peek(a.cq, 0, &e));
    g_assert_cmpuint(qvrdma_gring_device_idx(&a.cq->ring), ==, 0);
    expect_cqe(b.cq, "B", 0x11, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_RECV,
               128, b.qp->vq.wire_qpn);
    side_check_mem(&b, "a broken CQ");

    /*
     * driver_idx right again, and a completion of another QP on the CQ (a
     * send to a QP in RESET fails at once) is still lost.
     */
    qvrdma_gring_set_driver_idx(&a.cq->ring, 0);
    c = qvrdma_ring_qp_create(f.rd, 0, f.pdn, a.cq, a.cq, 4, 2, 2);
    from = sge_of(&a, 0x100, 16);
    wr = qvrdma_wr_send(0x90);
    qvrdma_ring_post_send(c, &wr, &from, 1);
    g_assert_true(qvrdma_gring_wait_device_idx(&c->sq, 1,
                                               QVRDMA_DP_TIMEOUT_US));
    expect_cq_quiet(a.cq, "a broken CQ stays broken");
    /* Its second loss may bring a second CQ_ERR; nothing else. */
    if (qvrdma_dp_eq_poll(f.eq, &ev, QUIET_US)) {
        g_assert_cmpuint(le32_to_cpu(ev.type), ==, VIRTIO_RDMA_EVENT_CQ_ERR);
        g_assert_cmpuint(le32_to_cpu(ev.handle), ==, a.cq->cqn);
        expect_no_event(&f, "a broken CQ");
    }
    qvrdma_ring_qp_destroy(c);
    qvrdma_ring_qp_free(c);

    assert_still_serves(&f, "CQ_ERR (broken)");
    side_free(&b);
    side_free(&a);
    fix_quit(&f);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/virtio-rdma-ring/features/all-required",
                   test_features_all_required);
    qtest_add_func("/virtio-rdma-ring/features/virtqueue-commands-refused",
                   test_features_virtqueue_cmds_refused);
    qtest_add_func("/virtio-rdma-ring/doorbells/region",
                   test_doorbells_region);
    qtest_add_func("/virtio-rdma-ring/context/alloc-free",
                   test_context_alloc_free);
    qtest_add_func("/virtio-rdma-ring/create/cq-ring", test_create_cq_ring);
    qtest_add_func("/virtio-rdma-ring/create/qp-ring", test_create_qp_ring);
    qtest_add_func("/virtio-rdma-ring/create/limits", test_create_limits);
    qtest_add_func("/virtio-rdma-ring/loopback/send-write-wrap",
                   test_loopback_send_write);
    qtest_add_func("/virtio-rdma-ring/cq-arm/doorbell", test_cq_arm_doorbell);
    qtest_add_func("/virtio-rdma-ring/srq/loopback", test_srq_loopback);
    qtest_add_func("/virtio-rdma-ring/srq/limit-and-break",
                   test_srq_limit_and_break);
    qtest_add_func("/virtio-rdma-ring/boundary/sq-beyond-ring",
                   test_boundary_sq_beyond_ring);
    qtest_add_func("/virtio-rdma-ring/boundary/other-context",
                   test_boundary_other_context);
    qtest_add_func("/virtio-rdma-ring/boundary/dead-queues",
                   test_boundary_dead_queues);
    qtest_add_func("/virtio-rdma-ring/boundary/cq-full",
                   test_boundary_cq_full);
    qtest_add_func("/virtio-rdma-ring/boundary/cq-broken",
                   test_boundary_cq_broken);
    return g_test_run();
}
