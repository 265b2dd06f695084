/*
 * virtio-rdma-safety-test: regression tests for issue 10 -- no guest and no
 * peer may hang QEMU (a deadlock with the BQL held) or grow its memory
 * without bound.  One group per bug class of the issue:
 *
 *   dma/<kind>/<target>  class 1: each guest pointer kind (MR page table,
 *                        MR data page, SGE through a DMA MR, CQ buffer
 *                        written from the retransmit timer or from a
 *                        received frame, a remote peer's READ / WRITE /
 *                        atomic through a DMA MR) aimed at each region of
 *                        the device's own BAR (common config, device
 *                        config, notify), at the paired virtio-net's BAR
 *                        and at the IOAPIC;
 *   net/user, net/hub    class 2: RC and UD traffic through -netdev user
 *                        (slirp answers synchronously) and between two
 *                        devices of one QEMU on one hub;
 *   staging/flood        class 3: posts to RESET QPs in the iothread
 *                        placement, CQ never drained, RSS bounded;
 *   work/...             class 4: a full control ring of maximal
 *                        REG_USER_MRs in one kick (main-loop stall and RSS
 *                        measured and bounded), and max-mapped-pages; a
 *                        2 GiB MR through a three-level table (its stall);
 *                        (issue 25) DESTROY_QP while another vCPU refills
 *                        the QP's ring;
 *   netdev/...           class 7 (dangling pointers): netdev_del of the
 *                        paired netdev and object-del of the device's net
 *                        filter while attached;
 *   classify             class 6: one classifier -- VLAN-tagged RoCE and
 *                        IPv4 fragments counted the same with the engine in
 *                        the main loop and in an iothread;
 *   gid-churn            class 7: RDMA_GID_STATUS_CHANGED rate-limited.
 *
 * Every case runs in a subprocess with a timeout: a QEMU that deadlocks
 * makes the case fail, not the binary hang (libqtest gives each QEMU
 * PR_SET_PDEATHSIG, so it dies with the subprocess).  After each case a
 * control command and a small RC transfer must still succeed on every
 * device involved (after a reset if the device flagged NEEDS_RESET).
 *
 * Each case ends its comment with how it failed on the code before the
 * issue-10 fixes (commit 2609c95).  Measurements are printed as "# ..."
 * lines on stderr.
 *
 *   QTEST_QEMU_BINARY=./qemu-system-x86_64 ./tests/qtest/virtio-rdma-safety-test
 * QVRDMA_IOTHREAD=1 runs the devices of every case that does not choose its
 * placement itself with the engine in an iothread.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include "libqtest.h"
#include "qemu/atomic.h"
#include "qemu/bswap.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "qobject/qnum.h"
#include "standard-headers/linux/pci_regs.h"
#include "standard-headers/linux/virtio_config.h"
#include "standard-headers/linux/virtio_ring.h"
#include "libqos/libqos-pc.h"
#include "libqos/virtio-rdma.h"
#include "libqos/virtio-rdma-dp.h"
#include "libqos/virtio-rdma-ring.h"

#define MAC_A       "52:54:00:12:34:56"
#define MAC_B       "52:54:00:12:34:57"
#define RDMA_OPTS   "max-contexts=4"

/* A case that has not finished by then has hung QEMU. */
#define CASE_TIMEOUT_US     (60 * G_USEC_PER_SEC)
#define LONG_TIMEOUT_US     (240 * G_USEC_PER_SEC)

/* The GID index and address the "device keeps working" check uses. */
#define CHECK_GID_INDEX     15

#define IOAPIC_BASE         0xfec00000ull
#define COMMON_STATUS       0x14    /* device_status in the common config */

#define ACCESS_ALL \
    (VIRTIO_RDMA_ACCESS_LOCAL_WRITE | VIRTIO_RDMA_ACCESS_REMOTE_WRITE | \
     VIRTIO_RDMA_ACCESS_REMOTE_READ | VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC)

/* ---- messages and measurements ---------------------------------------------- */

/* A measurement: in the TAP log (stderr is inherited from the subprocess). */
static void G_GNUC_PRINTF(1, 2) note(const char *fmt, ...)
{
    g_autofree char *s = NULL;
    va_list ap;

    va_start(ap, fmt);
    s = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_test_message("%s", s);
    fprintf(stderr, "# %s\n", s);
}

/* QEMU's resident set in KiB. */
static uint64_t rss_kib(QTestState *qts)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/status", qtest_pid(qts));
    g_autofree char *text = NULL;
    const char *p;

    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    p = strstr(text, "VmRSS:");
    g_assert_nonnull(p);
    return g_ascii_strtoull(p + 6, NULL, 10);
}

/* ---- running a case in a subprocess ------------------------------------------- */

typedef struct Case {
    void (*fn)(const void *arg);
    const void *arg;
    gint64 timeout_us;
} Case;

static void run_case(const void *opaque)
{
    const Case *c = opaque;
    gint64 t0;

    if (g_test_subprocess()) {
        c->fn(c->arg);
        return;
    }
    t0 = g_get_monotonic_time();
    g_test_trap_subprocess(NULL, c->timeout_us,
                           G_TEST_SUBPROCESS_INHERIT_STDERR);
    /* How near the limit, for a slow or loaded machine's log. */
    note("%.1f s (limit %" PRId64 " s)",
         (g_get_monotonic_time() - t0) / 1e6, c->timeout_us / G_USEC_PER_SEC);
    /* Not g_test_trap_assert_passed(): the other cases still run. */
    if (!g_test_trap_has_passed()) {
        note("FAILED%s", g_test_trap_reached_timeout() ?
             ": timed out (QEMU hung)" : "");
        g_test_fail();
    }
}

static void add_case(const char *path, void (*fn)(const void *),
                     const void *arg, gint64 timeout_us)
{
    Case *c = g_new0(Case, 1);     /* lives as long as the test suite */

    c->fn = fn;
    c->arg = arg;
    c->timeout_us = timeout_us;
    qtest_add_data_func(path, c, run_case);
}

/* ---- devices ---------------------------------------------------------------------- */

static QVrdmaDev *boot_loopback(const char *rdma_opts)
{
    return qvrdma_dev_boot_features("user,id=n0", MAC_A, rdma_opts,
                                    QVRDMA_RING_FEATURES);
}

/* Two QEMUs whose NICs are joined by -netdev dgram over 127.0.0.1. */
static void boot_wire(QVrdmaDev **a, QVrdmaDev **b)
{
    g_autofree char *na = NULL, *nb = NULL;
    int pa, pb;

    qvrdma_free_udp_ports(&pa, &pb);
    na = qvrdma_dgram_netdev(pa, pb);
    nb = qvrdma_dgram_netdev(pb, pa);
    *a = qvrdma_dev_boot_features(na, MAC_A, RDMA_OPTS, QVRDMA_RING_FEATURES);
    *b = qvrdma_dev_boot_features(nb, MAC_B, RDMA_OPTS, QVRDMA_RING_FEATURES);
}

/*
 * The part of qvrdma_dev_boot() after the QEMU is up, for a device at
 * function 1 of @slot in an already running QEMU (two devices in one QEMU).
 */
static QVrdmaDev *dev_attach_at(QOSState *qs, int devfn, const char *mac)
{
    QVrdmaDev *d = g_new0(QVrdmaDev, 1);
    unsigned v[6];
    int i;

    g_assert_cmpint(sscanf(mac, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2],
                           &v[3], &v[4], &v[5]), ==, 6);
    for (i = 0; i < 6; i++) {
        d->mac[i] = v[i];
    }
    d->qs = qs;
    qvrdma_dp_attach(d, devfn, QVRDMA_RING_FEATURES);
    return d;
}

static QVrdmaDev *dev_attach(QOSState *qs, int slot, const char *mac)
{
    return dev_attach_at(qs, QPCI_DEVFN(slot, 1), mac);
}

/*
 * The virtio-net at function 0 of @slot with its driver running (receive
 * and transmit queues set up, DRIVER_OK): a hub delivers only to NICs that
 * can receive, so without this no frame would cross it.  Freed with
 * nic_down().
 */
typedef struct Nic {
    QVirtioPCIDevice *pci;
    QVirtQueue *vq[2];
    QGuestAllocator *alloc;
} Nic;

static Nic *nic_up(QOSState *qs, int slot)
{
    QPCIAddress addr = { .devfn = QPCI_DEVFN(slot, 0) };
    Nic *n = g_new0(Nic, 1);
    int i, b;

    n->alloc = &qs->alloc;
    n->pci = virtio_pci_new(qs->pcibus, &addr);
    g_assert_nonnull(n->pci);
    qvirtio_pci_device_enable(n->pci);
    qvirtio_start_device(&n->pci->vdev);
    qvirtio_set_features(&n->pci->vdev, qvirtio_get_features(&n->pci->vdev) &
                         (1ull << VIRTIO_F_VERSION_1));
    for (i = 0; i < 2; i++) {
        n->vq[i] = qvirtqueue_setup(&n->pci->vdev, n->alloc, i);
    }
    /* A few receive buffers, for whatever the hub floods here. */
    for (b = 0; b < 8; b++) {
        uint32_t head = qvirtqueue_add(qs->qts, n->vq[0],
                                       guest_alloc(n->alloc, 2048), 2048,
                                       true, false);
        qvirtqueue_kick(qs->qts, &n->pci->vdev, n->vq[0], head);
    }
    qvirtio_set_driver_ok(&n->pci->vdev);
    return n;
}

static void nic_down(Nic *n)
{
    int i;

    for (i = 0; i < 2; i++) {
        qvirtqueue_cleanup(n->pci->vdev.bus, n->vq[i], n->alloc);
    }
    qvirtio_pci_destructor(&n->pci->obj);
    g_free(n->pci);
    g_free(n);
}

/* Frees what dev_attach() made (the QEMU is shut down by the caller). */
static void dev_detach(QVrdmaDev *d)
{
    qvrdma_dp_detach(d);
    g_free(d);
}

static void dev_reinit(QVrdmaDev *d)
{
    qvrdma_dp_reinit(d);
}

static uint8_t dev_status(QVrdmaDev *d)
{
    return qvrdma_status(&d->r);
}

/* A member of the device's query-virtio-rdma entry (or of its @sub). */
static uint64_t info_u64(QVrdmaDev *d, const char *sub, const char *name)
{
    QDict *rsp;
    QDict *info = qvrdma_dp_query(d, &rsp);
    QNum *num;
    uint64_t v;

    if (sub) {
        info = qdict_get_qdict(info, sub);
        g_assert_nonnull(info);
    }
    num = qobject_to(QNum, qdict_get(info, name));
    g_assert_nonnull(num);
    g_assert_true(qnum_get_try_uint(num, &v));
    qobject_unref(rsp);
    return v;
}

/* ---- a loopback RC pair: the "device keeps working" check ------------------------ */

typedef struct Conn {
    QVrdmaDev *d;
    uint32_t pdn;
    QVrdmaCq *cq;
    QVrdmaQp *qa, *qb;
    struct virtio_rdma_rsp_mr mr;   /* DMA MR: SGE addresses are GPAs */
    uint64_t buf;                   /* 2 pages of guest RAM */
    uint8_t gid[16];
    uint16_t gid_index;
} Conn;

static void conn_open(Conn *c, QVrdmaDev *d, uint16_t gid_index)
{
    uint8_t st;
    QVrdmaPath p = {
        .sgid_index = gid_index,
        .rq_psn = 0x10,
        .sq_psn = 0x10,
    };

    memset(c, 0, sizeof(*c));
    c->d = d;
    c->gid_index = gid_index;
    qvrdma_gid_ipv4(c->gid, 10, 0, 0, 100 + gid_index);
    qvrdma_dp_add_gid(d, gid_index, c->gid);
    st = qvrdma_create_pd(&d->r, &c->pdn);
    g_assert_cmpstr(qvrdma_status_name(st), ==, "OK");
    st = qvrdma_get_dma_mr(&d->r, c->pdn, ACCESS_ALL, &c->mr);
    g_assert_cmpstr(qvrdma_status_name(st), ==, "OK");
    c->cq = qvrdma_dp_cq_create(d, 16);
    c->qa = qvrdma_dp_qp_create(d, c->pdn, VIRTIO_RDMA_QPT_RC, c->cq, c->cq,
                                1, VIRTIO_RDMA_SIGNAL_ALL_WR);
    c->qb = qvrdma_dp_qp_create(d, c->pdn, VIRTIO_RDMA_QPT_RC, c->cq, c->cq,
                                1, VIRTIO_RDMA_SIGNAL_ALL_WR);
    c->buf = guest_alloc(&d->qs->alloc, 2 * 4096);
    memcpy(p.dgid, c->gid, 16);
    memcpy(p.dmac, d->mac, 6);
    p.dest_qpn = c->qb->wire_qpn;
    qvrdma_dp_rc_connect(d, c->qa, &p);
    p.dest_qpn = c->qa->wire_qpn;
    qvrdma_dp_rc_connect(d, c->qb, &p);
}

static void conn_close(Conn *c)
{
    QVirtioRdma *r = &c->d->r;

    g_assert_cmpstr(qvrdma_status_name(qvrdma_destroy_qp(r, c->qa->qpn)), ==,
                    "OK");
    g_assert_cmpstr(qvrdma_status_name(qvrdma_destroy_qp(r, c->qb->qpn)), ==,
                    "OK");
    g_assert_cmpstr(qvrdma_status_name(qvrdma_destroy_cq(r, c->cq->cqn)), ==,
                    "OK");
    g_assert_cmpstr(qvrdma_status_name(qvrdma_dereg_mr(r, c->mr.mrn)), ==,
                    "OK");
    g_assert_cmpstr(qvrdma_status_name(qvrdma_destroy_pd(r, c->pdn)), ==,
                    "OK");
    g_assert_cmpstr(qvrdma_status_name(qvrdma_del_gid(r, c->gid_index, 1)),
                    ==, "OK");
    qvrdma_dp_qp_free(c->qa);
    qvrdma_dp_qp_free(c->qb);
    qvrdma_dp_cq_free(c->cq);
    guest_free(&c->d->qs->alloc, c->buf);
}

/*
 * Frees the driver-side state of @c but leaves its objects on the device:
 * a case that aimed them at MMIO does not reuse their numbers.
 */
static void conn_forget(Conn *c)
{
    qvrdma_dp_qp_free(c->qa);
    qvrdma_dp_qp_free(c->qb);
    qvrdma_dp_cq_free(c->cq);
}

static struct virtio_rdma_sge sge_at(uint64_t gpa, uint32_t len, uint32_t lkey)
{
    return (struct virtio_rdma_sge) {
        .addr = cpu_to_le64(gpa),
        .length = cpu_to_le32(len),
        .lkey = cpu_to_le32(lkey),
    };
}

/* The next CQE, which must have @status for @wr_id. */
static void expect_cqe(QVrdmaCq *cq, const char *what, uint64_t wr_id,
                       uint32_t status)
{
    struct virtio_rdma_cq_req c;
    g_autofree char *s = NULL;

    if (!qvrdma_dp_poll_cq(cq, &c, QVRDMA_DP_TIMEOUT_US)) {
        g_error("%s: no completion within %d s (want wr_id 0x%" PRIx64
                " %s)", what, QVRDMA_DP_TIMEOUT_US / 1000000, wr_id,
                qvrdma_wc_status_name(status));
    }
    s = qvrdma_cqe_str(&c);
    if (le64_to_cpu(c.wr_id) != wr_id || le32_to_cpu(c.status) != status) {
        g_error("%s: got %s, want wr_id 0x%" PRIx64 " %s", what, s, wr_id,
                qvrdma_wc_status_name(status));
    }
    g_test_message("%s: %s", what, s);
}

/*
 * The device keeps working: reset and re-initialise it if it asked for it,
 * then one control command and a 64-byte RC SEND between two new QPs on a
 * new CQ.  Cases leave their objects alone: a CQ or QP number used again
 * without a device reset would find its virtqueue's old indexes.
 */
static void check_works(QVrdmaDev *d, const char *who)
{
    struct virtio_rdma_port_attr port;
    uint8_t out[64], in[64];
    struct virtio_rdma_sge s;
    struct virtio_rdma_sq_req wr = qvrdma_wr_send(0x5e);
    Conn c;
    size_t i;

    if (dev_status(d) & VIRTIO_CONFIG_S_NEEDS_RESET) {
        note("%s: NEEDS_RESET set; reset and re-initialised", who);
        dev_reinit(d);
    }
    g_assert_cmphex(dev_status(d) & VIRTIO_CONFIG_S_DRIVER_OK, !=, 0);
    g_assert_cmpstr(qvrdma_status_name(qvrdma_query_port(&d->r, 1, &port)),
                    ==, "OK");

    conn_open(&c, d, CHECK_GID_INDEX);
    for (i = 0; i < sizeof(out); i++) {
        out[i] = 0x30 + i;
    }
    qtest_memwrite(d->qts, c.buf, out, sizeof(out));
    qtest_memset(d->qts, c.buf + 4096, 0, sizeof(in));
    s = sge_at(c.buf + 4096, sizeof(in), c.mr.lkey);
    qvrdma_dp_post_recv(c.qb, 0x4e, &s, 1);
    s = sge_at(c.buf, sizeof(out), c.mr.lkey);
    qvrdma_dp_post_send(c.qa, &wr, &s, 1);
    /* The order of the two completions is not defined. */
    for (i = 0; i < 2; i++) {
        struct virtio_rdma_cq_req cqe;

        if (!qvrdma_dp_poll_cq(c.cq, &cqe, QVRDMA_DP_TIMEOUT_US)) {
            g_error("%s: the check transfer did not complete", who);
        }
        if (le32_to_cpu(cqe.status) != VIRTIO_RDMA_WC_SUCCESS) {
            g_autofree char *str = qvrdma_cqe_str(&cqe);

            g_error("%s: the check transfer failed: %s", who, str);
        }
    }
    qtest_memread(d->qts, c.buf + 4096, in, sizeof(in));
    g_assert_cmpmem(in, sizeof(in), out, sizeof(out));
    conn_close(&c);
}

/* ---- class 1: DMA re-entry -------------------------------------------------------- */

typedef enum Target {
    T_COMMON,       /* our common config, at device_status */
    T_DEVCFG,       /* our device config (reads call get_config) */
    T_NOTIFY,       /* our notify region (writes kick a queue) */
    T_NIC,          /* the paired virtio-net's common config */
    T_IOAPIC,
    T__COUNT,
} Target;

static const char *const target_names[T__COUNT] = {
    "common", "device-config", "notify", "nic-bar", "ioapic",
};

typedef enum Kind {
    K_PT,           /* REG_USER_MR: the level-1 page-table page */
    K_PAGE,         /* REG_USER_MR: a data page */
    K_SGE,          /* SEND gathers through a DMA MR (loopback) */
    K_RREAD,        /* a peer's RDMA READ through our DMA MR */
    K_RWRITE,       /* a peer's RDMA WRITE */
    K_RATOMIC,      /* a peer's FETCH_ADD */
    K_RING_CQ,      /* CREATE_CQ_RING: the ring's data page */
    K_RING_SQ,      /* CREATE_QP_RING: the SQ ring's data page */
    K__COUNT,
} Kind;

static const char *const kind_names[K__COUNT] = {
    "pt", "page", "sge", "remote-read",
    "remote-write", "remote-atomic", "ring-cq", "ring-sq",
};

typedef struct DmaCase {
    Kind kind;
    Target target;
} DmaCase;

/* The paired virtio-net (function 0), with its BAR mapped. */
static QVirtioPCIDevice *nic_map(QVrdmaDev *d)
{
    QPCIAddress addr = { .devfn = QPCI_DEVFN(QVRDMA_SLOT, 0) };
    QVirtioPCIDevice *nic = virtio_pci_new(d->qs->pcibus, &addr);

    g_assert_nonnull(nic);
    qvirtio_pci_device_enable(nic);
    return nic;
}

/*
 * The guest-physical address a pointer of @kind gets for @t: the byte that
 * does the most harm there (device_status for writes, the start of the
 * device config for reads), aligned as @kind needs.
 */
static uint64_t target_gpa(QVrdmaDev *d, QVirtioPCIDevice *nic, Target t,
                           uint64_t align)
{
    QVirtioPCIDevice *v = d->vpci;
    uint64_t a;

    switch (t) {
    case T_COMMON:
        a = v->bar.addr + v->common_cfg_offset + COMMON_STATUS;
        break;
    case T_DEVCFG:
        a = v->bar.addr + v->device_cfg_offset;
        break;
    case T_NOTIFY:
        a = v->bar.addr + v->notify_cfg_offset;
        break;
    case T_NIC:
        a = nic->bar.addr + nic->common_cfg_offset + COMMON_STATUS;
        break;
    default:
        a = IOAPIC_BASE;
        break;
    }
    g_assert_false(v->bar.is_io);
    return a & ~(align - 1);
}

/*
 * (a)/(b) REG_USER_MR whose level-1 table page (K_PT) or first data page
 * (K_PAGE) is MMIO: EFAULT, nothing registered.
 * Before the fix: own BAR EFAULT (the kick's re-entrancy guard blocks the
 * access); K_PT at the IOAPIC / the NIC's BAR registered (OK).
 */
static void dma_ctrl(QVrdmaDev *d, uint64_t gpa, Kind kind)
{
    QVrdmaPageTable pt;
    struct virtio_rdma_rsp_mr mr;
    uint32_t pdn;
    uint8_t st;

    st = qvrdma_create_pd(&d->r, &pdn);
    g_assert_cmpstr(qvrdma_status_name(st), ==, "OK");
    qvrdma_pt_build(&d->r, &pt, 2, NULL);
    if (kind == K_PT) {
        st = qvrdma_reg_user_mr(&d->r, pdn, VIRTIO_RDMA_ACCESS_LOCAL_WRITE,
                                0x10000, 2 * 4096, 0x10000, gpa, 2, &mr);
    } else {
        qvrdma_pt_set_page(&d->r, &pt, 1, gpa);
        st = qvrdma_reg_user_mr(&d->r, pdn, VIRTIO_RDMA_ACCESS_LOCAL_WRITE,
                                0x10000, 2 * 4096, 0x10000, pt.l1, 2, &mr);
    }
    note("REG_USER_MR with %s at 0x%" PRIx64 ": %s",
         kind == K_PT ? "the page table" : "a data page", gpa,
         qvrdma_status_name(st));
    g_assert_cmpstr(qvrdma_status_name(st), ==, "EFAULT");
    qvrdma_pt_free(&d->r, &pt);
    g_assert_cmpstr(qvrdma_status_name(qvrdma_destroy_pd(&d->r, pdn)), ==,
                    "OK");
}

/*
 * (g) A queue in guest memory whose data page is MMIO: CREATE_CQ_RING
 * (K_RING_CQ) or CREATE_QP_RING (K_RING_SQ, the SQ's page) refuses it with
 * EFAULT and makes nothing -- a ring's pages are mapped once, at creation,
 * and only where they are RAM.  The rings' form of the CQ buffer cases.
 */
static void dma_ring(QVrdmaDev *d, uint64_t gpa, Kind kind)
{
    QVrdmaGRing g, rq;
    QVrdmaRingCq *cq = NULL;
    struct virtio_rdma_ring desc;
    uint32_t pdn, n, wire;
    uint8_t st;

    g_assert_nonnull(d->rd);
    st = qvrdma_create_pd(&d->r, &pdn);
    g_assert_cmpstr(qvrdma_status_name(st), ==, "OK");
    if (kind == K_RING_CQ) {
        qvrdma_gring_alloc(&d->r, &g, 2, VIRTIO_RDMA_CQE_LOG_STRIDE);
        qvrdma_pt_set_page(&d->r, &g.pt, 0, gpa);
        desc = qvrdma_gring_desc(&g);
        st = qvrdma_create_cq_ring(&d->r, VIRTIO_RDMA_KERNEL_CTX, 4, &desc, &n);
    } else {
        struct virtio_rdma_cmd_create_qp_ring req;

        cq = qvrdma_ring_cq_create(d->rd, VIRTIO_RDMA_KERNEL_CTX, 4, 2);
        qvrdma_gring_alloc(&d->r, &g, 2, qvrdma_gring_log_stride(
                               sizeof(struct virtio_rdma_sq_req) +
                               sizeof(struct virtio_rdma_sge)));
        qvrdma_gring_alloc(&d->r, &rq, 2, qvrdma_gring_log_stride(
                               sizeof(struct virtio_rdma_rq_req) +
                               sizeof(struct virtio_rdma_sge)));
        qvrdma_pt_set_page(&d->r, &g.pt, 0, gpa);
        req = qvrdma_ring_qp_req(VIRTIO_RDMA_KERNEL_CTX, pdn, cq->cqn, cq->cqn,
                                 4, 1, &g, &rq);
        st = qvrdma_create_qp_ring(&d->r, &req, &n, &wire);
        qvrdma_gring_free(&d->r, &rq);
    }
    note("%s with its %s ring's page at 0x%" PRIx64 ": %s",
         kind == K_RING_CQ ? "CREATE_CQ_RING" : "CREATE_QP_RING",
         kind == K_RING_CQ ? "CQ" : "SQ", gpa, qvrdma_status_name(st));
    g_assert_cmpstr(qvrdma_status_name(st), ==, "EFAULT");
    qvrdma_pt_set_page(&d->r, &g.pt, 0, g.pt.data);
    qvrdma_gring_free(&d->r, &g);
    if (cq) {
        qvrdma_ring_cq_destroy(cq);
        qvrdma_ring_cq_free(cq);
    }
    g_assert_cmpstr(qvrdma_status_name(qvrdma_destroy_pd(&d->r, pdn)), ==,
                    "OK");
}

/*
 * (c) A SEND whose SGE (DMA MR) points at MMIO: LOC_PROT_ERR, the
 * receiver gets nothing but the flush of its QP... or nothing at all.
 * Before the fix: own BAR LOC_PROT_ERR (the guarded bottom half blocks
 * the access), the IOAPIC and the NIC's BAR sent (SUCCESS).
 */
static void dma_sge(QVrdmaDev *d, uint64_t gpa)
{
    struct virtio_rdma_sq_req wr = qvrdma_wr_send(0x5ce);
    struct virtio_rdma_sge s;
    struct virtio_rdma_cq_req cqe;
    Conn c;

    conn_open(&c, d, 0);
    s = sge_at(c.buf + 4096, 64, c.mr.lkey);
    qvrdma_dp_post_recv(c.qb, 0x4ec, &s, 1);
    s = sge_at(gpa, 64, c.mr.lkey);
    qvrdma_dp_post_send(c.qa, &wr, &s, 1);
    /* B's RECV must not complete: no byte of MMIO may be sent. */
    do {
        g_autofree char *str = NULL;

        g_assert_true(qvrdma_dp_poll_cq(c.cq, &cqe, QVRDMA_DP_TIMEOUT_US));
        str = qvrdma_cqe_str(&cqe);
        note("SEND gathering from 0x%" PRIx64 ": %s", gpa, str);
        g_assert_cmpuint(le64_to_cpu(cqe.wr_id), !=, 0x4ec);
    } while (le64_to_cpu(cqe.wr_id) != 0x5ce);
    g_assert_cmpstr(qvrdma_wc_status_name(le32_to_cpu(cqe.status)), ==,
                    "LOC_PROT_ERR");
    conn_forget(&c);
}

/* A DMA MR on device @d (access @access); @returns its keys. */
static struct virtio_rdma_rsp_mr dma_mr(QVrdmaDev *d, uint32_t *pdn,
                                        uint32_t access)
{
    struct virtio_rdma_rsp_mr mr;

    g_assert_cmpstr(qvrdma_status_name(qvrdma_create_pd(&d->r, pdn)), ==,
                    "OK");
    g_assert_cmpstr(qvrdma_status_name(qvrdma_get_dma_mr(&d->r, *pdn, access,
                                                         &mr)), ==, "OK");
    return mr;
}

/* One RC QP on each of two devices over the wire, connected. */
typedef struct Wire {
    QVrdmaDev *d[2];
    uint32_t pdn[2];
    struct virtio_rdma_rsp_mr mr[2];
    QVrdmaCq *cq[2];
    QVrdmaQp *qp[2];
    uint64_t buf[2];
    uint8_t gid[2][16];
} Wire;

static void wire_open(Wire *w)
{
    int i;

    memset(w, 0, sizeof(*w));
    boot_wire(&w->d[0], &w->d[1]);
    for (i = 0; i < 2; i++) {
        qvrdma_gid_ipv4(w->gid[i], 10, 0, 0, 1 + i);
        qvrdma_dp_add_gid(w->d[i], 0, w->gid[i]);
        w->mr[i] = dma_mr(w->d[i], &w->pdn[i], ACCESS_ALL);
        w->cq[i] = qvrdma_dp_cq_create(w->d[i], 16);
        w->qp[i] = qvrdma_dp_qp_create(w->d[i], w->pdn[i], VIRTIO_RDMA_QPT_RC,
                                       w->cq[i], w->cq[i], 1,
                                       VIRTIO_RDMA_SIGNAL_ALL_WR);
        w->buf[i] = guest_alloc(&w->d[i]->qs->alloc, 4096);
    }
    for (i = 0; i < 2; i++) {
        QVrdmaPath p = {
            .dest_qpn = w->qp[!i]->wire_qpn, .sgid_index = 0,
            .rq_psn = 0x20, .sq_psn = 0x20, .retry_cnt = 1,
        };

        memcpy(p.dgid, w->gid[!i], 16);
        memcpy(p.dmac, w->d[!i]->mac, 6);
        qvrdma_dp_rc_connect(w->d[i], w->qp[i], &p);
    }
}

/* Checks both devices still work, then quits both QEMUs. */
static void wire_close(Wire *w)
{
    int i;

    for (i = 0; i < 2; i++) {
        check_works(w->d[i], i ? "B" : "A");
    }
    for (i = 0; i < 2; i++) {
        qvrdma_dp_qp_free(w->qp[i]);
        qvrdma_dp_cq_free(w->cq[i]);
        qvrdma_dev_quit(w->d[i]);
    }
}

/*
 * (e) A's READ / WRITE / FETCH_ADD at @gpa of B through B's DMA MR with
 * remote access: A gets REM_ACCESS_ERR, B survives.
 * Before the fix (main loop): B hangs reading its device config (READ,
 * atomic) or writing its device_status (WRITE); at the IOAPIC / the NIC's
 * BAR the operation succeeds.
 */
static void dma_remote(Wire *w, Kind kind, uint64_t gpa)
{
    struct virtio_rdma_sq_req wr;
    struct virtio_rdma_sge s = sge_at(w->buf[0], 8, w->mr[0].lkey);

    switch (kind) {
    case K_RREAD:
        wr = qvrdma_wr_rdma(VIRTIO_RDMA_WR_RDMA_READ, 0xe1, gpa,
                            w->mr[1].rkey);
        break;
    case K_RWRITE:
        /* Zeros: at device_status they would reset B. */
        qtest_memset(w->d[0]->qts, w->buf[0], 0, 8);
        wr = qvrdma_wr_rdma(VIRTIO_RDMA_WR_RDMA_WRITE, 0xe1, gpa,
                            w->mr[1].rkey);
        break;
    default:
        wr = qvrdma_wr_atomic(VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD, 0xe1, gpa,
                              w->mr[1].rkey, 1, 0);
        break;
    }
    qvrdma_dp_post_send(w->qp[0], &wr, &s, 1);
    expect_cqe(w->cq[0], kind_names[kind], 0xe1, VIRTIO_RDMA_WC_REM_ACCESS_ERR);
    note("%s of B's 0x%" PRIx64 ": REM_ACCESS_ERR", kind_names[kind], gpa);
    /* B's QP went to ERR when it refused; its CQ has the flush (if any). */
}

static void test_dma(const void *opaque)
{
    const DmaCase *c = opaque;
    QVirtioPCIDevice *nic = NULL;
    QVrdmaDev *d;
    Wire w;

    switch (c->kind) {
    case K_PT:
    case K_PAGE:
    case K_SGE:
    case K_RING_CQ:
    case K_RING_SQ:
        d = boot_loopback(RDMA_OPTS);
        nic = nic_map(d);
        if (c->kind == K_RING_CQ || c->kind == K_RING_SQ) {
            dma_ring(d, target_gpa(d, nic, c->target, 4096), c->kind);
        } else if (c->kind == K_SGE) {
            dma_sge(d, target_gpa(d, nic, c->target, 1));
        } else {
            dma_ctrl(d, target_gpa(d, nic, c->target, 4096), c->kind);
        }
        check_works(d, "device");
        qvirtio_pci_destructor(&nic->obj);
        g_free(nic);
        qvrdma_dev_quit(d);
        break;
    default:
        wire_open(&w);
        nic = nic_map(w.d[1]);
        dma_remote(&w, c->kind, target_gpa(w.d[1], nic, c->target, 8));
        qvirtio_pci_destructor(&nic->obj);
        g_free(nic);
        wire_close(&w);
        break;
    }
}

/* ---- class 2: net re-entry ---------------------------------------------------------- */

#define QKEY 0x11111111u

/*
 * RC SEND and UD SEND from QPs of @a to QPs of @b (b may be on another
 * device, whose frames come back synchronously), then B -> A: everything
 * completes with SUCCESS.
 */
static void traffic_rc_ud(QVrdmaDev *a, QVrdmaDev *b)
{
    QVrdmaDev *dev[2] = { a, b };
    Conn c[2];
    QVrdmaQp *ud[2];
    int i;

    for (i = 0; i < 2; i++) {
        memset(&c[i], 0, sizeof(c[i]));
        c[i].d = dev[i];
        c[i].gid_index = 0;
        qvrdma_gid_ipv4(c[i].gid, 10, 0, 0, 1 + i);
        qvrdma_dp_add_gid(dev[i], 0, c[i].gid);
        c[i].mr = dma_mr(dev[i], &c[i].pdn, ACCESS_ALL);
        c[i].cq = qvrdma_dp_cq_create(dev[i], 32);
        c[i].qa = qvrdma_dp_qp_create(dev[i], c[i].pdn, VIRTIO_RDMA_QPT_RC,
                                      c[i].cq, c[i].cq, 1,
                                      VIRTIO_RDMA_SIGNAL_ALL_WR);
        ud[i] = qvrdma_dp_qp_create(dev[i], c[i].pdn, VIRTIO_RDMA_QPT_UD,
                                    c[i].cq, c[i].cq, 1,
                                    VIRTIO_RDMA_SIGNAL_ALL_WR);
        qvrdma_dp_ud_ready(dev[i], ud[i], QKEY, 0x100 + i);
        c[i].buf = guest_alloc(&dev[i]->qs->alloc, 2 * 4096);
    }
    for (i = 0; i < 2; i++) {
        QVrdmaPath p = {
            .dest_qpn = c[!i].qa->wire_qpn, .sgid_index = 0,
            .rq_psn = 0x40, .sq_psn = 0x40, .retry_cnt = 7,
        };

        memcpy(p.dgid, c[!i].gid, 16);
        memcpy(p.dmac, dev[!i]->mac, 6);
        qvrdma_dp_rc_connect(dev[i], c[i].qa, &p);
    }
    for (i = 0; i < 2; i++) {
        int j = !i;
        struct virtio_rdma_sq_req wr = qvrdma_wr_send(0x100 + i);
        struct virtio_rdma_sge s;

        /* RC: i -> j */
        s = sge_at(c[j].buf + 4096, 256, c[j].mr.lkey);
        qvrdma_dp_post_recv(c[j].qa, 0x200 + i, &s, 1);
        s = sge_at(c[i].buf, 128, c[i].mr.lkey);
        qvrdma_dp_post_send(c[i].qa, &wr, &s, 1);
        expect_cqe(c[i].cq, "RC SEND", 0x100 + i, VIRTIO_RDMA_WC_SUCCESS);
        expect_cqe(c[j].cq, "RC RECV", 0x200 + i, VIRTIO_RDMA_WC_SUCCESS);

        /* UD: i -> j (the receive buffer has room for the GRH) */
        s = sge_at(c[j].buf + 4096, 40 + 256, c[j].mr.lkey);
        qvrdma_dp_post_recv(ud[j], 0x400 + i, &s, 1);
        wr = qvrdma_wr_send(0x300 + i);
        wr.wr.ud.remote_qpn = ud[j]->wire_qpn;
        wr.wr.ud.remote_qkey = QKEY;
        wr.wr.ud.av.port = 1;
        wr.wr.ud.av.pdn = c[i].pdn;
        wr.wr.ud.av.gid_index = 0;
        wr.wr.ud.av.hop_limit = 64;
        memcpy(wr.wr.ud.av.dgid, c[j].gid, 16);
        memcpy(wr.wr.ud.av.dmac, dev[j]->mac, 6);
        s = sge_at(c[i].buf, 128, c[i].mr.lkey);
        qvrdma_dp_post_send(ud[i], &wr, &s, 1);
        expect_cqe(c[i].cq, "UD SEND", 0x300 + i, VIRTIO_RDMA_WC_SUCCESS);
        expect_cqe(c[j].cq, "UD RECV", 0x400 + i, VIRTIO_RDMA_WC_SUCCESS);
    }
    for (i = 0; i < 2; i++) {
        qvrdma_dp_qp_free(c[i].qa);
        qvrdma_dp_qp_free(ud[i]);
        qvrdma_dp_cq_free(c[i].cq);
    }
}

/*
 * Class 2, slirp: frames to 255.255.255.255 make slirp's sendto() fail
 * (EACCES), and slirp answers at once with an ICMP error (after an ARP
 * request for our address), from inside our transmit.  RC (to a QP nobody
 * has: RETRY_EXC_ERR) and UD (SUCCESS) must complete; the device works.
 * Before the fix (main loop): QEMU hangs on the first frame (the filter
 * takes core_lock, which our transmit holds).
 */
static void test_net_user(const void *opaque)
{
    QVrdmaDev *d = boot_loopback(RDMA_OPTS);
    static const uint8_t slirp_mac[6] = { 0x52, 0x55, 0x0a, 0x00, 0x02, 0x02 };
    struct virtio_rdma_sq_req wr = qvrdma_wr_send(0x51);
    struct virtio_rdma_sge s;
    QVrdmaQp *ud, *rc;
    QVrdmaPath p = { .sgid_index = 1, .timeout = 10, .retry_cnt = 0,
                     .dest_qpn = 2 };
    uint8_t gid[16];
    Conn c;

    conn_open(&c, d, 0);
    /* GID 1: the address slirp gives a guest. */
    qvrdma_gid_ipv4(gid, 10, 0, 2, 15);
    qvrdma_dp_add_gid(d, 1, gid);

    /* RC to the broadcast address through slirp. */
    rc = qvrdma_dp_qp_create(d, c.pdn, VIRTIO_RDMA_QPT_RC, c.cq, c.cq, 1,
                             VIRTIO_RDMA_SIGNAL_ALL_WR);
    qvrdma_gid_ipv4(p.dgid, 255, 255, 255, 255);
    memcpy(p.dmac, slirp_mac, 6);
    qvrdma_dp_rc_connect(d, rc, &p);
    s = sge_at(c.buf, 64, c.mr.lkey);
    qvrdma_dp_post_send(rc, &wr, &s, 1);
    expect_cqe(c.cq, "RC SEND to slirp", 0x51, VIRTIO_RDMA_WC_RETRY_EXC_ERR);

    /* UD to the broadcast address and to slirp's host address. */
    ud = qvrdma_dp_qp_create(d, c.pdn, VIRTIO_RDMA_QPT_UD, c.cq, c.cq, 1,
                             VIRTIO_RDMA_SIGNAL_ALL_WR);
    qvrdma_dp_ud_ready(d, ud, QKEY, 0x100);
    for (int i = 0; i < 2; i++) {
        wr = qvrdma_wr_send(0x52 + i);
        wr.wr.ud.remote_qpn = 7;
        wr.wr.ud.remote_qkey = QKEY;
        wr.wr.ud.av.port = 1;
        wr.wr.ud.av.pdn = c.pdn;
        wr.wr.ud.av.gid_index = 1;
        wr.wr.ud.av.hop_limit = 64;
        qvrdma_gid_ipv4(wr.wr.ud.av.dgid, i ? 10 : 255, i ? 0 : 255,
                        i ? 2 : 255, i ? 2 : 255);
        memcpy(wr.wr.ud.av.dmac, slirp_mac, 6);
        qvrdma_dp_post_send(ud, &wr, &s, 1);
        expect_cqe(c.cq, "UD SEND to slirp", 0x52 + i, VIRTIO_RDMA_WC_SUCCESS);
    }
    qvrdma_dp_qp_free(rc);
    qvrdma_dp_qp_free(ud);
    conn_forget(&c);
    check_works(d, "device");
    qvrdma_dev_quit(d);
}

/*
 * Class 2, hub: two virtio-net + virtio-rdma pairs (slots 4 and 5) of one
 * QEMU on one hub exchange RC and UD traffic.
 * Before the fix (main loop): QEMU hangs on the first frame (B's answer
 * re-enters A's filter while A's transmit holds A's core_lock).
 */
static void test_net_hub(const void *opaque)
{
    bool io = qvrdma_dp_want_iothread();
    const char *iodev = io ? ",iothread=io0" : "";
    QOSState *qs;
    QVrdmaDev *a, *b;
    Nic *nic_a, *nic_b;

    qs = qtest_pc_boot("-M pc %s"
                       "-netdev hubport,id=n0,hubid=0 "
                       "-netdev hubport,id=n1,hubid=0 "
                       "-device virtio-net-pci,id=nic0,netdev=n0,addr=04.0,"
                       "multifunction=on,mac=" MAC_A " "
                       "-device virtio-rdma-pci,id=rdma0,addr=04.1,"
                       RDMA_OPTS "%s "
                       "-device virtio-net-pci,id=nic1,netdev=n1,addr=05.0,"
                       "multifunction=on,mac=" MAC_B " "
                       "-device virtio-rdma-pci,id=rdma1,addr=05.1,"
                       RDMA_OPTS "%s",
                       io ? "-object iothread,id=io0 " : "", iodev, iodev);
    nic_a = nic_up(qs, 4);
    nic_b = nic_up(qs, 5);
    a = dev_attach(qs, 4, MAC_A);
    b = dev_attach(qs, 5, MAC_B);
    traffic_rc_ud(a, b);
    check_works(a, "A");
    check_works(b, "B");
    dev_detach(a);
    dev_detach(b);
    nic_down(nic_a);
    nic_down(nic_b);
    qtest_shutdown(qs);
}

/*
 * Class 7, vnet_hdr: two QEMUs on taps joined by a Linux bridge, A's tap
 * with a virtio-net header (vnet_hdr=on, as libvirt opens taps), B's
 * without, exchange RC and UD traffic.  Everything lives in a network
 * namespace this case makes for itself (the case runs in its own
 * subprocess), with IPv6 off so the kernel sends nothing of its own.
 * Before the fix: A's frames reached the core with the header in front
 * (not RoCE: handed to virtio-net) and its own frames went out without one
 * (the tap read their first bytes as the header): RETRY_EXC_ERR.
 */
static void sh(const char *cmd)
{
    g_assert_cmpint(system(cmd), ==, 0);
}

static void test_net_tap_vnet_hdr(const void *opaque)
{
    QVrdmaDev *a, *b;
    Nic *nic_a, *nic_b;

    g_assert_cmpint(unshare(CLONE_NEWNET), ==, 0);
    sh("sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 "
       "net.ipv6.conf.default.disable_ipv6=1 && ip link set lo up && "
       "ip link add vrbr0 type bridge && ip link set vrbr0 up");
    a = qvrdma_dev_boot_features("tap,id=n0,ifname=vrt0,script=no,downscript=no,"
                        "vnet_hdr=on", MAC_A, RDMA_OPTS, QVRDMA_RING_FEATURES);
    b = qvrdma_dev_boot_features("tap,id=n0,ifname=vrt1,script=no,downscript=no,"
                        "vnet_hdr=off", MAC_B, RDMA_OPTS, QVRDMA_RING_FEATURES);
    sh("ip link set vrt0 master vrbr0 up && ip link set vrt1 master vrbr0 up");
    nic_a = nic_up(a->qs, QVRDMA_SLOT);
    nic_b = nic_up(b->qs, QVRDMA_SLOT);
    traffic_rc_ud(a, b);
    check_works(a, "A");
    check_works(b, "B");
    nic_down(nic_a);
    nic_down(nic_b);
    qvrdma_dev_quit(a);
    qvrdma_dev_quit(b);
}

static bool can_make_taps(void)
{
    g_autofree char *ip = g_find_program_in_path("ip");
    g_autofree char *sysctl = g_find_program_in_path("sysctl");

    return geteuid() == 0 && access("/dev/net/tun", R_OK | W_OK) == 0 &&
           ip && sysctl;
}

static void skip_no_taps(void)
{
    g_test_skip("needs root, /dev/net/tun, ip and sysctl");
}

/* ---- class 3: unbounded staging ------------------------------------------------------ */

#define FLOOD_QPS       4
#define FLOOD_LOG_WR    10              /* 1024-entry SQ rings */
#define FLOOD_CQE       16
#define FLOOD_POSTS     (4u * 1024 * 1024)
#define FLOOD_RSS_MAX_MIB 32

/*
 * Class 3: FLOOD_POSTS SENDs to RC QPs in RESET (each completes at once
 * with LOC_QP_OP_ERR, then WR_FLUSH_ERR once the overrun put the QP in
 * ERR) with the engine in an iothread, the CQ never drained.  The SQ rings
 * hold the same WQE in every slot; each round rings every SQ's doorbell a
 * whole ring ahead of what the device took (device_idx), the most a
 * doorbell may announce.
 * Bound: QEMU's RSS grows by less than FLOOD_RSS_MAX_MIB -- completions go
 * straight into the CQ ring, and a full one loses them (counted as CQ
 * overruns), so nothing piles up in the device however long the flood;
 * every entry the device took is accounted for: FLOOD_CQE completions in
 * the ring, the rest overruns.
 * The virtqueue path's form of this case found the staged completions
 * unbounded (2609c95); the rings never stage them.
 */
static void test_staging_flood(const void *opaque)
{
    struct virtio_rdma_sq_req wr = qvrdma_wr_send(0xf1);
    QVrdmaDev *d;
    QVrdmaRingCq *cq;
    QVrdmaRingQp *qp[FLOOD_QPS];
    g_autofree char *asan = NULL;
    uint64_t rss0, rss1, posted = 0, taken = 0, overruns0, overruns;
    uint32_t pdn, i, k, entries = 1u << FLOOD_LOG_WR;
    gint64 t0, t1;

    g_setenv("QVRDMA_IOTHREAD", "1", true);
    /*
     * Under AddressSanitizer (the qtest-san tier) freed memory waits in a
     * 256 MiB quarantine: keep it small so RSS measures the device, not
     * the sanitizer.
     */
    asan = g_strdup_printf("%s:quarantine_size_mb=1:"
                           "thread_local_quarantine_size_kb=64",
                           g_getenv("ASAN_OPTIONS") ?: "");
    g_setenv("ASAN_OPTIONS", asan, true);
    d = boot_loopback(RDMA_OPTS);
    g_assert_true(qvrdma_dp_engine_in_iothread(d));
    g_assert_nonnull(d->rd);
    g_assert_cmpuint(qvrdma_create_pd(&d->r, &pdn), ==, 0);
    cq = qvrdma_ring_cq_create(d->rd, VIRTIO_RDMA_KERNEL_CTX, FLOOD_CQE, 4);
    wr.num_sge = 0;
    for (k = 0; k < FLOOD_QPS; k++) {
        qp[k] = qvrdma_ring_qp_create(d->rd, VIRTIO_RDMA_KERNEL_CTX, pdn, cq,
                                      cq, entries, 1, FLOOD_LOG_WR);
        for (i = 0; i < entries; i++) {
            qvrdma_gring_write_entry(&qp[k]->sq, i, &wr, sizeof(wr));
        }
    }
    overruns0 = qvrdma_dp_counter(d, "cq-overruns");

    rss0 = rss_kib(d->qts);
    t0 = g_get_monotonic_time();
    while (posted < FLOOD_POSTS) {
        for (k = 0; k < FLOOD_QPS; k++) {
            uint32_t pi = qvrdma_gring_device_idx(&qp[k]->sq) + entries;

            posted += pi - qp[k]->sq_prod;
            qp[k]->sq_prod = pi;
            qvrdma_ring_sq_doorbell(qp[k]);
        }
    }
    /* The device takes every entry announced (its device_idx says so). */
    for (k = 0; k < FLOOD_QPS; k++) {
        g_assert_true(qvrdma_gring_wait_device_idx(&qp[k]->sq,
                                                   qp[k]->sq_prod,
                                                   10 * G_USEC_PER_SEC));
        taken += qp[k]->sq_prod;
    }
    t1 = g_get_monotonic_time();
    rss1 = rss_kib(d->qts);
    overruns = qvrdma_dp_counter(d, "cq-overruns") - overruns0;
    note("%" PRIu64 " posts to RESET QPs in %.2f s, CQ never drained: RSS "
         "%" PRIu64 " -> %" PRIu64 " MiB (+%" PRId64 " MiB); %" PRIu64
         " taken, cq-overruns %" PRIu64, posted, (t1 - t0) / 1e6,
         rss0 / 1024, rss1 / 1024, ((int64_t)rss1 - (int64_t)rss0) / 1024,
         taken, overruns);
    g_assert_cmpint(((int64_t)rss1 - (int64_t)rss0) / 1024, <,
                    FLOOD_RSS_MAX_MIB);
    g_assert_cmpuint(overruns, ==, taken - FLOOD_CQE);

    for (k = 0; k < FLOOD_QPS; k++) {
        qvrdma_ring_qp_destroy(qp[k]);
        qvrdma_ring_qp_free(qp[k]);
    }
    qvrdma_ring_cq_destroy(cq);
    qvrdma_ring_cq_free(cq);
    check_works(d, "device");
    qvrdma_dev_quit(d);
}

/* ---- class 4: unbounded work per kick ------------------------------------------------- */

#define WORK_CHAINS         256     /* a quarter of the ring */
#define WORK_STALL_MAX_US   (1000 * 1000)
#define WORK_RSS_MAX_MIB    64
#define MAX_MR_PAGES        (512u * 512u)

/*
 * A maximal page table: 512 x 512 entries, all the same data page (one
 * level-2 page that every level-1 entry points at).  @returns the L1 page.
 */
static uint64_t big_table(QVrdmaDev *d)
{
    g_autofree uint64_t *e = g_new(uint64_t, VIRTIO_RDMA_PT_ENTRIES);
    uint64_t l1 = guest_alloc(&d->qs->alloc, 4096);
    uint64_t l2 = guest_alloc(&d->qs->alloc, 4096);
    uint64_t data = guest_alloc(&d->qs->alloc, 4096);
    unsigned i;

    for (i = 0; i < VIRTIO_RDMA_PT_ENTRIES; i++) {
        e[i] = cpu_to_le64(data);
    }
    qtest_memwrite(d->qts, l2, e, 4096);
    for (i = 0; i < VIRTIO_RDMA_PT_ENTRIES; i++) {
        e[i] = cpu_to_le64(l2);
    }
    qtest_memwrite(d->qts, l1, e, 4096);
    return l1;
}

static struct virtio_rdma_cmd_reg_user_mr big_mr_req(uint32_t pdn,
                                                     uint64_t l1)
{
    return (struct virtio_rdma_cmd_reg_user_mr) {
        .pdn = cpu_to_le32(pdn),
        .access_flags = cpu_to_le32(VIRTIO_RDMA_ACCESS_LOCAL_WRITE),
        .start = cpu_to_le64(0x7f0000000000ull),
        .length = cpu_to_le64((uint64_t)MAX_MR_PAGES * 4096),
        .virt_addr = cpu_to_le64(0x7f0000000000ull),
        .pages = cpu_to_le64(l1),
        .npages = cpu_to_le32(MAX_MR_PAGES),
    };
}

/*
 * Class 4: one kick of 256 chains of maximal REG_USER_MRs on the control
 * queue.  Measures the longest time QEMU's main loop did
 * not answer (the kick itself, then back-to-back qtest reads until every
 * chain is used) and the RSS growth.  Asserts: with the default
 * max-mapped-pages (1048576) at most 4 of them (4 x 262144 pages) succeed
 * and the rest get ENOMEM; the longest stall is under WORK_STALL_MAX_US
 * (one maximal MR per kick / bottom-half turn); RSS grows by less than
 * WORK_RSS_MAX_MIB.
 * Before the fix: all 256 registered in one kick -- see the note for the
 * stall and RSS measured on 2609c95.
 */
static void test_work_kick(const void *opaque)
{
    QVrdmaDev *d = boot_loopback(RDMA_OPTS);
    uint64_t l1 = big_table(d), rss0, rss1;
    uint32_t pdn;
    struct virtio_rdma_cmd_reg_user_mr req;
    QVrdmaBatch b;
    unsigned i, ok = 0, enomem = 0;

    g_assert_cmpuint(qvrdma_create_pd(&d->r, &pdn), ==, 0);
    req = big_mr_req(pdn, l1);
    rss0 = rss_kib(d->qts);
    b = qvrdma_cmd_batch(&d->r, VIRTIO_RDMA_CMD_REG_USER_MR, &req, sizeof(req),
                         sizeof(struct virtio_rdma_rsp_mr), WORK_CHAINS, 200);
    rss1 = rss_kib(d->qts);
    for (i = 0; i < WORK_CHAINS; i++) {
        if (b.status[i] == VIRTIO_RDMA_OK) {
            ok++;
        } else if (b.status[i] == VIRTIO_RDMA_ENOMEM) {
            enomem++;
        } else {
            note("chain %u: %s", i, qvrdma_status_name(b.status[i]));
        }
    }
    note("%u maximal REG_USER_MRs (262144 pages each) in one kick: %u OK, "
         "%u ENOMEM in %.2f s; the kick took %.3f s, the longest main-loop "
         "stall %.3f s (%u reads); RSS %" PRIu64 " -> %" PRIu64 " MiB (+%"
         PRId64 " MiB)", WORK_CHAINS, ok, enomem, b.total_us / 1e6,
         b.kick_us / 1e6, b.max_stall_us / 1e6, b.reads, rss0 / 1024,
         rss1 / 1024, ((int64_t)rss1 - (int64_t)rss0) / 1024);
    g_assert_cmpuint(ok, >=, 1);
    g_assert_cmpuint(ok, <=, 4);
    g_assert_cmpuint(ok + enomem, ==, WORK_CHAINS);
    g_assert_cmpint(b.max_stall_us, <, WORK_STALL_MAX_US);
    g_assert_cmpint(((int64_t)rss1 - (int64_t)rss0) / 1024, <,
                    WORK_RSS_MAX_MIB);
    qvrdma_batch_free(&b);

    /*
     * The chains were written into the ring behind libqos's back, so its
     * bookkeeping of the control ring is stale: start the device over (a
     * reset frees every MR), then check it works.
     */
    dev_reinit(d);
    g_assert_cmpuint(info_u64(d, NULL, "mapped-pages"), ==, 0);
    check_works(d, "device");
    qvrdma_dev_quit(d);
}

/*
 * Class 4: max-mapped-pages=300000 holds one maximal MR (262144 pages),
 * not two: the second is refused with ENOMEM; after DEREG_MR the pages are
 * free again.
 * Before the fix: the property did not exist (QEMU refused to start).
 */
static void test_work_cap(const void *opaque)
{
    QVrdmaDev *d = boot_loopback(RDMA_OPTS ",max-mapped-pages=300000");
    struct virtio_rdma_cmd_reg_user_mr req;
    struct virtio_rdma_rsp_mr mr[2];
    uint8_t st[3];
    uint32_t pdn;
    int i;

    g_assert_cmpuint(qvrdma_create_pd(&d->r, &pdn), ==, 0);
    req = big_mr_req(pdn, big_table(d));
    for (i = 0; i < 3; i++) {
        if (i == 2) {
            g_assert_cmpuint(qvrdma_dereg_mr(&d->r, mr[0].mrn), ==, 0);
        }
        st[i] = qvrdma_cmd(&d->r, VIRTIO_RDMA_CMD_REG_USER_MR, &req,
                           sizeof(req), &mr[i & 1], sizeof(mr[0]));
    }
    note("max-mapped-pages=300000: maximal MRs %s, %s, after DEREG %s",
         qvrdma_status_name(st[0]), qvrdma_status_name(st[1]),
         qvrdma_status_name(st[2]));
    g_assert_cmpstr(qvrdma_status_name(st[0]), ==, "OK");
    g_assert_cmpstr(qvrdma_status_name(st[1]), ==, "ENOMEM");
    g_assert_cmpstr(qvrdma_status_name(st[2]), ==, "OK");
    g_assert_cmpuint(qvrdma_dereg_mr(&d->r, le32_to_cpu(mr[0].mrn)), ==, 0);
    g_assert_cmpuint(qvrdma_destroy_pd(&d->r, pdn), ==, 0);
    check_works(d, "device");
    qvrdma_dev_quit(d);
}

/*
 * Class 4, MRs above 1 GiB (issue 26): max-mr-size=2G, one REG_USER_MR of
 * 2 GiB through a three-level page table (a level-0 page naming one
 * level-1 page twice; it names one level-2 page 512 times, which names one
 * data page 512 times).  It is one command of 524288 pages: measured, its
 * main-loop stall bounded like the kick's (two 1 GiB MRs' worth at most),
 * counted in mapped-pages, freed by DEREG_MR; 2 GiB and 4 KiB is refused
 * (ERANGE).
 * Before: npages above 512 x 512 was ERANGE, max-mr-size at most 1 GiB.
 */
static void test_work_big_mr(const void *opaque)
{
    QVrdmaDev *d = boot_loopback(RDMA_OPTS ",max-mr-size=2G");
    g_autofree uint64_t *e = g_new0(uint64_t, VIRTIO_RDMA_PT_ENTRIES);
    uint64_t l0 = guest_alloc(&d->qs->alloc, 4096);
    uint64_t l1 = big_table(d);
    struct virtio_rdma_cmd_reg_user_mr req;
    struct virtio_rdma_rsp_mr mr;
    const uint32_t npages = 2 * 512 * 512;
    uint32_t pdn;
    gint64 t0, us;
    uint8_t st;

    e[0] = e[1] = cpu_to_le64(l1);
    qtest_memwrite(d->qts, l0, e, 4096);
    g_assert_cmpuint(qvrdma_create_pd(&d->r, &pdn), ==, 0);
    req = big_mr_req(pdn, l0);
    req.length = cpu_to_le64((uint64_t)npages * 4096 + 4096);
    req.npages = cpu_to_le32(npages + 1);
    st = qvrdma_cmd(&d->r, VIRTIO_RDMA_CMD_REG_USER_MR, &req, sizeof(req),
                    &mr, sizeof(mr));
    g_assert_cmpstr(qvrdma_status_name(st), ==, "ERANGE");

    req.length = cpu_to_le64((uint64_t)npages * 4096);
    req.npages = cpu_to_le32(npages);
    t0 = g_get_monotonic_time();
    st = qvrdma_cmd(&d->r, VIRTIO_RDMA_CMD_REG_USER_MR, &req, sizeof(req),
                    &mr, sizeof(mr));
    us = g_get_monotonic_time() - t0;
    note("a 2 GiB REG_USER_MR (524288 pages, three-level table): %s in "
         "%.3f s", qvrdma_status_name(st), us / 1e6);
    g_assert_cmpstr(qvrdma_status_name(st), ==, "OK");
    g_assert_cmpuint(info_u64(d, NULL, "mapped-pages"), ==, npages);
    g_assert_cmpint(us, <, 2 * WORK_STALL_MAX_US);
    g_assert_cmpuint(qvrdma_dereg_mr(&d->r, le32_to_cpu(mr.mrn)), ==, 0);
    g_assert_cmpuint(info_u64(d, NULL, "mapped-pages"), ==, 0);
    g_assert_cmpuint(qvrdma_destroy_pd(&d->r, pdn), ==, 0);
    check_works(d, "device");
    qvrdma_dev_quit(d);
}

/* ---- netdev_del / object-del while attached ------------------------------------------- */

/*
 * netdev_del of the paired netdev while the device is attached: loopback
 * traffic still works, and QEMU quits cleanly (no use of the freed filter:
 * the qtest-san tier runs this under ASan).
 * Before the fix: the filter was freed with the netdev; unrealize at quit
 * wrote through the dangling pointer -- see the note for what the plain
 * build did.
 */
static void test_netdev_del(const void *opaque)
{
    QVrdmaDev *d = boot_loopback(RDMA_OPTS);
    QDict *rsp;

    rsp = qtest_qmp(d->qts, "{'execute': 'netdev_del', "
                    "'arguments': {'id': 'n0'}}");
    note("netdev_del n0: %s", qdict_haskey(rsp, "error") ?
         qdict_get_str(qdict_get_qdict(rsp, "error"), "desc") : "done");
    qobject_unref(rsp);
    check_works(d, "device");
    qvrdma_dp_eject_slot(d);
    qvrdma_dev_quit(d);
}

/*
 * Issue 25: the paired NIC unplugged before the device while the device's
 * engine, in an iothread, has frames staged for the wire.  One round:
 * device A streams 32 MiB of RDMA WRITEs to device B (another QEMU, over
 * a dgram wire), and at A's first completion, mid-stream, @unplug takes
 * A's slot away, NIC first; QEMU must answer and B keep working.  The
 * qtest-san tier runs this under ASan, which sees any use of the NIC after
 * it is gone.
 * Before the fix (d7943e8), under ASan: heap-use-after-free of the NIC's
 * NICState in virtio_rdma_wire_send <- engine_flush <- dp_bh <-
 * aio_wait_bh_oneshot <- virtio_rdma_engine_stop <- unrealize.
 */
#define UNPLUG_ROUNDS   6
#define UNPLUG_QPS      8
#define UNPLUG_LEN      (256 * 1024)

static void unplug_round(QVrdmaDev *a, QVrdmaDev *b,
                         void (*unplug)(QVrdmaDev *a))
{
    QVrdmaDev *d[2] = { a, b };
    QVrdmaQp *qp[2][UNPLUG_QPS];
    struct virtio_rdma_rsp_mr mr[2];
    struct virtio_rdma_cq_req c;
    struct virtio_rdma_sge s;
    QVrdmaCq *cq[2];
    uint64_t buf[2];
    uint32_t pdn[2];
    uint8_t gid[2][16];
    int i, j, k;

    g_assert_true(qvrdma_dp_engine_in_iothread(a));
    for (k = 0; k < 2; k++) {
        qvrdma_gid_ipv4(gid[k], 10, 9, 0, 1 + k);
        qvrdma_dp_add_gid(d[k], 1, gid[k]);
        mr[k] = dma_mr(d[k], &pdn[k], ACCESS_ALL);
        cq[k] = qvrdma_dp_cq_create(d[k], 256);
        buf[k] = guest_alloc(&d[k]->qs->alloc, UNPLUG_LEN);
        for (i = 0; i < UNPLUG_QPS; i++) {
            qp[k][i] = qvrdma_dp_qp_create(d[k], pdn[k], VIRTIO_RDMA_QPT_RC,
                                           cq[k], cq[k], 1,
                                           VIRTIO_RDMA_SIGNAL_ALL_WR);
        }
    }
    for (k = 0; k < 2; k++) {
        for (i = 0; i < UNPLUG_QPS; i++) {
            QVrdmaPath p = {
                .dest_qpn = qp[!k][i]->wire_qpn, .sgid_index = 1,
                .rq_psn = 0x20, .sq_psn = 0x20, .retry_cnt = 7,
            };

            memcpy(p.dgid, gid[!k], 16);
            memcpy(p.dmac, d[!k]->mac, 6);
            qvrdma_dp_rc_connect(d[k], qp[k][i], &p);
        }
    }
    s = sge_at(buf[0], UNPLUG_LEN, le32_to_cpu(mr[0].lkey));
    for (i = 0; i < UNPLUG_QPS; i++) {
        qvrdma_dp_batch_begin(&qp[0][i]->sq);
        for (j = 0; j < 16; j++) {
            struct virtio_rdma_sq_req wr =
                qvrdma_wr_rdma(VIRTIO_RDMA_WR_RDMA_WRITE, j, buf[1],
                               le32_to_cpu(mr[1].rkey));

            qvrdma_dp_post_send(qp[0][i], &wr, &s, 1);
        }
        qvrdma_dp_batch_end(&qp[0][i]->sq);
    }
    g_assert_true(qvrdma_dp_poll_cq(cq[0], &c, QVRDMA_DP_TIMEOUT_US));
    unplug(a);
    for (k = 0; k < 2; k++) {
        for (i = 0; i < UNPLUG_QPS; i++) {
            qvrdma_dp_qp_free(qp[k][i]);
        }
        qvrdma_dp_cq_free(cq[k]);
    }
    check_works(b, "B");
}

/* ACPI eject with function 1 created first: the eject goes in reverse. */
static void test_unplug_staged(const void *opaque)
{
    int round;

    for (round = 0; round < UNPLUG_ROUNDS; round++) {
        g_autofree char *na = NULL, *nb = NULL;
        QVrdmaDev *a, *b;
        int pa, pb;

        qvrdma_free_udp_ports(&pa, &pb);
        na = qvrdma_dgram_netdev(pa, pb);
        nb = qvrdma_dgram_netdev(pb, pa);
        a = qvrdma_dev_boot_with(&(QVrdmaBoot) {
            .netdev = na, .mac = MAC_A, .rdma_opts = RDMA_OPTS,
            .rdma_first = true, .iothread = true, .features = QVRDMA_RING_FEATURES,
        });
        b = qvrdma_dev_boot_features(nb, MAC_B, RDMA_OPTS, QVRDMA_RING_FEATURES);
        unplug_round(a, b, qvrdma_dp_eject_slot);
        qvrdma_dev_quit(a);
        qvrdma_dev_quit(b);
    }
    note("%d rounds: A's slot ejected (NIC first) during a stream of WRITEs "
         "from its iothread; QEMU answered after each", UNPLUG_ROUNDS);
}

/*
 * Native PCIe hot-plug: A's pair behind a root port of a q35 whose ACPI
 * hot-plug is off; the guest powers the slot off (Slot Control: power
 * controller off, power indicator off), and QEMU unplugs the slot's
 * functions in devfn order, the NIC first, whatever the creation order.
 * libqos's pc bus reaches bus 1 through CF8 (the bus number above the
 * devfn); the root port forwards libqos's BAR range.
 */
#define RP_DEVFN        QPCI_DEVFN(4, 0)
#define BUS1(devfn)     ((1 << 8) | (devfn))

static QPCIDevice *root_port_up(QOSState *qs)
{
    QPCIDevice *rp = qpci_device_find(qs->pcibus, RP_DEVFN);

    g_assert_nonnull(rp);
    qpci_config_writeb(rp, PCI_PRIMARY_BUS, 0);
    qpci_config_writeb(rp, PCI_SECONDARY_BUS, 1);
    qpci_config_writeb(rp, PCI_SUBORDINATE_BUS, 1);
    /* libqos maps BARs from 0xE0000000 up; no prefetchable window. */
    qpci_config_writew(rp, PCI_MEMORY_BASE, 0xe000);
    qpci_config_writew(rp, PCI_MEMORY_LIMIT, 0xfff0);
    qpci_config_writew(rp, PCI_PREF_MEMORY_BASE, 0xfff0);
    qpci_config_writew(rp, PCI_PREF_MEMORY_LIMIT, 0);
    qpci_config_writew(rp, PCI_COMMAND,
                       PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
    return rp;
}

static QPCIDevice *native_rp;

/* The guest powers A's slot off; both functions go. */
static void slot_power_off(QVrdmaDev *a)
{
    uint8_t cap = qpci_find_capability(native_rp, PCI_CAP_ID_EXP, 0);
    uint16_t ctl;

    g_assert_cmpuint(cap, !=, 0);
    ctl = qpci_config_readw(native_rp, cap + PCI_EXP_SLTCTL);
    qpci_config_writew(native_rp, cap + PCI_EXP_SLTCTL,
                       ctl | PCI_EXP_SLTCTL_PCC | PCI_EXP_SLTCTL_PWR_IND_OFF);
    qvrdma_dp_wait_slot_gone(a->qts);
}

static void test_unplug_native(const void *opaque)
{
    int round;

    for (round = 0; round < UNPLUG_ROUNDS; round++) {
        g_autofree char *na = NULL, *nb = NULL;
        QOSState *qs;
        QVrdmaDev *a, *b;
        int pa, pb;

        qvrdma_free_udp_ports(&pa, &pb);
        na = qvrdma_dgram_netdev(pa, pb);
        nb = qvrdma_dgram_netdev(pb, pa);
        qs = qtest_pc_boot("-M q35 "
                           "-global ICH9-LPC.acpi-pci-hotplug-with-bridge-"
                           "support=off -object iothread,id=io0 -netdev %s "
                           "-device pcie-root-port,id=rp0,chassis=1,slot=1,"
                           "bus=pcie.0,addr=04.0 "
                           "-device virtio-net-pci,id=nic0,netdev=n0,bus=rp0,"
                           "addr=00.0,multifunction=on,mac=" MAC_A " "
                           "-device virtio-rdma-pci,id=rdma0,bus=rp0,"
                           "addr=00.1,iothread=io0," RDMA_OPTS, na);
        native_rp = root_port_up(qs);
        a = dev_attach_at(qs, BUS1(QPCI_DEVFN(0, 1)), MAC_A);
        b = qvrdma_dev_boot_features(nb, MAC_B, RDMA_OPTS, QVRDMA_RING_FEATURES);
        unplug_round(a, b, slot_power_off);
        dev_detach(a);
        g_free(native_rp);
        qtest_shutdown(qs);
        qvrdma_dev_quit(b);
    }
    note("%d rounds: A's PCIe slot powered off by the guest (NIC first) "
         "during a stream of WRITEs from its iothread; QEMU answered after "
         "each", UNPLUG_ROUNDS);
}

/*
 * object-del of the device's net filter is refused while the device uses
 * it; the device works, and unplugs cleanly.
 * Before the fix: deleted, and the device kept a dangling pointer to it,
 * which its unrealize then unparented.
 */
static void test_filter_del(const void *opaque)
{
    QVrdmaDev *d = boot_loopback(RDMA_OPTS);
    QDict *rsp;
    bool refused;

    rsp = qtest_qmp(d->qts, "{'execute': 'object-del', "
                    "'arguments': {'id': 'virtio-rdma-wire-n0'}}");
    refused = qdict_haskey(rsp, "error");
    note("object-del virtio-rdma-wire-n0: %s", refused ?
         qdict_get_str(qdict_get_qdict(rsp, "error"), "desc") : "deleted");
    qobject_unref(rsp);
    g_assert_true(refused);
    check_works(d, "device");
    qvrdma_dp_eject_slot(d);
    qvrdma_dev_quit(d);
}

/* ---- class 6: one classifier ---------------------------------------------------------- */

typedef enum FrameKind {
    F_PLAIN,        /* RoCEv2 (IPv4) to our GID */
    F_VLAN,         /* the same behind one 802.1Q tag */
    F_FRAG_FIRST,   /* first fragment (MF set, offset 0) */
    F_FRAG_LATER,   /* a later fragment, its payload looking like UDP 4791 */
    F__COUNT,
} FrameKind;

static const char *const frame_names[F__COUNT] = {
    "plain", "vlan", "ipv4-first-fragment", "ipv4-later-fragment",
};

/* Whether the device must take it (the core's documented classifier). */
static const bool frame_ours[F__COUNT] = { true, true, false, false };

/*
 * An Ethernet frame to @dmac, IPv4 10.0.0.9 -> 10.0.0.1, UDP to 4791 with
 * a SEND-only BTH to QP 5 and a wrong ICRC: a frame the device takes is
 * then dropped (counted) by its parser.  @returns the length.
 */
static size_t frame_build(uint8_t *f, FrameKind k, const uint8_t dmac[6])
{
    static const uint8_t smac[6] = { 0x52, 0x54, 0x00, 0xaa, 0xbb, 0xcc };
    size_t l3 = 14, pay = 8 + 12 + 32 + 4, ip_len = 20 + pay;
    uint8_t *ip, *udp;

    memset(f, 0, 14 + 4 + ip_len);
    memcpy(f, dmac, 6);
    memcpy(f + 6, smac, 6);
    if (k == F_VLAN) {
        stw_be_p(f + 12, 0x8100);
        stw_be_p(f + 14, 5);            /* VLAN 5, priority 0 */
        l3 += 4;
    }
    stw_be_p(f + l3 - 2, 0x0800);
    ip = f + l3;
    ip[0] = 0x45;
    stw_be_p(ip + 2, ip_len);
    stw_be_p(ip + 4, 0x1234);
    if (k == F_FRAG_FIRST) {
        stw_be_p(ip + 6, 0x2000);       /* MF */
    } else if (k == F_FRAG_LATER) {
        stw_be_p(ip + 6, 0x0003);       /* offset 24 bytes, last */
    } else {
        stw_be_p(ip + 6, 0x4000);       /* DF */
    }
    ip[8] = 64;
    ip[9] = IPPROTO_UDP;
    ip[12] = 10, ip[13] = 0, ip[14] = 0, ip[15] = 9;
    ip[16] = 10, ip[17] = 0, ip[18] = 0, ip[19] = 1;
    stw_be_p(ip + 10, qvrdma_ip_checksum(ip, 20));
    udp = ip + 20;
    stw_be_p(udp, 0xc000);
    stw_be_p(udp + 2, 4791);
    stw_be_p(udp + 4, pay);
    udp[8] = 0x04;                      /* RC SEND_ONLY */
    stw_be_p(udp + 10, 0xffff);         /* P_Key */
    stl_be_p(udp + 12, 5);              /* dest QP */
    memset(udp + 20, 0x77, 32);
    return l3 + ip_len;
}

typedef struct RxCounts {
    uint64_t rx, drops;
} RxCounts;

static RxCounts rx_counts(QVrdmaDev *d)
{
    return (RxCounts) {
        .rx = qvrdma_dp_counter(d, "rx-packets"),
        .drops = qvrdma_dp_counter(d, "drops"),
    };
}

/* Counters of @d after a frame: wait until they move (or 1 s). */
static RxCounts rx_counts_after(QVrdmaDev *d, RxCounts before)
{
    gint64 end = g_get_monotonic_time() + G_USEC_PER_SEC;
    RxCounts now;

    do {
        g_usleep(20 * 1000);
        now = rx_counts(d);
    } while (now.rx == before.rx && now.drops == before.drops &&
             g_get_monotonic_time() < end);
    g_usleep(50 * 1000);            /* and no second change */
    return rx_counts(d);
}

/*
 * Class 6: the same frames, sent from a plain UDP socket to the dgram
 * netdev of a device with its engine in the main loop and of one with it
 * in an iothread, are classified the same: taken (rx-packets and drops
 * move: the parser refuses the ICRC) or not (nothing counted), and as the
 * core documents it: one VLAN tag is RoCE, any IPv4 fragment is not.
 * Before the fix: the iothread's own classifier did not take the VLAN
 * frame, and both placements took the first fragment.
 */
static void test_classify(const void *opaque)
{
    QVrdmaDev *d[2];
    int port[2], peer[2], fd, i, k;
    uint8_t gid[16];
    bool bad = false;

    qvrdma_gid_ipv4(gid, 10, 0, 0, 1);
    fd = socket(AF_INET, SOCK_DGRAM, 0);
    g_assert_cmpint(fd, >=, 0);
    for (i = 0; i < 2; i++) {
        g_autofree char *nd = NULL;

        qvrdma_free_udp_ports(&port[i], &peer[i]);
        nd = qvrdma_dgram_netdev(port[i], peer[i]);
        g_setenv("QVRDMA_IOTHREAD", i ? "1" : "0", true);
        d[i] = qvrdma_dev_boot_features(nd, MAC_A, RDMA_OPTS, QVRDMA_RING_FEATURES);
        g_assert_cmpint(qvrdma_dp_engine_in_iothread(d[i]), ==, i);
        qvrdma_dp_add_gid(d[i], 0, gid);
    }
    for (k = 0; k < F__COUNT; k++) {
        uint8_t f[128];
        size_t len = frame_build(f, k, d[0]->mac);
        bool taken[2];

        for (i = 0; i < 2; i++) {
            struct sockaddr_in sa = {
                .sin_family = AF_INET,
                .sin_port = htons(port[i]),
                .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
            };
            RxCounts b = rx_counts(d[i]), a;

            g_assert_cmpint(sendto(fd, f, len, 0, (struct sockaddr *)&sa,
                                   sizeof(sa)), ==, len);
            a = rx_counts_after(d[i], b);
            taken[i] = a.rx != b.rx;
            note("%s frame, engine in the %s: rx-packets +%" PRIu64
                 ", drops +%" PRIu64 " (%s)", frame_names[k],
                 i ? "iothread" : "main loop", a.rx - b.rx, a.drops - b.drops,
                 taken[i] ? "taken" : "not taken");
            if (taken[i] != frame_ours[k]) {
                bad = true;
            }
        }
        if (taken[0] != taken[1]) {
            note("%s frame: the two placements disagree", frame_names[k]);
            bad = true;
        }
    }
    close(fd);
    g_assert_false(bad);
    for (i = 0; i < 2; i++) {
        check_works(d[i], i ? "iothread device" : "main-loop device");
        qvrdma_dev_quit(d[i]);
    }
}

/* ---- class 7: GID churn ------------------------------------------------------------------ */

#define CHURN_PAIRS         200
#define CHURN_BURST_MAX     16
#define CHURN_RATE_MAX      10      /* per second after the burst */
#define CHURN_FINAL_US      (2 * G_USEC_PER_SEC)

typedef struct GidEvent {
    gint64 ts_us;       /* QMP timestamp */
    bool added;
    uint64_t interface_id;
} GidEvent;

static void take_gid_events(QTestState *qts, GArray *events)
{
    QDict *ev;

    while ((ev = qtest_qmp_event_ref(qts, "RDMA_GID_STATUS_CHANGED"))) {
        QDict *data = qdict_get_qdict(ev, "data");
        QDict *ts = qdict_get_qdict(ev, "timestamp");
        GidEvent e = {
            .ts_us = qdict_get_int(ts, "seconds") * G_USEC_PER_SEC +
                     qdict_get_int(ts, "microseconds"),
            .added = qdict_get_bool(data, "gid-status"),
        };

        g_assert_true(qnum_get_try_uint(qobject_to(QNum,
                                                   qdict_get(data,
                                                             "interface-id")),
                                        &e.interface_id));

        g_array_append_val(events, e);
        qobject_unref(ev);
    }
}

/*
 * Class 7: CHURN_PAIRS ADD_GID / DEL_GID of one GID, then a last ADD_GID,
 * as fast as the control queue goes.  RDMA_GID_STATUS_CHANGED: at most
 * CHURN_BURST_MAX + CHURN_RATE_MAX per started second of the span between
 * the first and the last event, and the last event (within 2 s of the
 * last command) reports the final state: added, this GID.
 * Before the fix: one event per change (2 * CHURN_PAIRS + 1).
 */
static void test_gid_churn(const void *opaque)
{
    QVrdmaDev *d = boot_loopback(RDMA_OPTS);
    g_autoptr(GArray) ev = g_array_new(false, false, sizeof(GidEvent));
    uint8_t gid[16];
    uint64_t iid;
    gint64 t_last, deadline, span_us;
    GidEvent *last;
    unsigned i, allowed;

    qvrdma_gid_ipv4(gid, 10, 0, 0, 7);
    memcpy(&iid, gid + 8, 8);           /* as the event carries it */
    for (i = 0; i < CHURN_PAIRS; i++) {
        qvrdma_dp_add_gid(d, 3, gid);
        g_assert_cmpuint(qvrdma_del_gid(&d->r, 3, 1), ==, 0);
    }
    qvrdma_dp_add_gid(d, 3, gid);
    t_last = g_get_monotonic_time();

    /* Collect until 2 s after the last command, and 1 s quiet after it. */
    deadline = t_last + CHURN_FINAL_US + G_USEC_PER_SEC;
    while (g_get_monotonic_time() < deadline) {
        qobject_unref(qtest_qmp(d->qts, "{'execute': 'query-status'}"));
        take_gid_events(d->qts, ev);
        g_usleep(50 * 1000);
    }
    g_assert_cmpuint(ev->len, >, 0);
    last = &g_array_index(ev, GidEvent, ev->len - 1);
    span_us = last->ts_us - g_array_index(ev, GidEvent, 0).ts_us;
    allowed = CHURN_BURST_MAX +
              CHURN_RATE_MAX * (unsigned)((span_us + G_USEC_PER_SEC - 1) /
                                          G_USEC_PER_SEC);
    note("%u GID changes: %u RDMA_GID_STATUS_CHANGED events over %.2f s "
         "(allowed %u); the last reports %s", 2 * CHURN_PAIRS + 1, ev->len,
         span_us / 1e6, allowed, last->added ? "added" : "deleted");
    g_assert_cmpuint(ev->len, <=, allowed);
    g_assert_true(last->added);
    g_assert_cmphex(last->interface_id, ==, iid);

    g_assert_cmpuint(qvrdma_del_gid(&d->r, 3, 1), ==, 0);
    check_works(d, "device");
    qvrdma_dev_quit(d);
}

/* ------------------------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    static DmaCase dma_cases[K__COUNT][T__COUNT];
    int k, t;

    g_test_init(&argc, &argv, NULL);

    for (k = 0; k < K__COUNT; k++) {
        for (t = 0; t < T__COUNT; t++) {
            g_autofree char *path =
                g_strdup_printf("virtio-rdma-safety/dma/%s/%s",
                                kind_names[k], target_names[t]);

            dma_cases[k][t] = (DmaCase) { .kind = k, .target = t };
            add_case(path, test_dma, &dma_cases[k][t], CASE_TIMEOUT_US);
        }
    }
    add_case("virtio-rdma-safety/net/user", test_net_user, NULL,
             CASE_TIMEOUT_US);
    add_case("virtio-rdma-safety/net/hub", test_net_hub, NULL,
             CASE_TIMEOUT_US);
    if (can_make_taps()) {
        add_case("virtio-rdma-safety/net/tap-vnet-hdr", test_net_tap_vnet_hdr,
                 NULL, CASE_TIMEOUT_US);
    } else {
        qtest_add_func("virtio-rdma-safety/net/tap-vnet-hdr", skip_no_taps);
    }
    add_case("virtio-rdma-safety/staging/flood", test_staging_flood, NULL,
             LONG_TIMEOUT_US);
    add_case("virtio-rdma-safety/work/kick", test_work_kick, NULL,
             LONG_TIMEOUT_US);
    add_case("virtio-rdma-safety/work/max-mapped-pages", test_work_cap, NULL,
             CASE_TIMEOUT_US);
    add_case("virtio-rdma-safety/work/big-mr", test_work_big_mr, NULL,
             CASE_TIMEOUT_US);
    add_case("virtio-rdma-safety/netdev/netdev-del", test_netdev_del, NULL,
             CASE_TIMEOUT_US);
    add_case("virtio-rdma-safety/netdev/unplug-staged", test_unplug_staged,
             NULL, LONG_TIMEOUT_US);
    add_case("virtio-rdma-safety/netdev/unplug-native", test_unplug_native,
             NULL, LONG_TIMEOUT_US);
    add_case("virtio-rdma-safety/netdev/filter-del", test_filter_del, NULL,
             CASE_TIMEOUT_US);
    add_case("virtio-rdma-safety/classify", test_classify, NULL,
             CASE_TIMEOUT_US);
    add_case("virtio-rdma-safety/gid-churn", test_gid_churn, NULL,
             CASE_TIMEOUT_US);
    return g_test_run();
}
