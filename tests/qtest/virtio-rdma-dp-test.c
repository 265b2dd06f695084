/*
 * virtio-rdma-dp-test: the data path of virtio-rdma-pci, driven like the RFC
 * guest driver drives it (libqos/virtio-rdma-dp.c), checked byte for byte in
 * guest memory and field by field in the completions.
 *
 *   loopback/... one QEMU, two RC QPs of the same device (the destination
 *                MAC is the device's own): SEND/RECV (+IMM), WRITE,
 *                WRITE_WITH_IMM, READ, CAS, FAA, 12 WRs behind one kick,
 *                unsignaled WRs, PSN wrap; error paths (bad rkey, remote
 *                bounds, bad lkey, receive too small, RNR retry and
 *                RNR_RETRY_EXC_ERR); malformed work requests, a
 *                device-writable SQ descriptor (NEEDS_RESET);
 *   wire/...     two QEMUs whose NICs are joined by -netdev dgram over
 *                127.0.0.1: the same RC operations, UD SEND (IPv4-mapped and
 *                IPv6 GIDs, GRH area checked; a controlled Q_Key; QPN 1
 *                refused to a UD QP), a foreign frame first, and a
 *                peer that disappears (RETRY_EXC_ERR, flushes, QP in ERR);
 *   cq-arm/...   REQ_NOTIFY_CQ: a CQ interrupts (its own MSI-X vector) only
 *                when armed, once, for the completions the arming asks for.
 *
 * Every test keeps a shadow copy of each side's memory region and compares
 * the whole region after each operation, so stray writes are caught too, and
 * ends by checking the device's data-path counters (query-virtio-rdma)
 * against what the driver saw.
 *
 * A plain qtest (two QEMU processes; no qos graph):
 *   QTEST_QEMU_BINARY=./qemu-system-x86_64 ./tests/qtest/virtio-rdma-dp-test
 * A test marked pending is skipped with its reason unless
 * QTEST_VRDMA_DP_ALL=1.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include "libqtest.h"
#include "qemu/bswap.h"
#include "standard-headers/linux/virtio_config.h"
#include "standard-headers/linux/virtio_ring.h"
#include "libqos/libqos-pc.h"
#include "libqos/virtio-rdma.h"
#include "libqos/virtio-rdma-ring.h"
#include "libqos/virtio-rdma-dp.h"

#define MAC_A       "52:54:00:12:34:56"
#define MAC_B       "52:54:00:12:34:57"
#define RDMA_OPTS   ""

/* Each side's memory region: 4 pages at a user virtual address. */
#define MR_PAGES    4
#define MR_LEN      (MR_PAGES * 4096)
#define VA_A        0x7f0000100000ull
#define VA_B        0x7f0000200000ull

#define QKEY        0x11111111u
/* How long a CQ must stay quiet to count as "no completion / interrupt". */
#define QUIET_US    (200 * 1000)

/* ---- one end of a conversation ---------------------------------------------- */

typedef struct Side {
    const char *name;
    QVrdmaDev *d;
    bool own_dev;               /* quit the QEMU with this side */
    uint32_t pdn;
    QVrdmaCq *cq;               /* both queues of both QPs */
    QVrdmaQp *qp;               /* RC */
    QVrdmaQp *ud;               /* UD, if made */
    QVrdmaPageTable pt;
    struct virtio_rdma_rsp_mr mr;
    struct virtio_rdma_rsp_mr dma;  /* with dp_dma_sges: local SGEs' MR */
    uint64_t va;
    uint8_t gid[16];            /* GID index 0 */
    uint32_t sq_psn;
    uint8_t rnr_retry;          /* as requester */
    uint8_t min_rnr_timer;      /* as responder (0: the helper's default) */
    uint8_t *shadow;            /* what the MR must hold */
    bool dead;                  /* its QEMU was killed */
} Side;

/*
 * The dma-sge/ runs: local SGEs name the buffer by its guest-physical
 * address through a DMA MR (GET_DMA_MR, LOCAL_WRITE), as a guest kernel's
 * local DMA lkey does; peers still reach it through the user MR's rkey.
 */
static bool dp_dma_sges;

/*
 * The features a device negotiates: all the device has (libqos makes every
 * CQ and QP a ring in context 0).
 */
static uint64_t dev_features(void)
{
    return QVRDMA_RING_FEATURES;
}

static void side_init(Side *s, const char *name, QVrdmaDev *d, bool own_dev,
                      uint64_t va, uint32_t sq_psn)
{
    uint32_t access = VIRTIO_RDMA_ACCESS_LOCAL_WRITE |
                      VIRTIO_RDMA_ACCESS_REMOTE_WRITE |
                      VIRTIO_RDMA_ACCESS_REMOTE_READ |
                      VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC;
    uint8_t st;
    size_t i;

    memset(s, 0, sizeof(*s));
    s->name = name;
    s->d = d;
    s->own_dev = own_dev;
    s->va = va;
    s->sq_psn = sq_psn;
    s->rnr_retry = 7;

    st = qvrdma_create_pd(&d->r, &s->pdn);
    g_assert_cmpstr(qvrdma_status_name(st), ==, "OK");
    s->cq = qvrdma_dp_cq_create(d, 64);
    /* Only WRs with SIGNALED complete when successful (as ULPs use it). */
    s->qp = qvrdma_dp_qp_create(d, s->pdn, VIRTIO_RDMA_QPT_RC, s->cq, s->cq,
                                4, VIRTIO_RDMA_SIGNAL_REQ_WR);
    /* 24 random bits: below 16 once in 2^20. */
    g_assert_cmpuint(s->qp->wire_qpn, >=, 16);
    g_assert_cmpuint(s->qp->wire_qpn, <, 0xffffff);

    qvrdma_pt_build(&d->r, &s->pt, MR_PAGES, NULL);
    st = qvrdma_reg_user_mr(&d->r, s->pdn, access, va, MR_LEN, va, s->pt.l1,
                            MR_PAGES, &s->mr);
    g_assert_cmpstr(qvrdma_status_name(st), ==, "OK");
    if (qvrdma_dp_ibverbs()) {
        /* The host device's rkey; the lkey stays the device's own. */
        g_assert_cmphex(s->mr.rkey, !=, 0);
    } else {
        g_assert_cmphex(s->mr.rkey, ==, s->mr.lkey);
    }

    if (dp_dma_sges) {
        st = qvrdma_get_dma_mr(&d->r, s->pdn, VIRTIO_RDMA_ACCESS_LOCAL_WRITE,
                               &s->dma);
        g_assert_cmpstr(qvrdma_status_name(st), ==, "OK");
        g_assert_cmphex(s->dma.rkey, ==, 0);
        if (qvrdma_dp_ibverbs()) {
            /* All of RAM to every peer, under rkeys of several host MRs: no. */
            struct virtio_rdma_rsp_mr no;

            st = qvrdma_get_dma_mr(&d->r, s->pdn,
                                   VIRTIO_RDMA_ACCESS_LOCAL_WRITE |
                                   VIRTIO_RDMA_ACCESS_REMOTE_READ, &no);
            g_assert_cmpstr(qvrdma_status_name(st), ==, "EOPNOTSUPP");
        }
    }

    /* Random contents, known to the shadow. */
    s->shadow = g_malloc(MR_LEN);
    for (i = 0; i < MR_LEN; i++) {
        s->shadow[i] = g_test_rand_int_range(0, 256);
    }
    qtest_bufwrite(d->qts, s->pt.data, s->shadow, MR_LEN);
}

static void side_add_ud(Side *s, uint32_t sq_psn)
{
    s->ud = qvrdma_dp_qp_create(s->d, s->pdn, VIRTIO_RDMA_QPT_UD, s->cq,
                                s->cq, 4, VIRTIO_RDMA_SIGNAL_ALL_WR);
    qvrdma_dp_ud_ready(s->d, s->ud, QKEY, sq_psn);
}

static void side_free(Side *s)
{
    if (s->ud) {
        qvrdma_dp_qp_free(s->ud);
    }
    qvrdma_dp_qp_free(s->qp);
    qvrdma_dp_cq_free(s->cq);
    if (dp_dma_sges) {
        g_assert_cmpstr(qvrdma_status_name(qvrdma_dereg_mr(&s->d->r,
                                                           s->dma.mrn)),
                        ==, "OK");
    }
    qvrdma_pt_free(&s->d->r, &s->pt);
    g_free(s->shadow);
    if (s->own_dev) {
        qvrdma_dev_quit(s->d);
    }
}

static uint64_t side_gpa(Side *s, uint32_t off)
{
    g_assert_cmpuint(off, <, MR_LEN);
    return s->pt.data + off;
}

/* The whole region must equal the shadow. */
static void side_check_mem(Side *s, const char *after)
{
    g_autofree uint8_t *mem = g_malloc(MR_LEN);
    size_t i;

    qtest_bufread(s->d->qts, s->pt.data, mem, MR_LEN);
    for (i = 0; i < MR_LEN; i++) {
        if (mem[i] != s->shadow[i]) {
            size_t j = i;

            while (j < MR_LEN && mem[j] != s->shadow[j]) {
                j++;
            }
            g_error("%s: %s's memory differs at MR offset 0x%zx..0x%zx "
                    "(%zu bytes): got 0x%02x, expected 0x%02x", after,
                    s->name, i, j - 1, j - i, mem[i], s->shadow[i]);
        }
    }
}

/* An SGE over [off, off + len) of the side's MR (by virtual address). */
/* Where local SGEs name the buffer: its IOVA, or its GPA (dma-sge/). */
static uint64_t sge_base(Side *s)
{
    return dp_dma_sges ? s->pt.data : s->va;
}

static struct virtio_rdma_sge sge_of(Side *s, uint32_t off, uint32_t len)
{
    g_assert_cmpuint(off + len, <=, MR_LEN);
    return (struct virtio_rdma_sge) {
        .addr = cpu_to_le64(sge_base(s) + off),
        .length = cpu_to_le32(len),
        .lkey = cpu_to_le32(dp_dma_sges ? s->dma.lkey : s->mr.lkey),
    };
}

/* The byte stream an SGE list gathers from the shadow. */
static uint8_t *gather(Side *s, const struct virtio_rdma_sge *sge,
                       unsigned n, uint32_t *len)
{
    uint32_t total = 0, pos = 0;
    uint8_t *buf;
    unsigned i;

    for (i = 0; i < n; i++) {
        total += le32_to_cpu(sge[i].length);
    }
    buf = g_malloc(total ? total : 1);
    for (i = 0; i < n; i++) {
        uint32_t off = le64_to_cpu(sge[i].addr) - sge_base(s);
        uint32_t l = le32_to_cpu(sge[i].length);

        memcpy(buf + pos, s->shadow + off, l);
        pos += l;
    }
    *len = total;
    return buf;
}

/* Scatters @len bytes into the shadow along an SGE list (which must fit). */
static void scatter(Side *s, const struct virtio_rdma_sge *sge, unsigned n,
                    const uint8_t *data, uint32_t len)
{
    uint32_t pos = 0;
    unsigned i;

    for (i = 0; i < n && pos < len; i++) {
        uint32_t off = le64_to_cpu(sge[i].addr) - sge_base(s);
        uint32_t l = MIN(le32_to_cpu(sge[i].length), len - pos);

        memcpy(s->shadow + off, data + pos, l);
        pos += l;
    }
    g_assert_cmpuint(pos, ==, len);
}

static uint64_t shadow_u64(Side *s, uint32_t off)
{
    uint64_t v;

    memcpy(&v, s->shadow + off, 8);
    return le64_to_cpu(v);
}

static void shadow_set_u64(Side *s, uint32_t off, uint64_t v)
{
    v = cpu_to_le64(v);
    memcpy(s->shadow + off, &v, 8);
    qtest_bufwrite(s->d->qts, side_gpa(s, off), &v, 8);
}

/* ---- completions --------------------------------------------------------------- */

#define ANY 0xffffffffu

typedef struct Expect {
    uint64_t wr_id;
    uint32_t status;
    uint32_t opcode;            /* ANY: not checked */
    uint32_t byte_len;          /* ANY: not checked */
    uint32_t ex;                /* checked when wc_flags has WITH_IMM */
    uint32_t qp_num;
    uint32_t src_qp;            /* ANY: not checked */
    uint32_t wc_flags;          /* ANY: not checked */
    uint32_t wc_flags_mask;     /* 0: all bits but GRH (RC) */
} Expect;

static void cqe_check(const char *what, const struct virtio_rdma_cq_req *c,
                      const Expect *ex)
{
    Expect em = *ex, *e = &em;
    g_autofree char *got = qvrdma_cqe_str(c);
    g_autoptr(GString) bad = g_string_new("");

    if (!e->wc_flags_mask) {
        e->wc_flags_mask = ~VIRTIO_RDMA_WC_GRH;
    }

    if (le64_to_cpu(c->wr_id) != e->wr_id) {
        g_string_append_printf(bad, " wr_id (want 0x%" PRIx64 ")", e->wr_id);
    }
    if (le32_to_cpu(c->status) != e->status) {
        g_string_append_printf(bad, " status (want %s)",
                               qvrdma_wc_status_name(e->status));
    }
    if (e->opcode != ANY && le32_to_cpu(c->opcode) != e->opcode) {
        g_string_append_printf(bad, " opcode (want %s)",
                               qvrdma_wc_opcode_name(e->opcode));
    }
    if (e->byte_len != ANY && le32_to_cpu(c->byte_len) != e->byte_len) {
        g_string_append_printf(bad, " byte_len (want %u)", e->byte_len);
    }
    if (le32_to_cpu(c->qp_num) != e->qp_num) {
        g_string_append_printf(bad, " qp_num (want %u)", e->qp_num);
    }
    if (e->src_qp != ANY && le32_to_cpu(c->src_qp) != e->src_qp) {
        g_string_append_printf(bad, " src_qp (want %u)", e->src_qp);
    }
    /*
     * GRH is only checked where it means something (UD: the 40-byte area is
     * filled).  On RoCE every packet has an IP header, and rxe's kernel path
     * reports IB_WC_GRH on RC receives too; the shadow compare shows that
     * no GRH was placed in an RC receive buffer.
     */
    if (e->wc_flags != ANY &&
        (le32_to_cpu(c->wc_flags) & e->wc_flags_mask) !=
        (e->wc_flags & e->wc_flags_mask)) {
        g_string_append_printf(bad, " wc_flags (want 0x%x under mask 0x%x)",
                               e->wc_flags, e->wc_flags_mask);
    }
    if (e->wc_flags != ANY && (e->wc_flags & VIRTIO_RDMA_WC_WITH_IMM) &&
        c->ex != e->ex) {
        g_string_append_printf(bad, " ex (want 0x%08x)", le32_to_cpu(e->ex));
    }
    if (bad->len) {
        g_error("%s: wrong completion:%s; got %s", what, bad->str, got);
    }
    g_test_message("%s: %s", what, got);
}

static void expect_cqe(Side *s, const char *what, const Expect *e)
{
    struct virtio_rdma_cq_req c;

    if (!qvrdma_dp_poll_cq(s->cq, &c, QVRDMA_DP_TIMEOUT_US)) {
        g_error("%s: no completion on %s's CQ %u within %d s (expected "
                "wr_id 0x%" PRIx64 " %s)", what, s->name, s->cq->cqn,
                QVRDMA_DP_TIMEOUT_US / 1000000, e->wr_id,
                qvrdma_wc_status_name(e->status));
    }
    cqe_check(what, &c, e);
}

/* The requester's successful completion of @wr_id on QP @qp. */
static void expect_sq_ok(Side *s, QVrdmaQp *qp, const char *what,
                         uint64_t wr_id, uint32_t opcode)
{
    Expect e = {
        .wr_id = wr_id, .status = VIRTIO_RDMA_WC_SUCCESS, .opcode = opcode,
        .byte_len = ANY, .qp_num = qp->wire_qpn, .src_qp = ANY,
        .wc_flags = ANY,
    };

    expect_cqe(s, what, &e);
}

static void expect_quiet(Side *s, const char *after)
{
    struct virtio_rdma_cq_req c;

    if (qvrdma_dp_poll_cq(s->cq, &c, QUIET_US)) {
        g_autofree char *str = qvrdma_cqe_str(&c);

        g_error("%s: unexpected completion on %s's CQ %u: %s", after,
                s->name, s->cq->cqn, str);
    }
}

/* ---- connections --------------------------------------------------------------- */

static void rc_connect_one(Side *s, Side *peer, uint8_t timeout,
                           uint8_t retry_cnt)
{
    QVrdmaPath p = {
        .dest_qpn = peer->qp->wire_qpn,
        .sgid_index = 0,
        .rq_psn = peer->sq_psn,
        .sq_psn = s->sq_psn,
        .timeout = timeout,
        .retry_cnt = retry_cnt,
        .rnr_retry = s->rnr_retry,
        .min_rnr_timer = s->min_rnr_timer,
    };

    memcpy(p.dgid, peer->gid, 16);
    memcpy(p.dmac, peer->d->mac, 6);
    qvrdma_dp_rc_connect(s->d, s->qp, &p);
    g_assert_cmpuint(qvrdma_dp_qp_state(s->d, s->qp), ==,
                     VIRTIO_RDMA_QPS_RTS);
}

static void rc_connect(Side *a, Side *b, uint8_t timeout, uint8_t retry_cnt)
{
    rc_connect_one(a, b, timeout, retry_cnt);
    rc_connect_one(b, a, timeout, retry_cnt);
}

/*
 * Loopback: both sides on one device; GID 0 = ::ffff:10.0.0.1 and the
 * destination MAC is the device's own.
 */
static QVrdmaDev *loopback_boot(Side *a, Side *b, uint32_t a_sq_psn)
{
    QVrdmaDev *d = qvrdma_dev_boot_features("user,id=n0", MAC_A, RDMA_OPTS,
                                            dev_features());

    side_init(a, "A", d, true, VA_A, a_sq_psn);
    side_init(b, "B", d, false, VA_B, 0xabcde);
    qvrdma_dp_loopback_gid(a->gid);
    memcpy(b->gid, a->gid, 16);
    qvrdma_dp_add_gid(d, 0, a->gid);
    return d;
}

static QVrdmaDev *loopback_setup_psn(Side *a, Side *b, uint32_t a_sq_psn)
{
    QVrdmaDev *d = loopback_boot(a, b, a_sq_psn);

    rc_connect(a, b, 14, 7);
    return d;
}

static QVrdmaDev *loopback_setup(Side *a, Side *b)
{
    return loopback_setup_psn(a, b, 0x100);
}

/*
 * Two QEMUs whose NICs are joined by a UDP "wire": A = ::ffff:10.0.0.1 on
 * MAC_A, B = ::ffff:10.0.0.2 on MAC_B.  GIDs are set on both before anything
 * is sent (a frame the filter does not take would wait in the netdev's queue
 * for a guest NIC that never reads it).
 */
static void wire_setup(Side *a, Side *b, uint8_t timeout, uint8_t retry_cnt)
{
    g_autofree char *na = NULL, *nb = NULL;
    QVrdmaDev *da, *db;
    int pa, pb;

    qvrdma_free_udp_ports(&pa, &pb);
    na = qvrdma_dgram_netdev(pa, pb);
    nb = qvrdma_dgram_netdev(pb, pa);
    da = qvrdma_dev_boot_features(na, MAC_A, RDMA_OPTS, dev_features());
    db = qvrdma_dev_boot_features(nb, MAC_B, RDMA_OPTS, dev_features());

    side_init(a, "A", da, true, VA_A, 0x100);
    side_init(b, "B", db, true, VA_B, 0xabcde);
    if (qvrdma_dp_ibverbs()) {
        /* Both on the one host device: its address, told apart by QPN. */
        qvrdma_dp_loopback_gid(a->gid);
        qvrdma_dp_loopback_gid(b->gid);
    } else {
        qvrdma_gid_ipv4(a->gid, 10, 0, 0, 1);
        qvrdma_gid_ipv4(b->gid, 10, 0, 0, 2);
    }
    qvrdma_dp_add_gid(da, 0, a->gid);
    qvrdma_dp_add_gid(db, 0, b->gid);
    rc_connect(a, b, timeout, retry_cnt);
}

/*
 * The device's own data-path counters agree with what the driver saw: every
 * completion it counts is in a CQ ring, no frame was dropped, no CQE lost;
 * on loopback nothing went on the wire, on the wire nothing was looped back.
 */
static void check_counters(Side *a, Side *b)
{
    bool loopback = a->d == b->d;
    Side *sides[2] = { a, b };
    int i;

    for (i = 0; i < 2; i++) {
        QVrdmaDev *d = sides[i]->d;
        uint64_t cqes = 0, errors = 0, pending = 0, tx, loop;
        int j;

        if (sides[i]->dead || (loopback && i == 1)) {
            continue;
        }
        for (j = 0; j < 2; j++) {
            if (sides[j]->d == d) {
                QVrdmaCq *cq = sides[j]->cq;

                pending += qvrdma_dp_cq_pending(cq);
                cqes += cq->taken;
                errors += cq->taken_errors;
            }
        }
        g_assert_cmpuint(qvrdma_dp_counter(d, "completions"), ==,
                         cqes + pending);
        if (!pending) {
            g_assert_cmpuint(qvrdma_dp_counter(d, "error-completions"), ==,
                             errors);
        }
        g_assert_cmpuint(qvrdma_dp_counter(d, "cq-overruns"), ==, 0);
        /* The engine ran where the command line put it. */
        g_assert_cmpint(qvrdma_dp_engine_in_iothread(d), ==,
                        qvrdma_dp_want_iothread());
        g_assert_cmpuint(qvrdma_dp_counter(d, "drops"), ==, 0);
        tx = qvrdma_dp_counter(d, "tx-packets");
        loop = qvrdma_dp_counter(d, "loopback-packets");
        if (loopback) {
            g_assert_cmpuint(loop, ==, tx);
            g_assert_cmpuint(qvrdma_dp_counter(d, "rx-packets"), ==, loop);
        } else {
            g_assert_cmpuint(loop, ==, 0);
        }
        g_test_message("%s's device: %" PRIu64 " completions, %" PRIu64
                       " packets sent (%" PRIu64 " looped back)",
                       sides[i]->name, cqes, tx, loop);
        if (qvrdma_dp_ibverbs()) {
            /* Each guest object is one host object, no more, no less. */
            uint32_t guest[4], host[4];

            qvrdma_dp_objects(d, false, guest);
            qvrdma_dp_objects(d, true, host);
            g_test_message("%s's host objects: pd %u cq %u qp %u mr %u",
                           sides[i]->name, host[0], host[1], host[2],
                           host[3]);
            g_assert_cmpmem(guest, sizeof(guest), host, sizeof(host));
        }
    }
}

static void teardown(Side *a, Side *b)
{
    check_counters(a, b);
    /* b first: on loopback it shares a's QEMU. */
    side_free(b);
    side_free(a);
}

/* ---- connection set-up (control path only) ------------------------------------ */

static void check_rc_attr(Side *s, Side *peer, uint8_t timeout,
                          uint8_t retry_cnt)
{
    struct virtio_rdma_qp_attr at;
    uint8_t st = qvrdma_query_qp(&s->d->r, s->qp->qpn, 0x1fffff, &at);

    g_assert_cmpstr(qvrdma_status_name(st), ==, "OK");
    g_assert_cmpuint(at.qp_state, ==, VIRTIO_RDMA_QPS_RTS);
    g_assert_cmpuint(at.dest_qp_num, ==, peer->qp->wire_qpn);
    g_assert_cmphex(at.rq_psn, ==, peer->sq_psn);
    g_assert_cmphex(at.sq_psn, ==, s->sq_psn);
    g_assert_cmpuint(at.path_mtu, ==, VIRTIO_RDMA_MTU_1024);
    g_assert_cmpuint(at.timeout, ==, timeout);
    g_assert_cmpuint(at.retry_cnt, ==, retry_cnt);
    g_assert_cmpuint(at.rnr_retry, ==, 7);
    g_assert_cmpuint(at.max_rd_atomic, ==, 4);
    g_assert_cmpuint(at.max_dest_rd_atomic, ==, 4);
    g_assert_cmphex(at.qp_access_flags, ==,
                    VIRTIO_RDMA_ACCESS_LOCAL_WRITE |
                    VIRTIO_RDMA_ACCESS_REMOTE_WRITE |
                    VIRTIO_RDMA_ACCESS_REMOTE_READ |
                    VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC);
    g_assert_cmpuint(at.ah_attr.grh.sgid_index, ==, 0);
    g_assert_true(!memcmp(at.ah_attr.grh.dgid, peer->gid, 16));
    g_assert_true(!memcmp(at.ah_attr.dmac, peer->d->mac, 6));
    g_assert_cmpuint(at.cap.max_send_sge, ==, 4);
    g_assert_cmpuint(at.cap.max_recv_sge, ==, 4);
}

/*
 * What every other test builds on, checked before any work request: two
 * QEMUs on a UDP wire, each with a CQ, RC QPs in RTS towards each other
 * with the attributes asked for, UD QPs in RTS.  No completion yet.
 */
static void test_wire_connect(void)
{
    Side a, b;
    Side *sides[2] = { &a, &b };
    int i;

    wire_setup(&a, &b, 12, 5);
    side_add_ud(&a, 0x777);
    side_add_ud(&b, 0x888);
    check_rc_attr(&a, &b, 12, 5);
    check_rc_attr(&b, &a, 12, 5);
    for (i = 0; i < 2; i++) {
        Side *s = sides[i];

        g_assert_cmpuint(qvrdma_dp_qp_state(s->d, s->ud), ==,
                         VIRTIO_RDMA_QPS_RTS);
        g_assert_cmpuint(qvrdma_dp_cq_pending(s->cq), ==, 0);
        side_check_mem(s, "connect");
        /* MSI-X messages do reach guest memory: the control queue's. */
        g_assert_true(s->d->ctrl_msix);
        qvrdma_dp_ctrl_irq(s->d);
        g_assert_false(qvrdma_dp_ctrl_irq(s->d));
        g_assert_cmpuint(qvrdma_dp_qp_state(s->d, s->qp), ==,
                         VIRTIO_RDMA_QPS_RTS);
        g_assert_true(qvrdma_dp_ctrl_irq(s->d));
    }
    teardown(&a, &b);
}

/* ---- RC operations (requester s, responder t) ------------------------------------ */

/*
 * SEND of @len bytes gathered from two SGEs into a receive WQE with two
 * SGEs with a gap between them; @imm: SEND_WITH_IMM.
 */
static void op_send(Side *s, Side *t, uint32_t len, bool with_imm,
                    uint32_t flags, uint64_t wr_id)
{
    g_autofree char *what = g_strdup_printf("%s->%s SEND%s %u bytes", s->name,
                                            t->name,
                                            with_imm ? "_WITH_IMM" : "", len);
    uint32_t l1 = MIN(len, 1200u);
    struct virtio_rdma_sge src[2] = {
        sge_of(s, 0x0000, l1), sge_of(s, 0x0800, len - l1),
    };
    struct virtio_rdma_sge dst[2] = {
        sge_of(t, 0x1000, 1000), sge_of(t, 0x1800, 0x2000 - 0x800),
    };
    struct virtio_rdma_sq_req wr = qvrdma_wr_send(wr_id);
    const uint32_t imm = cpu_to_be32(0x5eed0000 | (len & 0xffff));
    g_autofree uint8_t *data = NULL;
    uint32_t n;
    Expect e = {
        .wr_id = wr_id + 1, .status = VIRTIO_RDMA_WC_SUCCESS,
        .opcode = VIRTIO_RDMA_WC_RECV, .byte_len = len, .ex = imm,
        .qp_num = t->qp->wire_qpn, .src_qp = ANY,
        .wc_flags = with_imm ? VIRTIO_RDMA_WC_WITH_IMM : 0,
    };

    g_assert_cmpuint(len, <=, 1000 + 0x1800);
    qvrdma_dp_post_recv(t->qp, wr_id + 1, dst, 2);
    if (with_imm) {
        wr.opcode = VIRTIO_RDMA_WR_SEND_WITH_IMM;
        wr.ex = imm;
    }
    wr.send_flags |= flags;
    qvrdma_dp_post_send(s->qp, &wr, src, len > l1 ? 2 : 1);

    data = gather(s, src, 2, &n);
    scatter(t, dst, 2, data, len);
    expect_sq_ok(s, s->qp, what, wr_id, VIRTIO_RDMA_WC_SEND);
    expect_cqe(t, what, &e);
    side_check_mem(t, what);
    side_check_mem(s, what);
}

static void op_write(Side *s, Side *t, uint32_t len, bool with_imm,
                     uint64_t wr_id)
{
    g_autofree char *what = g_strdup_printf("%s->%s RDMA_WRITE%s %u bytes",
                                            s->name, t->name,
                                            with_imm ? "_WITH_IMM" : "", len);
    /* Two local SGEs; an unaligned remote address. */
    uint32_t l1 = len / 3;
    struct virtio_rdma_sge src[2] = {
        sge_of(s, 0x0100, l1), sge_of(s, 0x1000, len - l1),
    };
    /* The receive buffer of a WRITE_WITH_IMM must stay untouched. */
    struct virtio_rdma_sge rbuf = sge_of(t, 0x3c00, 0x100);
    const uint32_t remote_off = 0x2003;
    const uint32_t imm = cpu_to_be32(0x1a2b3c4d);
    struct virtio_rdma_sq_req wr =
        qvrdma_wr_rdma(with_imm ? VIRTIO_RDMA_WR_RDMA_WRITE_WITH_IMM :
                       VIRTIO_RDMA_WR_RDMA_WRITE, wr_id,
                       t->va + remote_off, t->mr.rkey);
    g_autofree uint8_t *data = NULL;
    uint32_t n;
    Expect e = {
        .wr_id = wr_id + 1, .status = VIRTIO_RDMA_WC_SUCCESS,
        .opcode = VIRTIO_RDMA_WC_RECV_RDMA_WITH_IMM, .byte_len = len,
        .ex = imm, .qp_num = t->qp->wire_qpn, .src_qp = ANY,
        .wc_flags = VIRTIO_RDMA_WC_WITH_IMM,
    };

    g_assert_cmpuint(remote_off + len, <=, 0x3c00);
    if (with_imm) {
        qvrdma_dp_post_recv(t->qp, wr_id + 1, &rbuf, 1);
        wr.ex = imm;
    }
    qvrdma_dp_post_send(s->qp, &wr, src, 2);

    data = gather(s, src, 2, &n);
    memcpy(t->shadow + remote_off, data, len);
    expect_sq_ok(s, s->qp, what, wr_id, VIRTIO_RDMA_WC_RDMA_WRITE);
    if (with_imm) {
        expect_cqe(t, what, &e);
    }
    side_check_mem(t, what);
    side_check_mem(s, what);
}

static void op_read(Side *s, Side *t, uint32_t len, uint64_t wr_id)
{
    g_autofree char *what = g_strdup_printf("%s<-%s RDMA_READ %u bytes",
                                            s->name, t->name, len);
    const uint32_t remote_off = 0x0801;
    uint32_t l1 = len / 2 + 1;
    struct virtio_rdma_sge dst[2] = {
        sge_of(s, 0x2000, l1), sge_of(s, 0x3000 - (len - l1), len - l1),
    };
    struct virtio_rdma_sq_req wr =
        qvrdma_wr_rdma(VIRTIO_RDMA_WR_RDMA_READ, wr_id, t->va + remote_off,
                       t->mr.rkey);

    g_assert_cmpuint(remote_off + len, <=, MR_LEN);
    g_assert_cmpuint(0x2000 + l1, <=, 0x3000 - (len - l1));
    qvrdma_dp_post_send(s->qp, &wr, dst, len > l1 ? 2 : 1);
    scatter(s, dst, 2, t->shadow + remote_off, len);
    expect_sq_ok(s, s->qp, what, wr_id, VIRTIO_RDMA_WC_RDMA_READ);
    side_check_mem(s, what);
    side_check_mem(t, what);
}

/* CAS or FAA on the 8 bytes at t's @remote_off; the old value lands in s. */
static void op_atomic(Side *s, Side *t, uint32_t opcode, uint32_t remote_off,
                      uint64_t compare_add, uint64_t swap, uint64_t wr_id)
{
    g_autofree char *what = NULL;
    const uint32_t local_off = 0x3800;
    struct virtio_rdma_sge dst = sge_of(s, local_off, 8);
    struct virtio_rdma_sq_req wr =
        qvrdma_wr_atomic(opcode, wr_id, t->va + remote_off, t->mr.rkey,
                         compare_add, swap);
    uint64_t old = shadow_u64(t, remote_off), nv;

    if (opcode == VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP) {
        nv = old == compare_add ? swap : old;
        what = g_strdup_printf("%s->%s CAS [0x%" PRIx64 "] cmp 0x%" PRIx64
                               " swap 0x%" PRIx64, s->name, t->name, old,
                               compare_add, swap);
    } else {
        nv = old + compare_add;
        what = g_strdup_printf("%s->%s FAA [0x%" PRIx64 "] + 0x%" PRIx64,
                               s->name, t->name, old, compare_add);
    }
    qvrdma_dp_post_send(s->qp, &wr, &dst, 1);
    old = cpu_to_le64(old);
    memcpy(s->shadow + local_off, &old, 8);
    nv = cpu_to_le64(nv);
    memcpy(t->shadow + remote_off, &nv, 8);
    expect_sq_ok(s, s->qp, what,  wr_id,
                 opcode == VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP ?
                 VIRTIO_RDMA_WC_COMP_SWAP : VIRTIO_RDMA_WC_FETCH_ADD);
    side_check_mem(s, what);
    side_check_mem(t, what);
}

/* ---- the RC suites, run on loopback and on the wire -------------------------------- */

static void rc_send(Side *a, Side *b)
{
    op_send(a, b, 1, false, 0, 0x1000);       /* one byte */
    op_send(a, b, 77, false, 0, 0x1010);
    op_send(a, b, 1024, false, 0, 0x1020);    /* exactly one MTU */
    op_send(a, b, 3000, false, 0, 0x1030);    /* 3 packets, 2+2 SGEs */
    op_send(b, a, 2049, false, 0, 0x1040);    /* the other way */
    op_send(a, b, 0, false, 0, 0x1050);       /* zero-length */
    op_send(a, b, 100, true, 0, 0x1060);      /* SEND_WITH_IMM */
    expect_quiet(a, "RC SEND");
    expect_quiet(b, "RC SEND");
}

static void rc_write(Side *a, Side *b)
{
    op_write(a, b, 1, false, 0x2000);
    op_write(a, b, 1000, false, 0x2010);
    op_write(a, b, 4000, false, 0x2020);      /* 4 packets */
    op_write(b, a, 2500, false, 0x2030);
    expect_quiet(a, "RC RDMA_WRITE");
    expect_quiet(b, "RC RDMA_WRITE");
}

static void rc_write_imm(Side *a, Side *b)
{
    op_write(a, b, 100, true, 0x3000);
    op_write(a, b, 3333, true, 0x3010);       /* 4 packets */
    op_write(b, a, 1024, true, 0x3020);
    expect_quiet(a, "RC RDMA_WRITE_WITH_IMM");
    expect_quiet(b, "RC RDMA_WRITE_WITH_IMM");
}

static void rc_read(Side *a, Side *b)
{
    op_read(a, b, 1, 0x4000);
    op_read(a, b, 1024, 0x4010);
    op_read(a, b, 3500, 0x4020);              /* 4 response packets */
    op_read(b, a, 777, 0x4030);
    expect_quiet(a, "RC RDMA_READ");
    expect_quiet(b, "RC RDMA_READ");
}

static void rc_cas(Side *a, Side *b)
{
    shadow_set_u64(b, 0x3f00, 0x0123456789abcdefull);
    /* Matches: swapped. */
    op_atomic(a, b, VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP, 0x3f00,
              0x0123456789abcdefull, 0xfedcba9876543210ull, 0x5000);
    /* Does not match (only the high half does): unchanged, old returned. */
    op_atomic(a, b, VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP, 0x3f00,
              0xfedcba9800000000ull, 0x1111111111111111ull, 0x5010);
    /* The other way. */
    shadow_set_u64(a, 0x3f08, 42);
    op_atomic(b, a, VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP, 0x3f08, 42, 43,
              0x5020);
    expect_quiet(a, "RC CAS");
    expect_quiet(b, "RC CAS");
}

static void rc_faa(Side *a, Side *b)
{
    shadow_set_u64(b, 0x3f10, 100);
    op_atomic(a, b, VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD, 0x3f10, 23, 0,
              0x6000);
    /* A carry across the 32-bit halves, and a wrap-around. */
    shadow_set_u64(b, 0x3f18, 0xffffffffull);
    op_atomic(a, b, VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD, 0x3f18, 1, 0,
              0x6010);
    shadow_set_u64(b, 0x3f20, UINT64_MAX);
    op_atomic(a, b, VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD, 0x3f20, 2, 0,
              0x6020);
    expect_quiet(a, "RC FAA");
    expect_quiet(b, "RC FAA");
}

/*
 * Twelve WRs (SEND, WRITE, READ in turn, each on its own memory) posted
 * behind one notification, more READs than max_rd_atomic (4): all complete,
 * in order, and every byte lands where it should.
 */
static void rc_pipeline(Side *a, Side *b)
{
    struct virtio_rdma_sq_req wr;
    struct virtio_rdma_sge sge;
    uint32_t i, n = 12;

    qvrdma_dp_batch_begin(&b->qp->rq);
    for (i = 0; i < n; i += 3) {
        sge = sge_of(b, 0x1000 + i * 0x100, 0x100);
        qvrdma_dp_post_recv(b->qp, 0xf800 + i, &sge, 1);
    }
    qvrdma_dp_batch_end(&b->qp->rq);

    qvrdma_dp_batch_begin(&a->qp->sq);
    for (i = 0; i < n; i++) {
        uint32_t len = 100 + i * 13;

        switch (i % 3) {
        case 0:
            wr = qvrdma_wr_send(0xf000 + i);
            sge = sge_of(a, i * 0x100, len);
            memcpy(b->shadow + 0x1000 + i * 0x100, a->shadow + i * 0x100,
                   len);
            break;
        case 1:
            wr = qvrdma_wr_rdma(VIRTIO_RDMA_WR_RDMA_WRITE, 0xf000 + i,
                                b->va + 0x2000 + i * 0x100, b->mr.rkey);
            sge = sge_of(a, i * 0x100, len);
            memcpy(b->shadow + 0x2000 + i * 0x100, a->shadow + i * 0x100,
                   len);
            break;
        default:
            wr = qvrdma_wr_rdma(VIRTIO_RDMA_WR_RDMA_READ, 0xf000 + i,
                                b->va + 0x3000 + i * 0x100, b->mr.rkey);
            sge = sge_of(a, 0x2000 + i * 0x100, len);
            memcpy(a->shadow + 0x2000 + i * 0x100,
                   b->shadow + 0x3000 + i * 0x100, len);
            break;
        }
        qvrdma_dp_post_send(a->qp, &wr, &sge, 1);
    }
    qvrdma_dp_batch_end(&a->qp->sq);

    for (i = 0; i < n; i++) {
        static const uint32_t op[3] = {
            VIRTIO_RDMA_WC_SEND, VIRTIO_RDMA_WC_RDMA_WRITE,
            VIRTIO_RDMA_WC_RDMA_READ,
        };

        expect_sq_ok(a, a->qp, "pipelined WR", 0xf000 + i, op[i % 3]);
    }
    for (i = 0; i < n; i += 3) {
        Expect e = {
            .wr_id = 0xf800 + i, .status = VIRTIO_RDMA_WC_SUCCESS,
            .opcode = VIRTIO_RDMA_WC_RECV, .byte_len = 100 + i * 13,
            .qp_num = b->qp->wire_qpn, .src_qp = ANY, .wc_flags = 0,
        };

        expect_cqe(b, "pipelined RECV", &e);
    }
    side_check_mem(a, "pipeline");
    side_check_mem(b, "pipeline");
    expect_quiet(a, "pipeline");
    expect_quiet(b, "pipeline");
}

typedef void (*RcSuite)(Side *a, Side *b);

static void run_loopback(const void *opaque)
{
    RcSuite suite = (RcSuite)opaque;
    Side a, b;

    loopback_setup(&a, &b);
    suite(&a, &b);
    teardown(&a, &b);
}

static void run_wire(const void *opaque)
{
    RcSuite suite = (RcSuite)opaque;
    Side a, b;

    wire_setup(&a, &b, 14, 7);
    suite(&a, &b);
    teardown(&a, &b);
}

/* Unsignaled WRs complete silently, but in order with the signaled ones. */
static void test_loopback_unsignaled(void)
{
    struct virtio_rdma_sge src = { 0 }, dst[2];
    struct virtio_rdma_sq_req wr;
    Side a, b;
    int i;

    loopback_setup(&a, &b);
    src = sge_of(&a, 0, 100);
    dst[0] = sge_of(&b, 0x1000, 128);
    dst[1] = sge_of(&b, 0x1100, 128);
    qvrdma_dp_post_recv(b.qp, 0xb001, &dst[0], 1);
    qvrdma_dp_post_recv(b.qp, 0xb011, &dst[1], 1);
    wr = qvrdma_wr_send(0xb000);
    wr.send_flags = 0;
    qvrdma_dp_post_send(a.qp, &wr, &src, 1);
    wr = qvrdma_wr_send(0xb010);
    qvrdma_dp_post_send(a.qp, &wr, &src, 1);
    memcpy(b.shadow + 0x1000, a.shadow, 100);
    memcpy(b.shadow + 0x1100, a.shadow, 100);

    expect_sq_ok(&a, a.qp, "signaled SEND after an unsignaled one", 0xb010,
                 VIRTIO_RDMA_WC_SEND);
    for (i = 0; i < 2; i++) {
        Expect e = {
            .wr_id = i ? 0xb011 : 0xb001, .status = VIRTIO_RDMA_WC_SUCCESS,
            .opcode = VIRTIO_RDMA_WC_RECV, .byte_len = 100,
            .qp_num = b.qp->wire_qpn, .src_qp = ANY, .wc_flags = 0,
        };

        expect_cqe(&b, i ? "second RECV" : "first RECV", &e);
    }
    expect_quiet(&a, "unsignaled SEND");
    expect_quiet(&b, "unsignaled SEND");
    side_check_mem(&b, "unsignaled SEND");
    teardown(&a, &b);
}

/* A's PSNs wrap from 0xffffff to 0 inside multi-packet messages. */
static void test_loopback_psn_wrap(void)
{
    Side a, b;

    loopback_setup_psn(&a, &b, 0xfffffe);
    op_send(&a, &b, 3000, false, 0, 0xc000);  /* PSNs fffffe, ffffff, 0 */
    op_write(&a, &b, 4000, false, 0xc010);    /* 1..4 */
    op_read(&a, &b, 3500, 0xc020);
    op_atomic(&a, &b, VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD, 0x3f10, 5, 0,
              0xc030);
    expect_quiet(&a, "PSN wrap");
    expect_quiet(&b, "PSN wrap");
    teardown(&a, &b);
}

/* ---- RC error paths (loopback) ----------------------------------------------------- */

static Expect expect_err(uint64_t wr_id, uint32_t status, uint32_t qpn)
{
    return (Expect) {
        .wr_id = wr_id, .status = status, .opcode = ANY, .byte_len = ANY,
        .qp_num = qpn, .src_qp = ANY, .wc_flags = ANY,
    };
}

/* After an error completion: the QP is in ERR and the next WR flushes. */
static void expect_qp_error(Side *s, const char *what, uint64_t next_wr_id)
{
    struct virtio_rdma_sge src = sge_of(s, 0, 8);
    struct virtio_rdma_sq_req wr = qvrdma_wr_send(next_wr_id);
    Expect e = expect_err(next_wr_id, VIRTIO_RDMA_WC_WR_FLUSH_ERR,
                          s->qp->wire_qpn);

    g_assert_cmpuint(qvrdma_dp_qp_state(s->d, s->qp), ==,
                     VIRTIO_RDMA_QPS_ERR);
    qvrdma_dp_post_send(s->qp, &wr, &src, 1);
    expect_cqe(s, what, &e);
}

/* WRITE with an rkey the responder does not know: REM_ACCESS_ERR. */
static void test_loopback_rem_access(void)
{
    struct virtio_rdma_sge src;
    struct virtio_rdma_sq_req wr;
    Side a, b;
    Expect e;

    loopback_setup(&a, &b);
    src = sge_of(&a, 0, 64);
    wr = qvrdma_wr_rdma(VIRTIO_RDMA_WR_RDMA_WRITE, 0xd000, b.va + 0x100,
                        b.mr.rkey ^ 0x80);  /* same MR index, wrong tag */
    qvrdma_dp_post_send(a.qp, &wr, &src, 1);
    e = expect_err(0xd000, VIRTIO_RDMA_WC_REM_ACCESS_ERR, a.qp->wire_qpn);
    expect_cqe(&a, "WRITE with a bad rkey", &e);
    expect_qp_error(&a, "SEND after REM_ACCESS_ERR", 0xd010);
    side_check_mem(&b, "WRITE with a bad rkey");
    side_check_mem(&a, "WRITE with a bad rkey");
    g_test_message("responder QP state after the NAK: %u",
                   qvrdma_dp_qp_state(b.d, b.qp));
    expect_quiet(&a, "REM_ACCESS_ERR");
    teardown(&a, &b);
}

/* RDMA READ beyond the end of the remote MR: REM_ACCESS_ERR, nothing read. */
static void test_loopback_rem_bounds(void)
{
    struct virtio_rdma_sge dst;
    struct virtio_rdma_sq_req wr;
    Side a, b;
    Expect e;

    loopback_setup(&a, &b);
    dst = sge_of(&a, 0x2000, 64);
    wr = qvrdma_wr_rdma(VIRTIO_RDMA_WR_RDMA_READ, 0xd100,
                        b.va + MR_LEN - 32, b.mr.rkey);
    qvrdma_dp_post_send(a.qp, &wr, &dst, 1);
    e = expect_err(0xd100, VIRTIO_RDMA_WC_REM_ACCESS_ERR, a.qp->wire_qpn);
    expect_cqe(&a, "READ past the remote MR", &e);
    expect_qp_error(&a, "SEND after REM_ACCESS_ERR", 0xd110);
    side_check_mem(&a, "READ past the remote MR");
    expect_quiet(&a, "REM_ACCESS_ERR");
    teardown(&a, &b);
}

/* A local SGE with an lkey that does not exist: LOC_PROT_ERR, nothing sent. */
static void test_loopback_loc_prot(void)
{
    struct virtio_rdma_sge src, rbuf;
    struct virtio_rdma_sq_req wr;
    Side a, b;
    Expect e;

    loopback_setup(&a, &b);
    rbuf = sge_of(&b, 0x1000, 256);
    qvrdma_dp_post_recv(b.qp, 0xd201, &rbuf, 1);
    src = sge_of(&a, 0, 64);
    src.lkey = cpu_to_le32(a.mr.lkey + 0x1000);     /* another MR index */
    wr = qvrdma_wr_send(0xd200);
    qvrdma_dp_post_send(a.qp, &wr, &src, 1);
    e = expect_err(0xd200, VIRTIO_RDMA_WC_LOC_PROT_ERR, a.qp->wire_qpn);
    expect_cqe(&a, "SEND with a bad lkey", &e);
    expect_qp_error(&a, "SEND after LOC_PROT_ERR", 0xd210);
    /* Nothing reached B: its receive is still posted, its memory intact. */
    expect_quiet(&b, "SEND with a bad lkey");
    side_check_mem(&b, "SEND with a bad lkey");
    teardown(&a, &b);
}

/*
 * SEND longer than the receive buffer: the requester gets REM_INV_REQ_ERR
 * (NAK invalid request), the receive completes with LOC_LEN_ERR (IBA), both
 * QPs end in ERR.  Nothing is written past the receive buffer.  On a host
 * rxe (QVRDMA_IBDEV) both statuses are the host's: rxe NAKs it as a
 * remote operational error (REM_OP_ERR) and completes the receive with
 * LOC_QP_OP_ERR.
 */
static void test_loopback_recv_too_small(void)
{
    struct virtio_rdma_sge src, rbuf;
    struct virtio_rdma_sq_req wr;
    struct virtio_rdma_cq_req c;
    Side a, b;
    Expect e;
    uint32_t st;

    loopback_setup(&a, &b);
    rbuf = sge_of(&b, 0x1000, 64);
    qvrdma_dp_post_recv(b.qp, 0xd301, &rbuf, 1);
    src = sge_of(&a, 0, 100);
    wr = qvrdma_wr_send(0xd300);
    qvrdma_dp_post_send(a.qp, &wr, &src, 1);
    e = expect_err(0xd300, qvrdma_dp_ibverbs() ? VIRTIO_RDMA_WC_REM_OP_ERR :
                           VIRTIO_RDMA_WC_REM_INV_REQ_ERR, a.qp->wire_qpn);
    expect_cqe(&a, "SEND longer than the receive buffer", &e);

    qvrdma_dp_wait_cqe(b.cq, &c);
    st = le32_to_cpu(c.status);
    g_test_message("receiver's completion: %s",
                   qvrdma_wc_status_name(st));
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0xd301);
    g_assert_cmpuint(le32_to_cpu(c.qp_num), ==, b.qp->wire_qpn);
    g_assert_cmpstr(qvrdma_wc_status_name(st), ==,
                    qvrdma_dp_ibverbs() ? "LOC_QP_OP_ERR" : "LOC_LEN_ERR");
    g_assert_cmpuint(qvrdma_dp_qp_state(b.d, b.qp), ==, VIRTIO_RDMA_QPS_ERR);
    expect_qp_error(&a, "SEND after REM_INV_REQ_ERR", 0xd310);
    /* Whatever was placed stays inside the 64-byte buffer. */
    {
        g_autofree uint8_t *mem = g_malloc(MR_LEN);

        qtest_bufread(b.d->qts, b.pt.data, mem, MR_LEN);
        memcpy(b.shadow + 0x1000, mem + 0x1000, 64);
    }
    side_check_mem(&b, "SEND longer than the receive buffer");
    teardown(&a, &b);
}

/*
 * No receive posted: the responder answers RNR NAK (its min_rnr_timer); the
 * requester retries and succeeds once a receive is posted (rnr_retry 7 =
 * forever), or gives up with RNR_RETRY_EXC_ERR after rnr_retry tries.
 */
static void test_loopback_rnr(void)
{
    struct virtio_rdma_sge src, rbuf;
    struct virtio_rdma_sq_req wr;
    Side a, b;
    Expect e;
    gint64 t0;

    loopback_boot(&a, &b, 0x100);
    b.min_rnr_timer = 18;                   /* 5.12 ms */
    rc_connect(&a, &b, 14, 7);

    src = sge_of(&a, 0, 48);
    wr = qvrdma_wr_send(0xe000);
    t0 = g_get_monotonic_time();
    qvrdma_dp_post_send(a.qp, &wr, &src, 1);
    expect_quiet(&a, "SEND without a receive posted");
    rbuf = sge_of(&b, 0x1000, 64);
    qvrdma_dp_post_recv(b.qp, 0xe001, &rbuf, 1);
    if (!qvrdma_dp_ibverbs()) {
        /*
         * RNR NAKs came, but no faster than one per 5.12 ms (the soft
         * engine's counters: on a host device the NAKs are the host's).
         */
        uint64_t naks = qvrdma_dp_counter(a.d, "rnr-naks-received");
        gint64 waited = g_get_monotonic_time() - t0;

        g_test_message("%" PRIu64 " RNR NAKs in %" PRId64 " ms", naks,
                       waited / 1000);
        g_assert_cmpuint(naks, >=, 1);
        g_assert_cmpuint(naks, <=, waited / 5120 + 2);
    }
    memcpy(b.shadow + 0x1000, a.shadow, 48);
    expect_sq_ok(&a, a.qp, "SEND after the receive was posted late", 0xe000,
                 VIRTIO_RDMA_WC_SEND);
    e = (Expect) {
        .wr_id = 0xe001, .status = VIRTIO_RDMA_WC_SUCCESS,
        .opcode = VIRTIO_RDMA_WC_RECV, .byte_len = 48, .qp_num = b.qp->wire_qpn,
        .src_qp = ANY, .wc_flags = 0,
    };
    expect_cqe(&b, "late receive", &e);
    side_check_mem(&b, "RNR retry");
    teardown(&a, &b);

    /* Now with rnr_retry 2: gives up. */
    loopback_boot(&a, &b, 0x100);
    b.min_rnr_timer = 18;
    a.rnr_retry = 2;
    rc_connect(&a, &b, 14, 7);
    wr = qvrdma_wr_send(0xe100);
    src = sge_of(&a, 0, 48);
    t0 = g_get_monotonic_time();
    qvrdma_dp_post_send(a.qp, &wr, &src, 1);
    e = expect_err(0xe100, VIRTIO_RDMA_WC_RNR_RETRY_EXC_ERR, a.qp->wire_qpn);
    expect_cqe(&a, "SEND to a QP that never posts a receive", &e);
    /* Two waits of at least 5.12 ms happened first. */
    g_assert_cmpint(g_get_monotonic_time() - t0, >=, 2 * 5120);
    /* The first try and rnr_retry (2) retries, each NAKed (soft engine). */
    if (!qvrdma_dp_ibverbs()) {
        g_assert_cmpuint(qvrdma_dp_counter(a.d, "rnr-naks-sent"), ==, 3);
        g_assert_cmpuint(qvrdma_dp_counter(a.d, "rnr-naks-received"), ==, 3);
    }
    expect_qp_error(&a, "SEND after RNR_RETRY_EXC_ERR", 0xe110);
    side_check_mem(&b, "RNR_RETRY_EXC_ERR");
    teardown(&a, &b);
}

/* ---- malformed work requests ------------------------------------------------------ */

/* ---- UD over the wire ------------------------------------------------------------- */

/* A UD SEND from @s's UD QP to @t's, towards @dgid, from GID index 0. */
static struct virtio_rdma_sq_req ud_wr(Side *s, Side *t,
                                       const uint8_t dgid[16], uint64_t wr_id)
{
    struct virtio_rdma_sq_req wr = qvrdma_wr_send(wr_id);

    wr.wr.ud.remote_qpn = t->ud->wire_qpn;
    wr.wr.ud.remote_qkey = QKEY;
    wr.wr.ud.av.port = 1;
    wr.wr.ud.av.pdn = s->pdn;
    memcpy(wr.wr.ud.av.dgid, dgid, 16);
    wr.wr.ud.av.hop_limit = 64;
    memcpy(wr.wr.ud.av.dmac, t->d->mac, 6);
    return wr;
}

/*
 * A UD SEND of @len bytes from a's UD QP to b's, a's GID @sgid_index to b's
 * @dgid, with Q_Key @qkey in the request; checks the receive completion and
 * the 40-byte GRH area: 20 zero bytes + the IPv4 header for IPv4-mapped
 * GIDs, the IPv6 header otherwise.
 */
static void ud_send_qkey(Side *a, Side *b, uint8_t sgid_index,
                         const uint8_t sgid[16], const uint8_t dgid[16],
                         uint32_t len, uint64_t wr_id, uint32_t qkey)
{
    static const uint8_t v4mapped[12] = {
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff,
    };
    bool v4 = !memcmp(dgid, v4mapped, 12);
    g_autofree char *what = g_strdup_printf("%s->%s UD SEND %u bytes over "
                                            "IPv%d", a->name, b->name, len,
                                            v4 ? 4 : 6);
    const uint32_t roff = 0x1000;
    struct virtio_rdma_sge src = sge_of(a, 0x0200, len);
    struct virtio_rdma_sge dst = sge_of(b, roff, 40 + 1024);
    struct virtio_rdma_sq_req wr = ud_wr(a, b, dgid, wr_id);
    /* UDP 8 + BTH 12 + DETH 8 + payload padded to 4 + ICRC 4. */
    const uint32_t udp_len = 8 + 12 + 8 + ROUND_UP(len, 4) + 4;
    uint8_t grh[40];
    Expect e = {
        .wr_id = wr_id + 1, .status = VIRTIO_RDMA_WC_SUCCESS,
        .opcode = VIRTIO_RDMA_WC_RECV, .byte_len = 40 + len,
        .qp_num = b->ud->wire_qpn, .src_qp = a->ud->wire_qpn,
        .wc_flags = VIRTIO_RDMA_WC_GRH, .wc_flags_mask = ~0u,
    };

    qvrdma_dp_post_recv(b->ud, wr_id + 1, &dst, 1);
    /*
     * A UD datagram that finds no receive is dropped, not retried: with
     * ioeventfd, B's QEMU takes the RECV in its own time, so wait for it
     * before A sends (a loaded host lost the race).
     */
    qvrdma_dp_wait_ring_idle(&b->ud->rq);
    wr.wr.ud.av.gid_index = sgid_index;
    wr.wr.ud.remote_qkey = qkey;
    qvrdma_dp_post_send(a->ud, &wr, &src, 1);

    expect_sq_ok(a, a->ud, what, wr_id, VIRTIO_RDMA_WC_SEND);
    expect_cqe(b, what, &e);

    qtest_bufread(b->d->qts, side_gpa(b, roff), grh, sizeof(grh));
    if (v4) {
        const uint8_t *ip = grh + 20;
        static const uint8_t zero[20];

        g_assert_true(!memcmp(grh, zero, 20));
        g_assert_cmphex(ip[0], ==, 0x45);
        g_assert_cmpuint((ip[2] << 8) | ip[3], ==, 20 + udp_len);
        g_assert_cmpuint(ip[8], ==, 64);                /* TTL = hop limit */
        g_assert_cmpuint(ip[9], ==, 17);                /* UDP */
        /*
         * On a host rxe the GRH is rxe's: between two QPs of one rxe the
         * packet skips the IP stack, which is what fills the checksum.
         */
        if (!qvrdma_dp_ibverbs()) {
            g_assert_cmphex(qvrdma_ip_checksum(ip, 20), ==, 0);
        }
        g_assert_true(!memcmp(ip + 12, sgid + 12, 4));
        g_assert_true(!memcmp(ip + 16, dgid + 12, 4));
    } else {
        g_assert_cmphex(grh[0] >> 4, ==, 6);
        g_assert_cmpuint((grh[4] << 8) | grh[5], ==, udp_len);
        g_assert_cmpuint(grh[6], ==, 17);               /* next header */
        g_assert_cmpuint(grh[7], ==, 64);               /* hop limit */
        g_assert_true(!memcmp(grh + 8, sgid, 16));
        g_assert_true(!memcmp(grh + 24, dgid, 16));
    }
    memcpy(b->shadow + roff, grh, 40);
    memcpy(b->shadow + roff + 40, a->shadow + 0x200, len);
    side_check_mem(b, what);
    side_check_mem(a, what);
}

/* ud_send_qkey() with the Q_Key both UD QPs have. */
static void ud_send(Side *a, Side *b, uint8_t sgid_index,
                    const uint8_t sgid[16], const uint8_t dgid[16],
                    uint32_t len, uint64_t wr_id)
{
    ud_send_qkey(a, b, sgid_index, sgid, dgid, len, wr_id, QKEY);
}

static void test_wire_ud(const void *opaque)
{
    bool ipv6 = GPOINTER_TO_INT(opaque);
    /*
     * fd00::a / fd00::b at GID index 1 for the IPv6 case; on a host RDMA
     * device both are the host's IPv6 address (QVRDMA_GID_IPV6).
     */
    uint8_t ga6[16] = { 0xfd, [15] = 0x0a }, gb6[16] = { 0xfd, [15] = 0x0b };
    const char *host6 = g_getenv("QVRDMA_GID_IPV6");
    Side a, b;

    if (ipv6 && qvrdma_dp_ibverbs()) {
        g_assert_nonnull(host6);
        g_assert_cmpint(inet_pton(AF_INET6, host6, ga6), ==, 1);
        memcpy(gb6, ga6, 16);
    }

    wire_setup(&a, &b, 14, 7);
    side_add_ud(&a, 0x777);
    side_add_ud(&b, 0x888);
    if (ipv6) {
        qvrdma_dp_add_gid(a.d, 1, ga6);
        qvrdma_dp_add_gid(b.d, 1, gb6);
        ud_send(&a, &b, 1, ga6, gb6, 200, 0x7000);
        ud_send(&b, &a, 1, gb6, ga6, 1024, 0x7010);  /* a full MTU */
    } else {
        ud_send(&a, &b, 0, a.gid, b.gid, 200, 0x7000);
        ud_send(&b, &a, 0, b.gid, a.gid, 1, 0x7010);
        ud_send(&a, &b, 0, a.gid, b.gid, 1024, 0x7020);
    }
    expect_quiet(&a, "UD SEND");
    expect_quiet(&b, "UD SEND");
    teardown(&a, &b);
}

/*
 * QP1 only from the GSI QP (issue 25, item 4: on a host RDMA device a UD
 * QP's send to QPN 1 with QP1's Q_Key went to the peer's QP1 unchanged, a
 * MAD of any class past rdmacm-mux).  A Q_Key with bit 31 set in a UD
 * request means the QP's own (IBA C10-15): B's QP takes it.  A send to
 * QPN 1 from A's UD QP completes in error on that QP, which goes to ERR,
 * and nothing is sent.
 */
static void test_wire_ud_qp1(void)
{
    struct virtio_rdma_sge src;
    struct virtio_rdma_sq_req wr;
    Expect e = {
        .wr_id = 0x7210, .status = VIRTIO_RDMA_WC_LOC_QP_OP_ERR,
        .opcode = VIRTIO_RDMA_WC_SEND, .byte_len = ANY, .src_qp = ANY,
        .wc_flags = ANY,
    };
    uint64_t tx;
    Side a, b;

    wire_setup(&a, &b, 14, 7);
    side_add_ud(&a, 0x777);
    side_add_ud(&b, 0x888);
    ud_send_qkey(&a, &b, 0, a.gid, b.gid, 64, 0x7200, 0x80010000);
    tx = qvrdma_dp_counter(a.d, "tx-packets");

    src = sge_of(&a, 0x200, 64);
    wr = ud_wr(&a, &b, b.gid, 0x7210);
    wr.wr.ud.remote_qpn = 1;
    wr.wr.ud.remote_qkey = 0x80010000;
    qvrdma_dp_post_send(a.ud, &wr, &src, 1);
    e.qp_num = a.ud->wire_qpn;
    expect_cqe(&a, "UD SEND to QPN 1 from a UD QP", &e);
    g_assert_cmpuint(qvrdma_dp_qp_state(a.d, a.ud), ==, VIRTIO_RDMA_QPS_ERR);
    g_assert_cmpuint(qvrdma_dp_counter(a.d, "tx-packets"), ==, tx);
    expect_quiet(&b, "UD SEND to QPN 1 from a UD QP");
    side_check_mem(&a, "UD SEND to QPN 1 from a UD QP");
    side_check_mem(&b, "UD SEND to QPN 1 from a UD QP");
    teardown(&a, &b);
}

/*
 * A frame that is not for one of B's GIDs must not block B's wire: B's
 * virtio-net has no driver (it cannot receive), so whatever the filter does
 * not take must not stop the netdev from reading the next frames.
 */
static void test_wire_not_ours_first(void)
{
    uint8_t other[16];
    Side a, b;
    struct virtio_rdma_sge src;
    struct virtio_rdma_sq_req wr;

    wire_setup(&a, &b, 14, 7);
    side_add_ud(&a, 0x777);
    side_add_ud(&b, 0x888);
    /* To 10.0.0.99: B's filter does not take it. */
    qvrdma_gid_ipv4(other, 10, 0, 0, 99);
    src = sge_of(&a, 0x200, 64);
    wr = ud_wr(&a, &b, other, 0x7100);
    qvrdma_dp_post_send(a.ud, &wr, &src, 1);
    expect_sq_ok(&a, a.ud, "UD SEND to a foreign address", 0x7100,
                 VIRTIO_RDMA_WC_SEND);
    g_usleep(100 * 1000);
    expect_quiet(&b, "UD SEND to a foreign address");
    /* The wire still works. */
    ud_send(&a, &b, 0, a.gid, b.gid, 200, 0x7110);
    op_send(&a, &b, 100, false, 0, 0x7120);
    teardown(&a, &b);
}

/* ---- a peer that disappears ---------------------------------------------------------- */

static void test_wire_peer_gone(void)
{
    /* 4.096 us * 2^14 = 67 ms per try; 3 retries (7 would be "infinite"). */
    const uint8_t timeout = 14, retry_cnt = 3;
    const gint64 t_ns = 4096LL << timeout;
    struct virtio_rdma_sge src = { 0 }, rbuf = { 0 };
    struct virtio_rdma_sq_req wr;
    struct virtio_rdma_cq_req c[3];
    bool seen_write = false, seen_recv = false;
    gint64 t0, elapsed_us;
    Side a, b;
    int i;
    Expect e;

    wire_setup(&a, &b, timeout, retry_cnt);
    src = sge_of(&a, 0, 64);
    rbuf = sge_of(&a, 0x1000, 64);

    /* Mid-conversation: one exchange works. */
    op_send(&a, &b, 64, false, 0, 0x8000);

    /* A receive that the error will flush. */
    qvrdma_dp_post_recv(a.qp, 0x80f0, &rbuf, 1);

    qvrdma_dev_kill(b.d);
    b.dead = true;
    g_test_message("B's QEMU killed");

    t0 = g_get_monotonic_time();
    wr = qvrdma_wr_send(0x8010);
    qvrdma_dp_post_send(a.qp, &wr, &src, 1);
    /* Unsignaled: a flushed WR completes anyway. */
    wr = qvrdma_wr_rdma(VIRTIO_RDMA_WR_RDMA_WRITE, 0x8020, b.va, b.mr.rkey);
    wr.send_flags = 0;
    qvrdma_dp_post_send(a.qp, &wr, &src, 1);

    e = (Expect) {
        .wr_id = 0x8010, .status = VIRTIO_RDMA_WC_RETRY_EXC_ERR,
        .opcode = ANY, .byte_len = ANY, .qp_num = a.qp->wire_qpn, .src_qp = ANY,
        .wc_flags = ANY,
    };
    expect_cqe(&a, "SEND to a dead peer", &e);
    elapsed_us = g_get_monotonic_time() - t0;
    g_test_message("RETRY_EXC_ERR after %" PRId64 " ms", elapsed_us / 1000);
    /* Not before the retries can have run (lower bound, half of it). */
    g_assert_cmpint(elapsed_us * 1000, >=, (retry_cnt + 1) * t_ns / 2);
    /* ... and not much later either (generous for a loaded host). */
    g_assert_cmpint(elapsed_us, <=, 5 * 1000 * 1000);
    /* Each try timed out; each retry sent the request again (soft engine). */
    if (!qvrdma_dp_ibverbs()) {
        g_assert_cmpuint(qvrdma_dp_counter(a.d, "retry-timeouts"), >=,
                         retry_cnt + 1);
        g_assert_cmpuint(qvrdma_dp_counter(a.d, "retransmits"), >=,
                         retry_cnt);
    }

    /* The rest flushes: the unsignaled WRITE and the receive, any order. */
    for (i = 0; i < 2; i++) {
        qvrdma_dp_wait_cqe(a.cq, &c[i]);
        if (le64_to_cpu(c[i].wr_id) == 0x8020) {
            g_assert_false(seen_write);
            seen_write = true;
        } else {
            g_assert_false(seen_recv);
            seen_recv = true;
        }
        e = (Expect) {
            .wr_id = le64_to_cpu(c[i].wr_id) == 0x8020 ? 0x8020 : 0x80f0,
            .status = VIRTIO_RDMA_WC_WR_FLUSH_ERR, .opcode = ANY,
            .byte_len = ANY, .qp_num = a.qp->wire_qpn, .src_qp = ANY,
            .wc_flags = ANY,
        };
        cqe_check("flush after RETRY_EXC_ERR", &c[i], &e);
    }
    g_assert_cmpuint(qvrdma_dp_qp_state(a.d, a.qp), ==, VIRTIO_RDMA_QPS_ERR);

    /* A QP in ERR completes new work at once, flushed. */
    wr = qvrdma_wr_send(0x8030);
    qvrdma_dp_post_send(a.qp, &wr, &src, 1);
    e.wr_id = 0x8030;
    expect_cqe(&a, "SEND posted in ERR", &e);
    qvrdma_dp_post_recv(a.qp, 0x8040, &rbuf, 1);
    e.wr_id = 0x8040;
    expect_cqe(&a, "RECV posted in ERR", &e);
    expect_quiet(&a, "dead peer");
    side_check_mem(&a, "dead peer");
    teardown(&a, &b);
}

/* ---- CQ arming ------------------------------------------------------------------ */

/* A SEND a -> b with both completions taken; @flags: extra send flags. */
static void arm_send(Side *a, Side *b, uint32_t flags, uint64_t wr_id)
{
    op_send(a, b, 32, false, flags, wr_id);
}

static void assert_no_irq(Side *s, const char *when)
{
    if (qvrdma_dp_wait_cq_irq(s->cq, QUIET_US)) {
        g_error("%s: %s's CQ %u interrupted without being armed for it",
                when, s->name, s->cq->cqn);
    }
}

/*
 * Waits for @s's CQ interrupt.  With @cqe_unread (its completion not taken
 * yet), the completion must already be in the used ring when it comes.
 */
static void assert_irq_full(Side *s, const char *when, bool cqe_unread)
{
    if (!qvrdma_dp_wait_cq_irq(s->cq, QVRDMA_DP_TIMEOUT_US)) {
        g_error("%s: no interrupt on %s's armed CQ %u (%u CQEs waiting)",
                when, s->name, s->cq->cqn, qvrdma_dp_cq_pending(s->cq));
    }
    if (cqe_unread) {
        g_assert_cmpuint(qvrdma_dp_cq_pending(s->cq), >=, 1);
    }
}

/* After arm_send(), which took the completions already. */
static void assert_irq(Side *s, const char *when)
{
    assert_irq_full(s, when, false);
}

static void arm(Side *s, uint32_t flags)
{
    qvrdma_dp_cq_arm(s->cq, flags);
}

/* The device's event queue, which carries the CQs' notifications. */
static QVrdmaEq *ring_events(Side *a)
{
    return qvrdma_dp_eq_create(a->d, 8, sizeof(struct virtio_rdma_event), 8);
}

static void test_cq_arm_next(void)
{
    Side a, b;
    uint64_t wr = 0x9000;
    QVrdmaEq *eq;

    loopback_setup(&a, &b);
    eq = ring_events(&a);
    g_assert_false(qvrdma_dp_cq_irq(a.cq));
    g_assert_false(qvrdma_dp_cq_irq(b.cq));

    /* Not armed: completions, no interrupt. */
    arm_send(&a, &b, 0, wr += 0x10);
    assert_no_irq(&a, "unarmed");
    assert_no_irq(&b, "unarmed");

    /* B armed for the next completion: its RECV interrupts, A's SEND not. */
    arm(&b, VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);
    qvrdma_dp_post_recv(b.qp, 0x9901, (struct virtio_rdma_sge[]) {
                            sge_of(&b, 0x1000, 64) }, 1);
    {
        struct virtio_rdma_sq_req w = qvrdma_wr_send(0x9900);
        struct virtio_rdma_sge s = sge_of(&a, 0, 32);

        qvrdma_dp_post_send(a.qp, &w, &s, 1);
    }
    assert_irq_full(&b, "B armed NEXT", true);
    memcpy(b.shadow + 0x1000, a.shadow, 32);
    expect_sq_ok(&a, a.qp, "A SEND", 0x9900, VIRTIO_RDMA_WC_SEND);
    {
        Expect e = {
            .wr_id = 0x9901, .status = VIRTIO_RDMA_WC_SUCCESS,
            .opcode = VIRTIO_RDMA_WC_RECV, .byte_len = 32,
            .qp_num = b.qp->wire_qpn, .src_qp = ANY, .wc_flags = 0,
        };
        expect_cqe(&b, "B RECV", &e);
    }
    side_check_mem(&b, "armed RECV");
    assert_no_irq(&a, "A not armed");
    assert_no_irq(&b, "B fired once");

    /* Fired once: disarmed. */
    arm_send(&a, &b, 0, wr += 0x10);
    assert_no_irq(&b, "B disarmed after firing");

    /* A armed: the send completion interrupts. */
    arm(&a, VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);
    arm_send(&a, &b, 0, wr += 0x10);
    assert_irq(&a, "A armed NEXT");
    assert_no_irq(&b, "B not armed");

    /* Arming twice before a completion still interrupts once. */
    arm(&b, VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);
    arm(&b, VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);
    arm_send(&a, &b, 0, wr += 0x10);
    assert_irq(&b, "B armed twice");
    arm_send(&a, &b, 0, wr += 0x10);
    assert_no_irq(&b, "B disarmed after arming twice");
    qvrdma_dp_eq_free(eq);
    teardown(&a, &b);
}

static void test_cq_arm_solicited(void)
{
    Side a, b;
    uint64_t wr = 0xa000;
    QVrdmaEq *eq;

    loopback_setup(&a, &b);
    eq = ring_events(&a);

    /* Armed for solicited events: an unsolicited SEND does not interrupt. */
    arm(&b, VIRTIO_RDMA_NOTIFY_SOLICITED);
    arm_send(&a, &b, 0, wr += 0x10);
    assert_no_irq(&b, "B armed SOLICITED, unsolicited SEND");

    /* ... and does not disarm it: a solicited one does interrupt. */
    arm_send(&a, &b, VIRTIO_RDMA_SEND_SOLICITED, wr += 0x10);
    assert_irq(&b, "B armed SOLICITED, solicited SEND");
    assert_no_irq(&a, "A not armed");

    /* Fired: disarmed again. */
    arm_send(&a, &b, VIRTIO_RDMA_SEND_SOLICITED, wr += 0x10);
    assert_no_irq(&b, "B disarmed after the solicited event");

    /* Armed NEXT: any completion, solicited or not. */
    arm(&b, VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);
    arm_send(&a, &b, 0, wr += 0x10);
    assert_irq(&b, "B armed NEXT, unsolicited SEND");
    qvrdma_dp_eq_free(eq);
    teardown(&a, &b);
}

/* ---- what the Linux guest driver relies on (issue 11) ----------------------------- */

static void qp_to_state(QVrdmaDev *d, uint32_t qpn, uint32_t state)
{
    struct virtio_rdma_qp_attr attr;
    uint8_t zero[16] = { 0 };
    uint32_t mask = VIRTIO_RDMA_QP_STATE;
    uint8_t st;

    if (state == VIRTIO_RDMA_QPS_INIT) {
        qvrdma_rc_attr(state, 0, 0, zero, &attr, &mask);
    } else {
        memset(&attr, 0, sizeof(attr));
        attr.qp_state = state;
    }
    st = qvrdma_modify_qp(&d->r, qpn, mask, &attr);
    g_assert_cmpstr(qvrdma_status_name(st), ==, "OK");
}

/* ---- the event queue ------------------------------------------------------------- */

#define EV_LEN      sizeof(struct virtio_rdma_event)

static void expect_event(QVrdmaEq *eq, uint32_t cqn, const char *when)
{
    struct virtio_rdma_event ev;

    if (!qvrdma_dp_eq_poll(eq, &ev, QVRDMA_DP_TIMEOUT_US)) {
        g_error("%s: no event for CQ %u", when, cqn);
    }
    g_assert_cmpuint(le32_to_cpu(ev.type), ==, VIRTIO_RDMA_EVENT_CQ);
    g_assert_cmpuint(le32_to_cpu(ev.handle), ==, cqn);
    g_assert_cmpuint(ev.reserved[0] | ev.reserved[1], ==, 0);
}

static void expect_no_event(QVrdmaEq *eq, const char *when)
{
    struct virtio_rdma_event ev;

    if (qvrdma_dp_eq_poll(eq, &ev, QUIET_US)) {
        g_error("%s: unexpected event type %u handle %u", when,
                le32_to_cpu(ev.type), le32_to_cpu(ev.handle));
    }
}

/*
 * An armed CQ that fires writes one record {CQ, cqn} to the event queue
 * and notifies the event queue; the CQ's own virtqueue is not notified.
 * Arming stays one-shot.
 */
static void test_eq_cq_event(void)
{
    Side a, b;
    QVrdmaEq *eq;
    uint64_t wr = 0xc000;
    struct virtio_rdma_event ev[2];

    loopback_setup(&a, &b);
    eq = qvrdma_dp_eq_create(a.d, 8, EV_LEN, 8);
    g_assert_true(eq->has_msix);

    arm_send(&a, &b, 0, wr += 0x10);
    expect_no_event(eq, "not armed");

    arm(&b, VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);
    arm_send(&a, &b, 0, wr += 0x10);
    expect_event(eq, b.cq->cqn, "B armed NEXT");
    g_assert_true(qvrdma_dp_eq_irq(eq));

    arm_send(&a, &b, 0, wr += 0x10);
    expect_no_event(eq, "B fired once");
    g_assert_false(qvrdma_dp_eq_irq(eq));

    /* Both armed: one event each. */
    arm(&a, VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);
    arm(&b, VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);
    arm_send(&a, &b, 0, wr += 0x10);
    g_assert_true(qvrdma_dp_eq_poll(eq, &ev[0], QVRDMA_DP_TIMEOUT_US));
    g_assert_true(qvrdma_dp_eq_poll(eq, &ev[1], QVRDMA_DP_TIMEOUT_US));
    g_assert_cmpuint(le32_to_cpu(ev[0].handle) ^ le32_to_cpu(ev[1].handle),
                     ==, a.cq->cqn ^ b.cq->cqn);
    g_assert_cmpuint(le32_to_cpu(ev[0].handle), !=,
                     le32_to_cpu(ev[1].handle));
    expect_no_event(eq, "both fired");
    qvrdma_dp_eq_free(eq);
    teardown(&a, &b);
}

/*
 * No event buffer: the event waits (one per CQ however often it fires)
 * and goes out when the driver posts buffers and kicks.
 */
static void test_eq_no_buffer(void)
{
    Side a, b;
    QVrdmaEq *eq;
    uint64_t wr = 0xc100;

    loopback_setup(&a, &b);
    eq = qvrdma_dp_eq_create(a.d, 4, EV_LEN, 0);
    arm(&b, VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);
    arm_send(&a, &b, 0, wr += 0x10);
    arm(&b, VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);
    arm_send(&a, &b, 0, wr += 0x10);
    expect_no_event(eq, "no buffer posted");

    qvrdma_dp_eq_post_all(eq);
    expect_event(eq, b.cq->cqn, "buffers posted");
    expect_no_event(eq, "one pending event per CQ");
    qvrdma_dp_eq_free(eq);
    teardown(&a, &b);
}

/*
 * A CQ destroyed with its event pending: the event is dropped, and the CQ
 * that takes its number next gets none.
 */
static void test_eq_destroyed_cq(void)
{
    Side a, b;
    QVrdmaEq *eq;
    QVrdmaCq *cq, *cq2;
    QVrdmaQp *qp;
    uint32_t cqn;

    loopback_setup(&a, &b);
    eq = qvrdma_dp_eq_create(a.d, 4, EV_LEN, 0);
    cq = qvrdma_dp_cq_create(a.d, 16);
    cqn = cq->cqn;
    qp = qvrdma_dp_qp_create(a.d, a.pdn, VIRTIO_RDMA_QPT_RC, cq, cq, 1,
                             VIRTIO_RDMA_SIGNAL_ALL_WR);
    qp_to_state(a.d, qp->qpn, VIRTIO_RDMA_QPS_INIT);
    qvrdma_dp_post_recv(qp, 0xc201, NULL, 0);
    qvrdma_dp_cq_arm(cq, VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);
    qp_to_state(a.d, qp->qpn, VIRTIO_RDMA_QPS_ERR);   /* flushes the RECV */
    {
        struct virtio_rdma_cq_req c;

        qvrdma_dp_wait_cqe(cq, &c);
        g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0xc201);
    }
    g_assert_cmpuint(qvrdma_destroy_qp(&a.d->r, qp->qpn), ==, 0);
    g_assert_cmpuint(qvrdma_destroy_cq(&a.d->r, cqn), ==, 0);
    qvrdma_dp_qp_free(qp);
    qvrdma_dp_cq_free(cq);
    cq2 = qvrdma_dp_cq_create(a.d, 16);
    g_assert_cmpuint(cq2->cqn, ==, cqn);

    qvrdma_dp_eq_post_all(eq);
    expect_no_event(eq, "the CQ was destroyed");
    g_assert_cmpuint(qvrdma_destroy_cq(&a.d->r, cq2->cqn), ==, 0);
    qvrdma_dp_cq_free(cq2);
    qvrdma_dp_eq_free(eq);
    /* Not teardown(): its counters do not know the extra CQ's completion. */
    side_free(&b);
    side_free(&a);
}

/* An event buffer shorter than a record breaks the device (NEEDS_RESET). */
static void test_eq_short_buffer(void)
{
    Side a, b;
    QVrdmaEq *eq;
    gint64 t0;

    loopback_setup(&a, &b);
    eq = qvrdma_dp_eq_create(a.d, 4, EV_LEN - 1, 4);
    arm(&b, VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);
    {
        struct virtio_rdma_sq_req w = qvrdma_wr_send(0xc300);
        struct virtio_rdma_sge s = sge_of(&a, 0, 32);

        qvrdma_dp_post_recv(b.qp, 0xc301, (struct virtio_rdma_sge[]) {
                                sge_of(&b, 0x1000, 64) }, 1);
        qvrdma_dp_post_send(a.qp, &w, &s, 1);
    }
    t0 = g_get_monotonic_time();
    while (!(qvrdma_status(&a.d->r) & VIRTIO_CONFIG_S_NEEDS_RESET)) {
        g_assert_cmpint(g_get_monotonic_time() - t0, <, QVRDMA_DP_TIMEOUT_US);
        g_usleep(1000);
    }
    g_assert_cmpuint(qtest_readw(a.d->qts, eq->ring.vq->used + 2), ==, 0);
    qvrdma_dp_eq_free(eq);
    /* The device is broken: no counters to check, just free the sides. */
    side_free(&b);
    side_free(&a);
}

/* ---- registration ---------------------------------------------------------------- */

/* ---- backend=ibverbs only ----------------------------------------------- */

/* QUERY_PORT's state, polled until it is @want or 10 s have passed. */
static uint32_t wait_port_state(QVrdmaDev *d, uint32_t want)
{
    gint64 end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    struct virtio_rdma_port_attr attr;

    for (;;) {
        g_assert_cmpstr(qvrdma_status_name(qvrdma_query_port(&d->r, 1, &attr)),
                        ==, "OK");
        if (attr.state == want || g_get_monotonic_time() > end) {
            return attr.state;
        }
        g_usleep(20 * 1000);
    }
}

/*
 * The host port's events become QUERY_PORT's state: its netdev
 * (QVRDMA_IBDEV_NETDEV) is taken down and brought up again.  Root, and it
 * disturbs everything on that link: the lab runs it alone, last.
 */
static void test_ib_port_events(void)
{
    const char *nd = g_getenv("QVRDMA_IBDEV_NETDEV");
    g_autofree char *down = g_strdup_printf("ip link set %s down", nd);
    g_autofree char *up = g_strdup_printf("ip link set %s up", nd);
    QVrdmaDev *d = qvrdma_dev_boot_features("user,id=n0", MAC_A, RDMA_OPTS,
                                            dev_features());

    g_assert_cmpuint(wait_port_state(d, VIRTIO_RDMA_PORT_ACTIVE), ==,
                     VIRTIO_RDMA_PORT_ACTIVE);
    g_assert_cmpint(system(down), ==, 0);
    g_assert_cmpuint(wait_port_state(d, VIRTIO_RDMA_PORT_DOWN), ==,
                     VIRTIO_RDMA_PORT_DOWN);
    g_assert_cmpint(system(up), ==, 0);
    g_assert_cmpuint(wait_port_state(d, VIRTIO_RDMA_PORT_ACTIVE), ==,
                     VIRTIO_RDMA_PORT_ACTIVE);
    qvrdma_dev_quit(d);
}

/* ---- blocking host verbs off the main loop ----------------------------------------- */

typedef struct QmpProbe {
    QVrdmaDev *d;
    gint64 us;                  /* how long query-status took */
} QmpProbe;

static void qmp_probe(void *opaque)
{
    QmpProbe *q = opaque;
    gint64 t0;

    g_usleep(50 * 1000); /* the command is with the device by now */
    t0 = g_get_monotonic_time();
    qobject_unref(qtest_qmp(q->d->qts, "{'execute': 'query-status'}"));
    q->us = g_get_monotonic_time() - t0;
}

/*
 * MODIFY_QP to RTR towards an address nobody answers ARP for
 * (QVRDMA_UNREACHABLE_IPV4, on the host device's subnet): the host's
 * modify_qp resolves the destination's MAC and waits for it.  While it
 * waits, QEMU's main loop must go on: a QMP command sent after the
 * MODIFY_QP is answered at once, long before the MODIFY_QP is.
 * Measured: both durations, and the status the host gave.
 */
static void test_ib_rtr_unresolved(void)
{
    const char *ip = g_getenv("QVRDMA_UNREACHABLE_IPV4");
    QVrdmaDev *d = qvrdma_dev_boot_features("user,id=n0", MAC_A, RDMA_OPTS,
                                            dev_features());
    struct virtio_rdma_cmd_modify_qp req = { 0 };
    uint8_t gid[16], dgid[16], a4[4], out[1 + sizeof(req)], in[1];
    size_t out_split[2] = { 1, sizeof(req) };
    QmpProbe probe = { .d = d };
    QVrdmaFrame f = {
        .out = out, .out_len = sizeof(out), .out_split = out_split,
        .n_out_split = 2, .in_len = 1,
        .timeout_us = 60 * G_USEC_PER_SEC,
        .after_kick = qmp_probe, .after_kick_opaque = &probe,
    };
    struct virtio_rdma_qp_attr attr;
    uint32_t pdn, mask;
    QVrdmaCq *cq;
    QVrdmaQp *qp;
    gint64 t0, cmd_us;

    g_assert_nonnull(ip);
    g_assert_cmpint(inet_pton(AF_INET, ip, a4), ==, 1);
    qvrdma_gid_ipv4(dgid, a4[0], a4[1], a4[2], a4[3]);
    qvrdma_dp_loopback_gid(gid);
    qvrdma_dp_add_gid(d, 0, gid);
    g_assert_cmpstr(qvrdma_status_name(qvrdma_create_pd(&d->r, &pdn)), ==,
                    "OK");
    cq = qvrdma_dp_cq_create(d, 16);
    qp = qvrdma_dp_qp_create(d, pdn, VIRTIO_RDMA_QPT_RC, cq, cq, 4,
                             VIRTIO_RDMA_SIGNAL_ALL_WR);
    qvrdma_rc_attr(VIRTIO_RDMA_QPS_INIT, 0x123, 0, dgid, &attr, &mask);
    attr.qp_access_flags = VIRTIO_RDMA_ACCESS_LOCAL_WRITE;
    g_assert_cmpstr(qvrdma_status_name(qvrdma_modify_qp(&d->r, qp->qpn, mask,
                                                        &attr)), ==, "OK");
    qvrdma_rc_attr(VIRTIO_RDMA_QPS_RTR, 0x123, 0, dgid, &attr, &mask);
    attr.path_mtu = VIRTIO_RDMA_MTU_1024;
    attr.max_dest_rd_atomic = 4;
    attr.min_rnr_timer = 1;

    req.qpn = cpu_to_le32(qp->qpn);
    req.attr_mask = cpu_to_le32(mask);
    req.attrs = attr;
    out[0] = VIRTIO_RDMA_CMD_MODIFY_QP;
    memcpy(out + 1, &req, sizeof(req));
    t0 = g_get_monotonic_time();
    g_assert_true(qvrdma_submit(&d->r, &f, in, NULL));
    cmd_us = g_get_monotonic_time() - t0;
    g_test_message("IBV-RTR-UNRESOLVED modify_ms=%" PRId64 " qmp_ms=%" PRId64
                   " status=%s", cmd_us / 1000, probe.us / 1000,
                   qvrdma_status_name(in[0]));
    printf("IBV-RTR-UNRESOLVED modify_ms=%" PRId64 " qmp_ms=%" PRId64
           " status=%s\n", cmd_us / 1000, probe.us / 1000,
           qvrdma_status_name(in[0]));
    /* The host waited for the address; QEMU's main loop did not. */
    g_assert_cmpint(cmd_us, >=, 500 * 1000);
    g_assert_cmpint(probe.us, <, 250 * 1000);
    /* The device still works: the next command is answered. */
    g_assert_cmpuint(qvrdma_dp_qp_state(d, qp), <=, VIRTIO_RDMA_QPS_RTR);
    qvrdma_dp_qp_free(qp);
    qvrdma_dp_cq_free(cq);
    qvrdma_dev_quit(d);
}

/*
 * A UD send towards an address nobody answers ARP for
 * (QVRDMA_UNREACHABLE_IPV4): the host makes its address handle, which
 * resolves the destination's MAC, on a worker thread (about a second on
 * rxe).  Meanwhile the device goes on -- QMP answers, and another QP's UD
 * send completes, receive included, before it -- while the send behind it
 * on its own QP waits, in order: the handle fails, so the first send
 * completes with LOC_QP_OP_ERR (the QP to ERR, as for any send it cannot
 * execute) and the second is flushed.  With the handle made in place the
 * engine stopped for that second and the failed send completed first.
 */
/* QVRDMA_UNREACHABLE_IPV4's GID: an address of the host's subnet nobody has. */
static void unreachable_gid(uint8_t dgid[16])
{
    const char *ip = g_getenv("QVRDMA_UNREACHABLE_IPV4");
    uint8_t a4[4];

    g_assert_nonnull(ip);
    g_assert_cmpint(inet_pton(AF_INET, ip, a4), ==, 1);
    qvrdma_gid_ipv4(dgid, a4[0], a4[1], a4[2], a4[3]);
}

/*
 * Two loopback sides with a UD QP each (A's at @a_depth work requests, 0:
 * the default), A's next to send towards QVRDMA_UNREACHABLE_IPV4: @dgid.
 */
static void unreachable_setup(Side *a, Side *b, uint32_t a_depth,
                              uint8_t dgid[16])
{
    unreachable_gid(dgid);
    loopback_setup(a, b);
    if (a_depth) {
        a->ud = qvrdma_dp_qp_create_wr(a->d, a->pdn, VIRTIO_RDMA_QPT_UD,
                                       a->cq, a->cq, 1,
                                       VIRTIO_RDMA_SIGNAL_ALL_WR, a_depth);
        qvrdma_dp_ud_ready(a->d, a->ud, QKEY, 0x777);
    } else {
        side_add_ud(a, 0x777);
    }
    side_add_ud(b, 0x888);
}

/*
 * After a reset or unplug the device has none of the sides' objects: only
 * the test's own memory is freed, then QEMU quits (normally, or it fails).
 */
static void sides_forget(Side *a, Side *b)
{
    qvrdma_dp_qp_free(a->ud);
    qvrdma_dp_qp_free(b->ud);
    qvrdma_dp_qp_free(b->qp);
    qvrdma_dp_qp_free(a->qp);
    qvrdma_dp_cq_free(b->cq);
    qvrdma_dp_cq_free(a->cq);
    g_free(a->shadow);
    g_free(b->shadow);
    qvrdma_dev_quit(a->d);
}

static void test_ib_ud_unresolved(void)
{
    const char *what = "UD SEND towards an unresolved address";
    uint8_t dgid[16];
    struct virtio_rdma_sge src;
    struct virtio_rdma_sq_req wr;
    QmpProbe probe = { 0 };
    Expect e = {
        .wr_id = 0x9000, .status = VIRTIO_RDMA_WC_LOC_QP_OP_ERR,
        .opcode = VIRTIO_RDMA_WC_SEND, .byte_len = ANY, .src_qp = ANY,
        .wc_flags = ANY,
    };
    gint64 t0, other_us, fail_us;
    Side a, b;

    unreachable_setup(&a, &b, 0, dgid);

    src = sge_of(&a, 0x200, 64);
    wr = ud_wr(&a, &b, dgid, 0x9000);
    t0 = g_get_monotonic_time();
    qvrdma_dp_post_send(a.ud, &wr, &src, 1);
    /* Behind it, on the same QP: to B, whose address resolves. */
    wr.wr_id = 0x9010;
    memcpy(wr.wr.ud.av.dgid, b.gid, 16);
    qvrdma_dp_post_send(a.ud, &wr, &src, 1);

    probe.d = a.d;
    qmp_probe(&probe);
    /* B's QP to A's: sent, received, while A's first send waits. */
    ud_send(&b, &a, 0, b.gid, a.gid, 100, 0x9100);
    other_us = g_get_monotonic_time() - t0;

    e.qp_num = a.ud->wire_qpn;
    expect_cqe(&a, what, &e);
    fail_us = g_get_monotonic_time() - t0;
    e.wr_id = 0x9010;
    e.status = VIRTIO_RDMA_WC_WR_FLUSH_ERR;
    expect_cqe(&a, "the UD SEND behind it", &e);
    expect_quiet(&a, what);
    g_test_message("IBV-UD-UNRESOLVED failed_ms=%" PRId64 " other_qp_ms=%"
                   PRId64 " qmp_ms=%" PRId64, fail_us / 1000,
                   other_us / 1000, probe.us / 1000);
    printf("IBV-UD-UNRESOLVED failed_ms=%" PRId64 " other_qp_ms=%" PRId64
           " qmp_ms=%" PRId64 "\n", fail_us / 1000, other_us / 1000,
           probe.us / 1000);
    teardown(&a, &b);
}

/* ---- the GSI QP through rdmacm-mux ------------------------------------------------ */

/* query-virtio-rdma's ibverbs.@key, or its mad-link's with @link. */
static uint64_t ib_info(QVrdmaDev *d, bool link, const char *key)
{
    QDict *rsp;
    QDict *ib = qdict_get_qdict(qvrdma_dp_query(d, &rsp), "ibverbs");
    uint64_t v;

    g_assert_nonnull(ib);
    if (link) {
        ib = qdict_get_qdict(ib, "mad-link");
        g_assert_nonnull(ib);
    }
    g_assert_true(qdict_haskey(ib, key));
    v = qobject_type(qdict_get(ib, key)) == QTYPE_QBOOL
            ? qdict_get_bool(ib, key) : qdict_get_int(ib, key);
    qobject_unref(rsp);
    return v;
}

/* Until the mux accepted @d (@connects times in all) and routes its GID. */
static void wait_mad_link(QVrdmaDev *d, uint64_t connects)
{
    if (!qvrdma_dp_wait_mad_link(d, connects, 1, 20)) {
        g_error("MAD link: connects %" PRIu64 " connected %" PRIu64
                " gids-claimed %" PRIu64 " gids-refused %" PRIu64
                " after 20 s", ib_info(d, true, "connects"),
                ib_info(d, true, "connected"),
                ib_info(d, true, "gids-claimed"),
                ib_info(d, true, "gids-refused"));
    }
    g_assert_cmpuint(ib_info(d, true, "gids-claimed"), ==, 1);
}

/*
 * A CM MAD (a REQ's header, random body) from @a's GSI QP to QP1 at @b's
 * GID: through the host's kernel MAD layer and the mux, which routes it by
 * the GID it arrived on, into @b's GSI QP with the GRH area a RoCEv2 QP1
 * receive has.  The kernel sets the high 32 bits of a request's
 * transaction ID (its agent's); every other byte arrives as sent.
 */
static void gsi_mad(Side *a, QVrdmaQp *qa, Side *b, QVrdmaQp *qb,
                    uint64_t wr_id)
{
    g_autofree char *what = g_strdup_printf("%s->%s CM MAD through "
                                            "rdmacm-mux", a->name, b->name);
    const uint32_t roff = 0x2000;
    struct virtio_rdma_sge src = sge_of(a, 0x0400, 256);
    struct virtio_rdma_sge dst = sge_of(b, roff, 40 + 256);
    struct virtio_rdma_sq_req wr = qvrdma_wr_send(wr_id);
    uint8_t mad[256], got[40 + 256];
    const uint8_t *ip = got + 20;
    static const uint8_t zero[20];
    Expect e = {
        .wr_id = wr_id + 1, .status = VIRTIO_RDMA_WC_SUCCESS,
        .opcode = VIRTIO_RDMA_WC_RECV, .byte_len = 40 + 256,
        .qp_num = 1, .src_qp = 1,
        .wc_flags = VIRTIO_RDMA_WC_GRH, .wc_flags_mask = ~0u,
    };
    int i;

    for (i = 0; i < 256; i++) {
        mad[i] = g_test_rand_int_range(0, 256);
    }
    /* base version 1, class CM, class version 2, method Send, attr REQ */
    mad[0] = 1; mad[1] = 0x07; mad[2] = 2; mad[3] = 0x03;
    mad[4] = mad[5] = 0;                 /* status */
    mad[16] = 0x00; mad[17] = 0x10;      /* attribute ID: REQ */
    qtest_bufwrite(a->d->qts, side_gpa(a, 0x400), mad, 256);
    memcpy(a->shadow + 0x400, mad, 256);

    qvrdma_dp_post_recv(qb, wr_id + 1, &dst, 1);
    qvrdma_dp_wait_ring_idle(&qb->rq);
    wr.wr.ud.remote_qpn = 1;
    wr.wr.ud.remote_qkey = 0x80010000;
    wr.wr.ud.av.port = 1;
    wr.wr.ud.av.pdn = a->pdn;
    memcpy(wr.wr.ud.av.dgid, b->gid, 16);
    wr.wr.ud.av.gid_index = 0;
    wr.wr.ud.av.hop_limit = 64;
    qvrdma_dp_post_send(qa, &wr, &src, 1);
    expect_sq_ok(a, qa, what, wr_id, VIRTIO_RDMA_WC_SEND);
    expect_cqe(b, what, &e);

    qtest_bufread(b->d->qts, side_gpa(b, roff), got, sizeof(got));
    g_assert_true(!memcmp(got, zero, 20));
    g_assert_cmphex(ip[0], ==, 0x45);
    g_assert_cmpuint((ip[2] << 8) | ip[3], ==, 20 + 8 + 12 + 8 + 256 + 4);
    g_assert_cmpuint(ip[9], ==, 17);
    g_assert_cmphex(qvrdma_ip_checksum(ip, 20), ==, 0);
    g_assert_true(!memcmp(ip + 12, a->gid + 12, 4));
    g_assert_true(!memcmp(ip + 16, b->gid + 12, 4));
    g_assert_true(!memcmp(got + 40, mad, 8));
    g_assert_true(!memcmp(got + 40 + 12, mad + 12, 256 - 12));
    memcpy(b->shadow + roff, got, sizeof(got));
    side_check_mem(b, what);
}

/*
 * The GSI QP of two devices on one host device, each with its own address
 * of the host's netdev (QVRDMA_GID_IPV4, QVRDMA_GID_IPV4_B), both served by
 * the rdmacm-mux at QVRDMA_MAD_SOCKET: CM MADs both ways; then the mux is
 * restarted (QVRDMA_MAD_RESTART, a shell command) and both devices come
 * back to it by themselves (reconnect, HELLO, claims) and MADs pass again.
 */
static void test_ib_gsi_mux(void)
{
    const char *ip_b = g_getenv("QVRDMA_GID_IPV4_B");
    const char *restart = g_getenv("QVRDMA_MAD_RESTART");
    g_autofree char *na = NULL, *nb = NULL;
    uint8_t b4[4];
    QVrdmaQp *ga, *gb;
    Side a, b;
    int pa, pb;

    g_assert_nonnull(ip_b);
    g_assert_cmpint(inet_pton(AF_INET, ip_b, b4), ==, 1);
    qvrdma_free_udp_ports(&pa, &pb);
    na = qvrdma_dgram_netdev(pa, pb);
    nb = qvrdma_dgram_netdev(pb, pa);
    side_init(&a, "A", qvrdma_dev_boot_features(na, MAC_A, RDMA_OPTS,
                                                 dev_features()),
              true, VA_A, 0x100);
    side_init(&b, "B", qvrdma_dev_boot_features(nb, MAC_B, RDMA_OPTS,
                                                 dev_features()),
              true, VA_B, 0x200);
    qvrdma_dp_loopback_gid(a.gid);
    qvrdma_gid_ipv4(b.gid, b4[0], b4[1], b4[2], b4[3]);
    qvrdma_dp_add_gid(a.d, 0, a.gid);
    qvrdma_dp_add_gid(b.d, 0, b.gid);
    wait_mad_link(a.d, 1);
    wait_mad_link(b.d, 1);

    ga = qvrdma_dp_qp_create(a.d, a.pdn, VIRTIO_RDMA_QPT_GSI, a.cq, a.cq, 4,
                             VIRTIO_RDMA_SIGNAL_ALL_WR);
    gb = qvrdma_dp_qp_create(b.d, b.pdn, VIRTIO_RDMA_QPT_GSI, b.cq, b.cq, 4,
                             VIRTIO_RDMA_SIGNAL_ALL_WR);
    g_assert_cmpuint(ga->wire_qpn, ==, 1);
    qvrdma_dp_ud_ready(a.d, ga, 0x80010000, 0);
    qvrdma_dp_ud_ready(b.d, gb, 0x80010000, 0);
    gsi_mad(&a, ga, &b, gb, 0x9000);
    gsi_mad(&b, gb, &a, ga, 0x9010);
    g_assert_cmpuint(ib_info(a.d, false, "mads-sent"), ==, 1);
    g_assert_cmpuint(ib_info(a.d, false, "mads-received"), ==, 1);
    g_assert_cmpuint(ib_info(b.d, false, "mads-dropped"), ==, 0);

    if (restart) {
        g_assert_cmpint(system(restart), ==, 0);
        wait_mad_link(a.d, 2);
        wait_mad_link(b.d, 2);
        gsi_mad(&a, ga, &b, gb, 0x9020);
        gsi_mad(&b, gb, &a, ga, 0x9030);
    }
    expect_quiet(&a, "GSI MADs");
    expect_quiet(&b, "GSI MADs");
    qvrdma_dp_qp_free(ga);
    qvrdma_dp_qp_free(gb);
    side_free(&b);
    side_free(&a);
}

/*
 * Issue 25 item 5, tenants on one host device: two addresses of the host's
 * netdev (QVRDMA_GID_IPV4 and QVRDMA_GID_IPV4_B), device A allowed the
 * first (allowed-gids), B the second.  Neither may put the other's address
 * in its GID table (EPERM, so it cannot send from it either); each adds its
 * own and they talk RC with them.  A device without allowed-gids may add
 * neither (both are in the host's GID table: the host's own or another
 * tenant's), only an address the host does not have.
 * Before the fix: no allowed-gids; every ADD_GID was taken.
 */
static QVrdmaDev *tenant_boot(const char *netdev, const char *mac,
                              const char *allowed)
{
    QVrdmaBoot b = {
        .netdev = netdev, .mac = mac, .rdma_opts = RDMA_OPTS,
        .features = dev_features(), .allowed_gids = allowed,
    };

    return qvrdma_dev_boot_with(&b);
}

static void test_ib_tenants(void)
{
    const char *ip_a = g_getenv("QVRDMA_GID_IPV4");
    const char *ip_b = g_getenv("QVRDMA_GID_IPV4_B");
    g_autofree char *na = NULL, *nb = NULL;
    uint8_t a4[4], b4[4], other[16];
    QVrdmaDev *dc;
    Side a, b;
    int pa, pb;

    g_assert_nonnull(ip_a);
    g_assert_nonnull(ip_b);
    g_assert_cmpint(inet_pton(AF_INET, ip_a, a4), ==, 1);
    g_assert_cmpint(inet_pton(AF_INET, ip_b, b4), ==, 1);
    qvrdma_free_udp_ports(&pa, &pb);
    na = qvrdma_dgram_netdev(pa, pb);
    nb = qvrdma_dgram_netdev(pb, pa);
    side_init(&a, "A", tenant_boot(na, MAC_A, ip_a), true, VA_A, 0x100);
    side_init(&b, "B", tenant_boot(nb, MAC_B, ip_b), true, VA_B, 0x200);
    qvrdma_gid_ipv4(a.gid, a4[0], a4[1], a4[2], a4[3]);
    qvrdma_gid_ipv4(b.gid, b4[0], b4[1], b4[2], b4[3]);

    g_assert_cmpstr(qvrdma_status_name(qvrdma_add_gid(&a.d->r, b.gid,
                        VIRTIO_RDMA_GID_TYPE_ROCE_UDP_ENCAP, 0, 1)), ==,
                    "EPERM");
    g_assert_cmpstr(qvrdma_status_name(qvrdma_add_gid(&b.d->r, a.gid,
                        VIRTIO_RDMA_GID_TYPE_ROCE_UDP_ENCAP, 0, 1)), ==,
                    "EPERM");
    qvrdma_dp_add_gid(a.d, 0, a.gid);
    qvrdma_dp_add_gid(b.d, 0, b.gid);
    rc_connect(&a, &b, 14, 7);
    op_send(&a, &b, 100, false, 0, 0x1000);
    op_send(&b, &a, 100, false, 0, 0x1010);
    expect_quiet(&a, "tenants' RC SEND");
    expect_quiet(&b, "tenants' RC SEND");
    side_free(&b);
    side_free(&a);

    /* No allowed-gids: the host's addresses are not the guest's to take. */
    dc = tenant_boot("user,id=n0", MAC_A, "");
    g_assert_cmpstr(qvrdma_status_name(qvrdma_add_gid(&dc->r, a.gid,
                        VIRTIO_RDMA_GID_TYPE_ROCE_UDP_ENCAP, 0, 1)), ==,
                    "EPERM");
    g_assert_cmpstr(qvrdma_status_name(qvrdma_add_gid(&dc->r, b.gid,
                        VIRTIO_RDMA_GID_TYPE_ROCE_UDP_ENCAP, 0, 1)), ==,
                    "EPERM");
    qvrdma_gid_ipv4(other, 192, 0, 2, 77);  /* TEST-NET-1: not on the host */
    qvrdma_dp_add_gid(dc, 0, other);
    qvrdma_dev_quit(dc);
}

/*
 * ---- tenants on the wire (the lab's ibverbs/tenant-wire/...) -----------------------
 *
 * The same isolation seen from the wire: the lab (tests/lab/test_ibverbs.py,
 * TenantWire) runs these on a guest's rxe0 while a capture of its eth0 runs,
 * with a second guest on plain rxe as the peer (QVRDMA_PEER_IPV4) and the
 * rdmacm-mux at QVRDMA_MAD_SOCKET.  They assert what the devices say; the
 * lab's host judges the capture by what they print: "TW-PHASE TEST PHASE T0
 * T1" (the phase's wall-clock bounds, the capture's clock, in seconds) and
 * "TW TEST key value..." (QPNs and figures).  QVRDMA_TW_HOOK is a command
 * they run with "stage NAME" (the lab's host has the peer send RDMA-CM
 * connects to B's address) and "mux-stats LABEL" (the mux logs its counters).
 * Each device is a VM of its own: -uuid TW_UUID_A or TW_UUID_B (QVRDMA_UUID),
 * so the mux knows B's owner when B comes back.
 */
#define TW_UUID_A   "0a79e5e1-25aa-4b1e-9d6c-6c1a8e0a7a0a"
#define TW_UUID_B   "0a79e5e1-25aa-4b1e-9d6c-6c1a8e0a7b0b"
#define TW_QPN      0xd1ce      /* a UD QPN nobody has at the peer (rxe drops) */
#define TW_MAD_OFF  0x1000      /* GSI receive buffers, 0x200 apart */

/* ::ffff:IPv4 of the address in environment variable @var. */
static void tw_gid(const char *var, uint8_t gid[16])
{
    const char *ip = g_getenv(var);
    uint8_t a[4];

    if (!ip) {
        g_error("%s is not set", var);
    }
    g_assert_cmpint(inet_pton(AF_INET, ip, a), ==, 1);
    qvrdma_gid_ipv4(gid, a[0], a[1], a[2], a[3]);
}

/* A device (a VM of its own: -uuid @uuid) allowed @allowed, on the mux. */
static QVrdmaDev *tw_boot(const char *uuid, const char *allowed)
{
    QVrdmaDev *d;

    g_setenv("QVRDMA_UUID", uuid, true);
    d = tenant_boot("user,id=n0", MAC_A, allowed);
    g_unsetenv("QVRDMA_UUID");
    return d;
}

static void tw_hook(const char *what, const char *arg)
{
    const char *hook = g_getenv("QVRDMA_TW_HOOK");
    g_autofree char *cmd = NULL;

    g_assert_nonnull(hook);
    cmd = g_strdup_printf("%s %s %s", hook, what, arg);
    g_assert_cmpint(system(cmd), ==, 0);
}

static void tw_phase(const char *test, const char *phase, gint64 t0)
{
    printf("TW-PHASE %s %s %.6f %.6f\n", test, phase, t0 / 1e6,
           g_get_real_time() / 1e6);
    fflush(stdout);
}

/*
 * A UD SEND of 64 bytes on @qp of @s from its GID @sgid_index to QPN @qpn
 * at @dgid with Q_Key @qkey.  @returns its completion's status.
 */
static uint32_t tw_ud(Side *s, QVrdmaQp *qp, uint8_t sgid_index,
                      const uint8_t dgid[16], uint32_t qpn, uint32_t qkey,
                      uint64_t wr_id)
{
    struct virtio_rdma_sge src = sge_of(s, 0x200, 64);
    struct virtio_rdma_sq_req wr = qvrdma_wr_send(wr_id);
    struct virtio_rdma_cq_req c;
    g_autofree char *got = NULL;

    wr.wr.ud.remote_qpn = qpn;
    wr.wr.ud.remote_qkey = qkey;
    wr.wr.ud.av.port = 1;
    wr.wr.ud.av.pdn = s->pdn;
    wr.wr.ud.av.gid_index = sgid_index;
    wr.wr.ud.av.hop_limit = 64;
    memcpy(wr.wr.ud.av.dgid, dgid, 16);
    qvrdma_dp_post_send(qp, &wr, &src, 1);
    qvrdma_dp_wait_cqe(s->cq, &c);
    got = qvrdma_cqe_str(&c);
    g_test_message("%s: UD SEND from GID %u to QPN %u: %s", s->name,
                   sgid_index, qpn, got);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, wr_id);
    g_assert_cmpuint(le32_to_cpu(c.qp_num), ==, qp->wire_qpn);
    return le32_to_cpu(c.status);
}

/* @n receives of a MAD (GRH area + 256 bytes) on GSI QP @qp. */
static void tw_post_mad_recvs(Side *s, QVrdmaQp *qp, unsigned n)
{
    unsigned i;

    for (i = 0; i < n; i++) {
        struct virtio_rdma_sge dst = sge_of(s, TW_MAD_OFF + i * 0x200,
                                            40 + 256);

        qvrdma_dp_post_recv(qp, 0xa000 + i, &dst, 1);
    }
    qvrdma_dp_wait_ring_idle(&qp->rq);
}

/* The completions on @s's CQ now, each in the log. */
static unsigned tw_drain(Side *s)
{
    struct virtio_rdma_cq_req c;
    unsigned n = 0;

    while (qvrdma_dp_poll_cq(s->cq, &c, 0)) {
        g_autofree char *str = qvrdma_cqe_str(&c);

        g_test_message("%s: completion %s", s->name, str);
        n++;
    }
    return n;
}

/*
 * Device A may not send with B's address: its ADD_GID of it is refused
 * (EPERM) at any index, and a send from the index it tried completes in
 * error; its own sends leave with its own address.  B sends from its own
 * first: the capture's control (a frame with B's source is seen as such).
 * The lab's host: in phase a-sends, frames from A's UD QP with A's source,
 * none with B's.
 */
static void test_ib_tenant_wire_src(void)
{
    const uint32_t err = VIRTIO_RDMA_WC_LOC_QP_OP_ERR;
    uint8_t peer[16];
    gint64 t0;
    Side a, b;
    int i;

    tw_gid("QVRDMA_PEER_IPV4", peer);
    side_init(&a, "A", tw_boot(TW_UUID_A, g_getenv("QVRDMA_GID_IPV4")), true,
              VA_A, 0x100);
    side_init(&b, "B", tw_boot(TW_UUID_B, g_getenv("QVRDMA_GID_IPV4_B")),
              true, VA_B, 0x200);
    tw_gid("QVRDMA_GID_IPV4", a.gid);
    tw_gid("QVRDMA_GID_IPV4_B", b.gid);
    for (i = 0; i < 2; i++) {
        g_assert_cmpstr(qvrdma_status_name(qvrdma_add_gid(&a.d->r, b.gid,
                            VIRTIO_RDMA_GID_TYPE_ROCE_UDP_ENCAP, i, 1)), ==,
                        "EPERM");
    }
    qvrdma_dp_add_gid(a.d, 0, a.gid);
    qvrdma_dp_add_gid(b.d, 0, b.gid);
    side_add_ud(&a, 0x100);
    side_add_ud(&b, 0x200);
    printf("TW src-address a-ud %u b-ud %u\n", a.ud->wire_qpn,
           b.ud->wire_qpn);

    t0 = g_get_real_time();
    for (i = 0; i < 4; i++) {
        g_assert_cmpuint(tw_ud(&b, b.ud, 0, peer, TW_QPN, QKEY, 0x7300 + i),
                         ==, VIRTIO_RDMA_WC_SUCCESS);
    }
    tw_phase("src-address", "b-own", t0);

    t0 = g_get_real_time();
    for (i = 0; i < 8; i++) {
        g_assert_cmpuint(tw_ud(&a, a.ud, 0, peer, TW_QPN, QKEY, 0x7310 + i),
                         ==, VIRTIO_RDMA_WC_SUCCESS);
    }
    /* GID index 1, where B's address was refused: nothing to send from. */
    g_assert_cmpuint(tw_ud(&a, a.ud, 1, peer, TW_QPN, QKEY, 0x7320), ==, err);
    g_assert_cmpuint(qvrdma_dp_qp_state(a.d, a.ud), ==, VIRTIO_RDMA_QPS_ERR);
    g_usleep(300 * 1000);
    tw_phase("src-address", "a-sends", t0);
    printf("TW src-address a-sent 8 b-sent 4\n");
    expect_quiet(&a, "A's UD SENDs");
    expect_quiet(&b, "B's UD SENDs");
    side_free(&b);
    side_free(&a);
}

/*
 * QP1 only through the mux: A's UD QP sends to QPN 1 at the peer, with its
 * own Q_Key and with QP1's (0x80010000, a fresh QP): each completes with
 * LOC_QP_OP_ERR, while a send to another QPN before it leaves.  Then the
 * control: A's GSI QP sends a CM REQ to the peer's QP1, which the mux puts
 * on the wire.  The lab's host: in phase ud-to-qp1 no frame to QP 1, the
 * UD QPs' other sends there; in phase gsi the mux's MAD to QP 1.
 */
static void test_ib_tenant_wire_qp1(void)
{
    const uint32_t err = VIRTIO_RDMA_WC_LOC_QP_OP_ERR;
    static const uint32_t qkeys[2] = { QKEY, 0x80010000 };
    uint32_t qpn[2];
    struct virtio_rdma_sge src;
    struct virtio_rdma_sq_req wr;
    uint8_t peer[16], mad[256] = { 0 };
    QVrdmaQp *gsi;
    gint64 t0;
    Side a;
    int i;

    tw_gid("QVRDMA_PEER_IPV4", peer);
    side_init(&a, "A", tw_boot(TW_UUID_A, g_getenv("QVRDMA_GID_IPV4")), true,
              VA_A, 0x100);
    tw_gid("QVRDMA_GID_IPV4", a.gid);
    qvrdma_dp_add_gid(a.d, 0, a.gid);
    wait_mad_link(a.d, 1);

    t0 = g_get_real_time();
    for (i = 0; i < 2; i++) {
        if (i) {
            qvrdma_dp_qp_free(a.ud);
        }
        side_add_ud(&a, 0x100 + i);
        qpn[i] = a.ud->wire_qpn;
        g_assert_cmpuint(tw_ud(&a, a.ud, 0, peer, TW_QPN, QKEY, 0x7400 + i),
                         ==, VIRTIO_RDMA_WC_SUCCESS);
        g_assert_cmpuint(tw_ud(&a, a.ud, 0, peer, 1, qkeys[i], 0x7410 + i),
                         ==, err);
        g_assert_cmpuint(qvrdma_dp_qp_state(a.d, a.ud), ==,
                         VIRTIO_RDMA_QPS_ERR);
    }
    g_usleep(300 * 1000);
    tw_phase("qp1", "ud-to-qp1", t0);
    printf("TW qp1 ud %u ud %u\n", qpn[0], qpn[1]);

    /* A CM REQ's header, service ID 0: the peer's CM rejects it. */
    mad[0] = 1; mad[1] = 0x07; mad[2] = 2; mad[3] = 0x03;
    mad[8] = 0x7a; mad[15] = 0x01;           /* transaction ID */
    mad[16] = 0x00; mad[17] = 0x10;          /* attribute ID: REQ */
    mad[24] = 0x7a; mad[27] = 0x01;          /* local communication ID */
    qtest_bufwrite(a.d->qts, side_gpa(&a, 0x400), mad, sizeof(mad));
    memcpy(a.shadow + 0x400, mad, sizeof(mad));
    gsi = qvrdma_dp_qp_create(a.d, a.pdn, VIRTIO_RDMA_QPT_GSI, a.cq, a.cq, 4,
                              VIRTIO_RDMA_SIGNAL_ALL_WR);
    qvrdma_dp_ud_ready(a.d, gsi, 0x80010000, 0);
    t0 = g_get_real_time();
    src = sge_of(&a, 0x400, 256);
    wr = qvrdma_wr_send(0x7420);
    wr.wr.ud.remote_qpn = 1;
    wr.wr.ud.remote_qkey = 0x80010000;
    wr.wr.ud.av.port = 1;
    wr.wr.ud.av.pdn = a.pdn;
    wr.wr.ud.av.hop_limit = 64;
    memcpy(wr.wr.ud.av.dgid, peer, 16);
    qvrdma_dp_post_send(gsi, &wr, &src, 1);
    expect_sq_ok(&a, gsi, "A's CM REQ to the peer's QP1", 0x7420,
                 VIRTIO_RDMA_WC_SEND);
    g_assert_cmpuint(ib_info(a.d, false, "mads-sent"), ==, 1);
    g_usleep(500 * 1000);                   /* the mux's send, the reply */
    tw_phase("qp1", "gsi", t0);
    tw_drain(&a);                           /* the peer's REJ, if any */
    side_check_mem(&a, "UD SENDs to QPN 1");
    qvrdma_dp_qp_free(gsi);
    side_free(&a);
}

/*
 * B's CM traffic after B's reboot (issue 25 item 6 on the wire): B's device
 * claims B's address at the mux, and its QEMU exits (the claim released,
 * reserved for B's owner for the mux's --claim-grace).  A, allowed B's
 * address by mistake, adds it: the mux refuses A's claim (RESERVED; A may
 * not send from it either).  While the peer sends RDMA-CM connects to B's
 * address, A's GSI QP receives none.  Then B comes back as the same VM and
 * its claim is granted, and the peer's next connects reach B's GSI QP (the
 * control: the path delivers).  Figures first, assertions after them, so
 * that a failing run still says what A received.
 */
static void test_ib_tenant_wire_cm(void)
{
    const char *ip_a = g_getenv("QVRDMA_GID_IPV4");
    const char *ip_b = g_getenv("QVRDMA_GID_IPV4_B");
    g_autofree char *both = g_strdup_printf("%s;%s", ip_a, ip_b);
    uint64_t claimed = 0, refused = 0, a_mads, a_mads2, b_mads;
    unsigned a_cqes, a_cqes2, b_cqes;
    uint32_t a_src_b;
    uint8_t peer[16];
    QVrdmaQp *ga, *gb;
    bool b_back;
    gint64 t0;
    Side a, b;
    int i;

    tw_gid("QVRDMA_PEER_IPV4", peer);
    side_init(&b, "B", tw_boot(TW_UUID_B, ip_b), true, VA_B, 0x200);
    tw_gid("QVRDMA_GID_IPV4_B", b.gid);
    qvrdma_dp_add_gid(b.d, 0, b.gid);
    wait_mad_link(b.d, 1);
    side_free(&b);                          /* B's QEMU exits */

    side_init(&a, "A", tw_boot(TW_UUID_A, both), true, VA_A, 0x100);
    tw_gid("QVRDMA_GID_IPV4", a.gid);
    qvrdma_dp_add_gid(a.d, 0, a.gid);
    qvrdma_dp_add_gid(a.d, 1, b.gid);       /* allowed: the mux decides */
    g_assert_true(qvrdma_dp_wait_mad_link(a.d, 1, 1, 20));
    for (i = 0; i < 100 && claimed + refused < 2; i++) {
        g_usleep(100 * 1000);
        claimed = ib_info(a.d, true, "gids-claimed");
        refused = ib_info(a.d, true, "gids-refused");
    }
    ga = qvrdma_dp_qp_create(a.d, a.pdn, VIRTIO_RDMA_QPT_GSI, a.cq, a.cq, 4,
                             VIRTIO_RDMA_SIGNAL_ALL_WR);
    qvrdma_dp_ud_ready(a.d, ga, 0x80010000, 0);
    tw_post_mad_recvs(&a, ga, 8);
    side_add_ud(&a, 0x100);
    printf("TW cm-after-reboot a-ud %u\n", a.ud->wire_qpn);
    t0 = g_get_real_time();
    a_src_b = tw_ud(&a, a.ud, 1, peer, TW_QPN, QKEY, 0x7500);
    g_usleep(300 * 1000);
    tw_phase("cm-after-reboot", "a-src-b", t0);

    t0 = g_get_real_time();
    tw_hook("mux-stats", "before-a");
    tw_hook("stage", "peer-cm-a");
    g_usleep(1000 * 1000);                  /* the last MADs through the mux */
    tw_hook("mux-stats", "after-a");
    tw_phase("cm-after-reboot", "peer-cm-a", t0);
    a_mads = ib_info(a.d, false, "mads-received");
    a_cqes = tw_drain(&a);

    side_init(&b, "B", tw_boot(TW_UUID_B, ip_b), true, VA_B, 0x200);
    tw_gid("QVRDMA_GID_IPV4_B", b.gid);
    qvrdma_dp_add_gid(b.d, 0, b.gid);
    b_back = qvrdma_dp_wait_mad_link(b.d, 1, 1, 20);
    gb = qvrdma_dp_qp_create(b.d, b.pdn, VIRTIO_RDMA_QPT_GSI, b.cq, b.cq, 4,
                             VIRTIO_RDMA_SIGNAL_ALL_WR);
    qvrdma_dp_ud_ready(b.d, gb, 0x80010000, 0);
    tw_post_mad_recvs(&b, gb, 8);
    t0 = g_get_real_time();
    tw_hook("mux-stats", "before-b");
    tw_hook("stage", "peer-cm-b");
    g_usleep(1000 * 1000);
    tw_hook("mux-stats", "after-b");
    tw_phase("cm-after-reboot", "peer-cm-b", t0);
    b_mads = ib_info(b.d, false, "mads-received");
    b_cqes = tw_drain(&b);
    a_mads2 = ib_info(a.d, false, "mads-received");
    a_cqes2 = tw_drain(&a);

    printf("TW cm-after-reboot a-claimed %" PRIu64 " a-refused %" PRIu64
           " a-src-b %s a-mads-received %" PRIu64 " a-cqes %u"
           " b-claimed %d b-mads-received %" PRIu64 " b-cqes %u"
           " a-mads-received-later %" PRIu64 " a-cqes-later %u\n",
           claimed, refused, qvrdma_wc_status_name(a_src_b), a_mads, a_cqes,
           b_back, b_mads, b_cqes, a_mads2, a_cqes2);
    fflush(stdout);
    g_assert_cmpuint(claimed, ==, 1);       /* its own */
    g_assert_cmpuint(refused, ==, 1);       /* B's: RESERVED (the mux's log) */
    g_assert_cmpuint(a_src_b, ==, VIRTIO_RDMA_WC_LOC_QP_OP_ERR);
    g_assert_cmpuint(a_mads, ==, 0);
    g_assert_cmpuint(a_cqes, ==, 0);
    g_assert_true(b_back);
    g_assert_cmpuint(b_mads, >=, 1);
    g_assert_cmpuint(b_cqes, >=, 1);
    g_assert_cmpuint(a_mads2, ==, 0);
    g_assert_cmpuint(a_cqes2, ==, 0);
    qvrdma_dp_qp_free(gb);
    side_free(&b);
    qvrdma_dp_qp_free(ga);
    side_free(&a);
}

/*
 * How long REG_USER_MR of QVRDMA_REG_MB MiB (contiguous guest RAM) takes on
 * a host RDMA device: the window and the host's pinning registration.  A
 * measurement, printed; it asserts only that registration works and frees
 * what it took.  Needs QVRDMA_RAM_MB above the region.
 */
/* DEREG_MR of @mrn, the device's one MR: its time; no host MR is left. */
static gint64 dereg_only_mr(QVrdmaDev *d, uint32_t mrn)
{
    uint32_t host[4];
    gint64 t0;

    qvrdma_dp_objects(d, true, host);
    g_assert_cmpuint(host[3], ==, 1);
    t0 = g_get_monotonic_time();
    g_assert_cmpstr(qvrdma_status_name(qvrdma_dereg_mr(&d->r, mrn)), ==,
                    "OK");
    t0 = g_get_monotonic_time() - t0;
    qvrdma_dp_objects(d, true, host);
    g_assert_cmpuint(host[3], ==, 0);
    return t0;
}

static void test_ib_reg_time(void)
{
    uint32_t mb = atoi(g_getenv("QVRDMA_REG_MB"));
    uint32_t npages = mb * 256, pdn;
    uint64_t va = 0x7f0000000000ull;
    const char *ram_mb = g_getenv("QVRDMA_RAM_MB") ?: "128";
    struct virtio_rdma_rsp_mr mr;
    QVrdmaPageTable pt;
    gint64 t0, t_reg, t_dereg, t_dma, t_dma_dereg;
    QVrdmaDev *d = qvrdma_dev_boot_features("user,id=n0", MAC_A, RDMA_OPTS,
                                            dev_features());

    g_assert_cmpstr(qvrdma_status_name(qvrdma_create_pd(&d->r, &pdn)), ==,
                    "OK");
    qvrdma_pt_build(&d->r, &pt, npages, NULL);
    t0 = g_get_monotonic_time();
    g_assert_cmpstr(qvrdma_status_name(qvrdma_reg_user_mr(
                        &d->r, pdn, VIRTIO_RDMA_ACCESS_LOCAL_WRITE |
                        VIRTIO_RDMA_ACCESS_REMOTE_WRITE, va,
                        (uint64_t)npages * 4096, va, pt.l1, npages, &mr)),
                    ==, "OK");
    t_reg = g_get_monotonic_time() - t0;
    t_dereg = dereg_only_mr(d, mr.mrn);

    /* A DMA MR: all of guest RAM (QVRDMA_RAM_MB), a host MR per range. */
    t0 = g_get_monotonic_time();
    g_assert_cmpstr(qvrdma_status_name(qvrdma_get_dma_mr(
                        &d->r, pdn, VIRTIO_RDMA_ACCESS_LOCAL_WRITE, &mr)),
                    ==, "OK");
    t_dma = g_get_monotonic_time() - t0;
    t_dma_dereg = dereg_only_mr(d, mr.mrn);

    g_test_message("REG_USER_MR of %u MiB: %" PRId64 " ms (%.2f s/GiB); "
                   "DEREG_MR: %" PRId64 " ms; GET_DMA_MR over %s MiB of RAM: "
                   "%" PRId64 " ms, DEREG_MR %" PRId64 " ms",
                   mb, t_reg / 1000, t_reg / 1e6 * 1024 / mb, t_dereg / 1000,
                   ram_mb, t_dma / 1000, t_dma_dereg / 1000);
    printf("IBV-REG-TIME mb=%u reg_ms=%" PRId64 " s_per_gib=%.2f "
           "dereg_ms=%" PRId64 " dma_mr_ram_mb=%s dma_mr_ms=%" PRId64
           " dma_dereg_ms=%" PRId64 "\n", mb, t_reg / 1000,
           t_reg / 1e6 * 1024 / mb, t_dereg / 1000, ram_mb, t_dma / 1000,
           t_dma_dereg / 1000);
    qvrdma_pt_free(&d->r, &pt);
    qvrdma_dev_quit(d);
}

/* A "Vm...:" line of QEMU's /proc/PID/status, in KiB (VmPin: pinned pages). */
static uint64_t proc_status_kib(QVrdmaDev *d, const char *key)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/status",
                                            qtest_pid(d->qts));
    g_autofree char *text = NULL;
    const char *p;

    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    p = strstr(text, key);
    g_assert_nonnull(p);
    return g_ascii_strtoull(p + strlen(key), NULL, 10);
}

/*
 * Issue 25, item 3: GET_DMA_MR on backend=ibverbs registers all of guest
 * RAM with the host, which pins it -- about a second per few GiB, and host
 * kernel memory per page.  DMA_MR_KICK of them on one PD in one kick (a
 * guest with several vCPUs can send that many): the PD's RAM is registered
 * once, on the host's worker thread, and shared, while QEMU's main loop
 * answers; the pinned pages count in max-mapped-pages (2.5 x RAM here), so
 * a third PD's DMA MR is refused with ENOMEM until the first PD's are
 * deregistered.  Measured: the longest main-loop stall, the whole kick's
 * time, host MRs and pinned memory (VmPin).  Before: DMA_MR_KICK
 * registrations of all of RAM in one main-loop turn, charged to nothing.
 */
#define DMA_MR_KICK 64

static uint32_t dma_mr_ok(QVrdmaDev *d, uint32_t pdn, const char *want)
{
    struct virtio_rdma_rsp_mr mr = { 0 };

    g_assert_cmpstr(qvrdma_status_name(qvrdma_get_dma_mr(
                        &d->r, pdn, VIRTIO_RDMA_ACCESS_LOCAL_WRITE, &mr)),
                    ==, want);
    return le32_to_cpu(mr.mrn);
}

static void test_ib_dma_mr_kick(void)
{
    const uint64_t ram_pages = atoi(g_getenv("QVRDMA_RAM_MB") ?: "128") * 256;
    g_autofree char *opts = g_strdup_printf(
        "max-pd=8,max-mr=%u,max-mapped-pages=%" PRIu64,
        DMA_MR_KICK + 8, ram_pages * 5 / 2);
    QVrdmaDev *d = qvrdma_dev_boot_features("user,id=n0", MAC_A, opts,
                                            dev_features());
    struct virtio_rdma_cmd_get_dma_mr req = {
        .access_flags = cpu_to_le32(VIRTIO_RDMA_ACCESS_LOCAL_WRITE),
    };
    const size_t rsp_len = sizeof(struct virtio_rdma_rsp_mr);
    uint64_t pin0, pin1, dma_pages;
    uint32_t pd[3], mr2, mr3;
    unsigned i, ok = 0;
    QVrdmaBatch b;

    for (i = 0; i < 3; i++) {
        g_assert_cmpstr(qvrdma_status_name(qvrdma_create_pd(&d->r, &pd[i])),
                        ==, "OK");
    }
    req.pdn = cpu_to_le32(pd[0]);
    pin0 = proc_status_kib(d, "VmPin:");
    b = qvrdma_cmd_batch(&d->r, VIRTIO_RDMA_CMD_GET_DMA_MR, &req, sizeof(req),
                         rsp_len, DMA_MR_KICK, 240);
    pin1 = proc_status_kib(d, "VmPin:");
    for (i = 0; i < DMA_MR_KICK; i++) {
        ok += b.status[i] == VIRTIO_RDMA_OK;
    }
    dma_pages = ib_info(d, false, "dma-pages");
    printf("IBV-DMA-MR-KICK n=%u ok=%u ram_mib=%" PRIu64 " max_stall_ms=%.1f"
           " total_ms=%.1f dma_pages=%" PRIu64 " pinned_mib=%" PRIu64 "\n",
           DMA_MR_KICK, ok, ram_pages / 256, b.max_stall_us / 1e3,
           b.total_us / 1e3, dma_pages, (pin1 - MIN(pin0, pin1)) / 1024);
    g_assert_cmpuint(ok, ==, DMA_MR_KICK);
    /* One registration of RAM (all but a PC's holes), not 64. */
    g_assert_cmpuint(dma_pages, <=, ram_pages);
    g_assert_cmpuint(dma_pages, >=, ram_pages * 9 / 10);
    g_assert_cmpuint(pin1 - MIN(pin0, pin1), <=, ram_pages * 4 + 16 * 1024);
    /* The main loop answered while the host pinned. */
    g_assert_cmpint(b.max_stall_us, <, 250 * 1000);

    /* Charged: a second PD's registration fits 2.5 x RAM, a third not. */
    mr2 = dma_mr_ok(d, pd[1], "OK");
    dma_mr_ok(d, pd[2], "ENOMEM");
    for (i = 0; i < DMA_MR_KICK; i++) {
        const struct virtio_rdma_rsp_mr *m =
            (const void *)(b.rsp + i * rsp_len);

        g_assert_cmpstr(qvrdma_status_name(qvrdma_dereg_mr(
                            &d->r, le32_to_cpu(m->mrn))), ==, "OK");
        /* The registration lasts as long as one of its MRs. */
        g_assert_cmpuint(ib_info(d, false, "dma-pages"), ==,
                         (i + 1 < DMA_MR_KICK ? 2 : 1) * dma_pages);
    }
    mr3 = dma_mr_ok(d, pd[2], "OK");
    g_assert_cmpstr(qvrdma_status_name(qvrdma_dereg_mr(&d->r, mr2)), ==,
                    "OK");
    g_assert_cmpstr(qvrdma_status_name(qvrdma_dereg_mr(&d->r, mr3)), ==,
                    "OK");
    g_assert_cmpuint(ib_info(d, false, "dma-pages"), ==, 0);
    g_assert_cmpuint(ib_info(d, false, "mrs"), ==, 0);
    g_assert_cmpuint(proc_status_kib(d, "VmPin:"), <=, pin0 + 1024);
    qvrdma_batch_free(&b);
    qvrdma_dev_quit(d);
}

/*
 * GET_DMA_MR on PD @pdn sent and not answered within 1 ms: the host is
 * pinning guest RAM (the command stays with the device).
 */
static void dma_mr_pinning(QVrdmaDev *d, uint32_t pdn)
{
    struct virtio_rdma_cmd_get_dma_mr req = {
        .pdn = cpu_to_le32(pdn),
        .access_flags = cpu_to_le32(VIRTIO_RDMA_ACCESS_LOCAL_WRITE),
    };
    uint8_t out[1 + sizeof(req)], in[1 + sizeof(struct virtio_rdma_rsp_mr)];
    QVrdmaFrame f = {
        .out = out, .out_len = sizeof(out), .in_len = sizeof(in),
        .timeout_us = 1000,
    };

    out[0] = VIRTIO_RDMA_CMD_GET_DMA_MR;
    memcpy(out + 1, &req, sizeof(req));
    g_assert_false(qvrdma_submit(&d->r, &f, in, NULL));
}

/*
 * Issue 25, items 3 and 8: a device reset while the host pins guest RAM for
 * a GET_DMA_MR does not wait for it: the registration is orphaned, ends on
 * its own and undoes itself (no pinned page, no host MR, no page charged
 * afterwards); the next GET_DMA_MR waits for it (one registration at a
 * time, however often a guest resets) and then works.
 */
static void test_ib_dma_mr_reset(void)
{
    const uint64_t ram_pages = atoi(g_getenv("QVRDMA_RAM_MB") ?: "128") * 256;
    QVrdmaDev *d = qvrdma_dev_boot_features("user,id=n0", MAC_A, RDMA_OPTS,
                                            dev_features());
    uint64_t pin0 = proc_status_kib(d, "VmPin:");
    uint32_t pdn, mrn, i;
    gint64 t0, reset_us, again_us;
    QDict *rsp, *bounds;

    /* max-mapped-pages' default: 4 GiB of MRs and four registrations of RAM. */
    bounds = qdict_get_qdict(qvrdma_dp_query(d, &rsp), "bounds");
    g_assert_cmpuint(qdict_get_int(bounds, "max-mapped-pages"), ==,
                     1048576 + 4 * ram_pages);
    qobject_unref(rsp);
    g_assert_cmpstr(qvrdma_status_name(qvrdma_create_pd(&d->r, &pdn)), ==,
                    "OK");
    dma_mr_pinning(d, pdn);
    g_assert_cmpuint(ib_info(d, false, "host-jobs"), ==, 1);
    t0 = g_get_monotonic_time();
    qvrdma_reset(&d->r); /* the status write of 0: the device resets in it */
    reset_us = g_get_monotonic_time() - t0;
    qvrdma_dp_reinit(d);
    g_assert_cmpstr(qvrdma_status_name(qvrdma_create_pd(&d->r, &pdn)), ==,
                    "OK");
    t0 = g_get_monotonic_time();
    mrn = dma_mr_ok(d, pdn, "OK");
    again_us = g_get_monotonic_time() - t0;
    printf("IBV-DMA-MR-RESET ram_mib=%" PRIu64 " reset_ms=%.1f "
           "next_dma_mr_ms=%.1f\n", ram_pages / 256, reset_us / 1e3,
           again_us / 1e3);
    /* The reset did not wait for the host's pinning. */
    g_assert_cmpint(reset_us, <, 250 * 1000);
    g_assert_cmpuint(ib_info(d, false, "dma-pages"), <=, ram_pages);
    g_assert_cmpuint(ib_info(d, false, "host-jobs"), ==, 0);
    g_assert_cmpuint(ib_info(d, false, "graveyard"), ==, 0);
    g_assert_cmpuint(proc_status_kib(d, "VmPin:"), <=,
                     pin0 + ram_pages * 4 + 1024);
    g_assert_cmpstr(qvrdma_status_name(qvrdma_dereg_mr(&d->r, mrn)), ==,
                    "OK");
    g_assert_cmpuint(ib_info(d, false, "dma-pages"), ==, 0);
    for (i = 0; i < 100 && proc_status_kib(d, "VmPin:") > pin0 + 1024; i++) {
        g_usleep(10 * 1000);
    }
    g_assert_cmpuint(proc_status_kib(d, "VmPin:"), <=, pin0 + 1024);
    qvrdma_dev_quit(d);
}

/*
 * Issue 25, item 8: the device unplugged (ACPI eject) while the host pins
 * guest RAM (QVRDMA_RAM_MB) for a GET_DMA_MR and makes the address handle
 * of a UD send towards an address nobody answers (about a second): unplug
 * does not wait for them -- they keep the core and free it when the last
 * ends -- and QEMU goes on, lets go of the pinned RAM, and quits cleanly.
 * Before: unrealize waited for every such host call under the BQL.
 */
static void test_ib_unplug_jobs(void)
{
    struct virtio_rdma_sge src;
    struct virtio_rdma_sq_req wr;
    uint8_t dgid[16];
    uint64_t pin0, pin1, pin;
    gint64 t0, unplug_us, settle_us;
    Side a, b;

    unreachable_setup(&a, &b, 0, dgid);
    pin0 = proc_status_kib(a.d, "VmPin:");
    src = sge_of(&a, 0x200, 64);
    wr = ud_wr(&a, &b, dgid, 0xb000);
    qvrdma_dp_post_send(a.ud, &wr, &src, 1);
    qvrdma_dp_wait_ring_idle(&a.ud->sq);
    dma_mr_pinning(a.d, a.pdn);
    g_assert_cmpuint(ib_info(a.d, false, "host-jobs"), ==, 2);

    t0 = g_get_monotonic_time();
    qvrdma_dp_eject_slot(a.d);
    unplug_us = g_get_monotonic_time() - t0;
    pin1 = proc_status_kib(a.d, "VmPin:");
    /*
     * The orphans end on their own; the registration's pins go with it.
     * Pinning and unpinning 1 GiB in a nested TCG guest take seconds, many
     * more under load (13 s was not enough in a loaded CI run): a generous
     * deadline, the time it took printed.
     */
    for (;;) {
        pin = proc_status_kib(a.d, "VmPin:");
        settle_us = g_get_monotonic_time() - t0;
        if (pin <= pin0 + 1024 && pin1 > pin0 + 1024) {
            break;
        }
        if (pin1 <= pin0 + 1024 && settle_us >= 3 * G_USEC_PER_SEC) {
            break; /* nothing was pinned yet at the unplug: 3 s for it */
        }
        if (settle_us >= 90 * G_USEC_PER_SEC) {
            break;
        }
        g_usleep(10 * 1000);
    }
    printf("IBV-UNPLUG-JOBS unplug_ms=%.1f settled_ms=%.1f "
           "pinned_mib_at_unplug=%" PRIu64 " after=%" PRIu64 "\n",
           unplug_us / 1e3, settle_us / 1e3, (pin1 - MIN(pin0, pin1)) / 1024,
           (pin - MIN(pin0, pin)) / 1024);
    /*
     * Not waited for: the registration alone takes seconds here; within
     * 2 s as for a reset (910-994 ms were seen under load).
     */
    g_assert_cmpint(unplug_us, <, 2 * G_USEC_PER_SEC);
    g_assert_cmpuint(pin, <=, pin0 + 1024);
    /* QEMU still answers. */
    qobject_unref(qtest_qmp(a.d->qts, "{'execute': 'query-status'}"));
    sides_forget(&a, &b);
}

/*
 * Issue 25, item 8: QVRDMA_HELD (default 1024: a full queue; the device
 * takes a window of them, the rest waits in the ring) UD sends held
 * behind an address handle the host cannot make (QVRDMA_UNREACHABLE_IPV4:
 * each resolution waits about a second), then system_reset while the
 * first resolution runs: QMP answers within 2 s.  The reset does not wait
 * for the host call, which ends on its own (orphaned: host jobs and the
 * graveyard back to 0, no host object left); and a QP in ERR flushes what
 * it holds without asking the host.  Before: each held send started a
 * resolution of its own, one after the other, also once the QP was in
 * ERR, and the reset waited for all of them -- QVRDMA_HELD seconds.
 */
static void test_ib_held_reset(void)
{
    const uint32_t n = atoi(g_getenv("QVRDMA_HELD") ?: "1024");
    struct virtio_rdma_sge src;
    struct virtio_rdma_sq_req wr;
    uint8_t dgid[16];
    uint32_t objs[4], i;
    gint64 t0, reset_us, settle_us;
    QVrdmaQp *ud;
    Side a, b;

    unreachable_setup(&a, &b, n, dgid);
    ud = a.ud;
    src = sge_of(&a, 0x200, 64);
    wr = ud_wr(&a, &b, dgid, 0);
    qvrdma_dp_batch_begin(&ud->sq);
    for (i = 0; i < n; i++) {
        wr.wr_id = 0xa000 + i;
        qvrdma_dp_post_send(ud, &wr, &src, 1);
    }
    qvrdma_dp_batch_end(&ud->sq);
    /*
     * The device takes a window of the ring (64 of the 1024) and holds it
     * behind the resolution; the rest waits in the ring: neither may make
     * the reset wait.
     */
    for (i = 0; i < 500 && ib_info(a.d, false, "host-jobs") < 1; i++) {
        g_usleep(10 * 1000);
    }
    g_assert_cmpuint(ib_info(a.d, false, "host-jobs"), >=, 1);

    t0 = g_get_monotonic_time();
    qobject_unref(qtest_qmp(a.d->qts, "{'execute': 'system_reset'}"));
    qobject_unref(qtest_qmp(a.d->qts, "{'execute': 'query-status'}"));
    reset_us = g_get_monotonic_time() - t0;
    /* The orphaned resolution ends (about a second), and what it held. */
    for (i = 0; i < 1000 && (ib_info(a.d, false, "host-jobs") ||
                             ib_info(a.d, false, "graveyard")); i++) {
        g_usleep(10 * 1000);
    }
    settle_us = g_get_monotonic_time() - t0;
    qvrdma_dp_objects(a.d, true, objs);
    printf("IBV-HELD-RESET held=%u reset_ms=%" PRId64 " settled_ms=%" PRId64
           " host_left=%u/%u/%u/%u\n", n, reset_us / 1000, settle_us / 1000,
           objs[0], objs[1], objs[2], objs[3]);
    g_assert_cmpint(reset_us, <, 2 * G_USEC_PER_SEC);
    g_assert_cmpuint(ib_info(a.d, false, "host-jobs"), ==, 0);
    g_assert_cmpuint(ib_info(a.d, false, "graveyard"), ==, 0);
    for (i = 0; i < 4; i++) {
        g_assert_cmpuint(objs[i], ==, 0);
    }
    sides_forget(&a, &b);
}

/*
 * A test whose device/engine support has not landed yet carries the reason
 * in @pending and is skipped with it, unless QTEST_VRDMA_DP_ALL=1 (how it is
 * developed).  Clear it as soon as the test passes.
 */
typedef struct DpTest {
    const char *path;
    GTestDataFunc fn;
    const void *data;
    const char *pending;        /* why it cannot pass yet; NULL: enabled */
} DpTest;

static void wrap_void(const void *fn)
{
    ((void (*)(void))fn)();
}

static const DpTest dp_tests[] = {
    { "wire/connect", wrap_void, test_wire_connect, NULL },
    { "loopback/rc-send", run_loopback, rc_send, NULL },
    { "loopback/rc-write", run_loopback, rc_write, NULL },
    { "loopback/rc-write-imm", run_loopback, rc_write_imm, NULL },
    { "loopback/rc-read", run_loopback, rc_read, NULL },
    { "loopback/rc-cas", run_loopback, rc_cas, NULL },
    { "loopback/rc-faa", run_loopback, rc_faa, NULL },
    { "loopback/rc-pipeline", run_loopback, rc_pipeline, NULL },
    { "loopback/rc-unsignaled", wrap_void, test_loopback_unsignaled,
      NULL },
    { "loopback/rc-psn-wrap", wrap_void, test_loopback_psn_wrap, NULL },
    { "loopback/rc-rem-access-err", wrap_void, test_loopback_rem_access,
      NULL },
    { "loopback/rc-rem-bounds-err", wrap_void, test_loopback_rem_bounds,
      NULL },
    { "loopback/rc-loc-prot-err", wrap_void, test_loopback_loc_prot,
      NULL },
    { "loopback/rc-recv-too-small", wrap_void, test_loopback_recv_too_small,
      NULL },
    { "loopback/rc-rnr", wrap_void, test_loopback_rnr, NULL },
    { "wire/rc-send", run_wire, rc_send, NULL },
    { "wire/rc-write", run_wire, rc_write, NULL },
    { "wire/rc-write-imm", run_wire, rc_write_imm, NULL },
    { "wire/rc-read", run_wire, rc_read, NULL },
    { "wire/rc-cas", run_wire, rc_cas, NULL },
    { "wire/rc-faa", run_wire, rc_faa, NULL },
    { "wire/rc-pipeline", run_wire, rc_pipeline, NULL },
    { "wire/ud-send-ipv4", test_wire_ud, GINT_TO_POINTER(0), NULL },
    { "wire/ud-send-ipv6", test_wire_ud, GINT_TO_POINTER(1), NULL },
    { "wire/ud-qp1-refused", wrap_void, test_wire_ud_qp1, NULL },
    { "wire/not-ours-first", wrap_void, test_wire_not_ours_first, NULL },
    { "wire/peer-gone", wrap_void, test_wire_peer_gone, NULL },
    { "cq-arm/next", wrap_void, test_cq_arm_next, NULL },
    { "cq-arm/solicited", wrap_void, test_cq_arm_solicited, NULL },
    { "event-queue/cq-event", wrap_void, test_eq_cq_event, NULL },
    { "event-queue/no-buffer", wrap_void, test_eq_no_buffer, NULL },
    { "event-queue/destroyed-cq", wrap_void, test_eq_destroyed_cq, NULL },
    { "event-queue/short-buffer", wrap_void, test_eq_short_buffer, NULL },
};


/* The RC suites again, each local SGE through a DMA MR. */
static const DpTest dp_dma_tests[] = {
    { "dma-sge/loopback/rc-send", run_loopback, rc_send, NULL },
    { "dma-sge/loopback/rc-write-imm", run_loopback, rc_write_imm, NULL },
    { "dma-sge/loopback/rc-read", run_loopback, rc_read, NULL },
    { "dma-sge/loopback/rc-cas", run_loopback, rc_cas, NULL },
    { "dma-sge/loopback/rc-faa", run_loopback, rc_faa, NULL },
    { "dma-sge/wire/rc-send", run_wire, rc_send, NULL },
    { "dma-sge/wire/rc-read", run_wire, rc_read, NULL },
};

static void run_dp_dma_test(const void *opaque)
{
    const DpTest *t = opaque;

    dp_dma_sges = true;
    t->fn(t->data);
    dp_dma_sges = false;
}

static void run_dp_test(const void *opaque)
{
    const DpTest *t = opaque;

    if (t->pending && !g_getenv("QTEST_VRDMA_DP_ALL")) {
        g_test_skip(t->pending);
        return;
    }
    t->fn(t->data);
}

int main(int argc, char **argv)
{
    size_t i;

    g_test_init(&argc, &argv, NULL);
    for (i = 0; i < ARRAY_SIZE(dp_tests); i++) {
        g_autofree char *path = g_strdup_printf("/virtio-rdma-dp/%s",
                                                dp_tests[i].path);

        qtest_add_data_func(path, &dp_tests[i], run_dp_test);
    }
    for (i = 0; i < ARRAY_SIZE(dp_dma_tests); i++) {
        g_autofree char *path = g_strdup_printf("/virtio-rdma-dp/%s",
                                                dp_dma_tests[i].path);

        qtest_add_data_func(path, &dp_dma_tests[i], run_dp_dma_test);
    }
    if (qvrdma_dp_ibverbs() && g_getenv("QVRDMA_IBDEV_NETDEV")) {
        qtest_add_func("/virtio-rdma-dp/ibverbs/port-events",
                       test_ib_port_events);
    }
    if (qvrdma_dp_ibverbs() && g_getenv("QVRDMA_UNREACHABLE_IPV4")) {
        qtest_add_func("/virtio-rdma-dp/ibverbs/rtr-unresolved",
                       test_ib_rtr_unresolved);
        qtest_add_func("/virtio-rdma-dp/ibverbs/ud-unresolved",
                       test_ib_ud_unresolved);
        qtest_add_func("/virtio-rdma-dp/ibverbs/held-reset",
                       test_ib_held_reset);
        qtest_add_func("/virtio-rdma-dp/ibverbs/unplug-jobs",
                       test_ib_unplug_jobs);
    }
    if (qvrdma_dp_ibverbs()) {
        qtest_add_func("/virtio-rdma-dp/ibverbs/dma-mr-kick",
                       test_ib_dma_mr_kick);
        qtest_add_func("/virtio-rdma-dp/ibverbs/dma-mr-reset",
                       test_ib_dma_mr_reset);
    }
    if (qvrdma_dp_ibverbs() && g_getenv("QVRDMA_MAD_SOCKET")) {
        qtest_add_func("/virtio-rdma-dp/ibverbs/gsi-mux", test_ib_gsi_mux);
    }
    if (qvrdma_dp_ibverbs() && g_getenv("QVRDMA_GID_IPV4_B")) {
        qtest_add_func("/virtio-rdma-dp/ibverbs/tenants", test_ib_tenants);
    }
    if (qvrdma_dp_ibverbs() && g_getenv("QVRDMA_TW_HOOK")) {
        qtest_add_func("/virtio-rdma-dp/ibverbs/tenant-wire/src-address",
                       test_ib_tenant_wire_src);
        qtest_add_func("/virtio-rdma-dp/ibverbs/tenant-wire/qp1",
                       test_ib_tenant_wire_qp1);
        qtest_add_func("/virtio-rdma-dp/ibverbs/tenant-wire/cm-after-reboot",
                       test_ib_tenant_wire_cm);
    }
    if (qvrdma_dp_ibverbs() && g_getenv("QVRDMA_REG_MB")) {
        qtest_add_func("/virtio-rdma-dp/ibverbs/reg-time", test_ib_reg_time);
    }
    return g_test_run();
}
