/*
 * libqos helpers for virtio-rdma-pci's queues in guest memory (see
 * virtio-rdma-ring.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "../libqtest.h"
#include "qemu/bswap.h"
#include "hw/pci/pci_regs.h"
#include "standard-headers/linux/virtio_config.h"
#include "standard-headers/linux/virtio_pci.h"
#include "pci.h"
#include "virtio-pci.h"
#include "virtio-rdma-ring.h"

#define QVRDMA_RING_POLL_US     200
#define QVRDMA_RING_TRAILER     sizeof(struct virtio_rdma_ring_trailer)

/* ---- bring-up ----------------------------------------------------------- */

QVrdmaRingDev *qvrdma_ring_dev_boot(const char *mac, const char *rdma_opts)
{
    /* The device maps its doorbells when RINGS was negotiated. */
    return qvrdma_dev_boot_features("user,id=n0", mac, rdma_opts,
                                    QVRDMA_RING_FEATURES)->rd;
}

void qvrdma_ring_dev_quit(QVrdmaRingDev *rd)
{
    qvrdma_dev_quit(rd->d);     /* frees rd */
}

bool qvrdma_find_shm(QVirtioPCIDevice *vpci, uint8_t id, QVrdmaShm *shm)
{
    QPCIDevice *pdev = vpci->pdev;
    uint8_t addr = 0;

    /* The capability list is the device's; the walk ends at its end. */
    while ((addr = qpci_find_capability(pdev, PCI_CAP_ID_VNDR, addr))) {
        uint8_t type = qpci_config_readb(pdev, addr +
                            offsetof(struct virtio_pci_cap, cfg_type));

        if (type != VIRTIO_PCI_CAP_SHARED_MEMORY_CFG ||
            qpci_config_readb(pdev, addr +
                              offsetof(struct virtio_pci_cap, id)) != id) {
            continue;
        }
        g_assert_cmpuint(qpci_config_readb(pdev, addr +
                             offsetof(struct virtio_pci_cap, cap_len)), >=,
                         sizeof(struct virtio_pci_cap64));
        shm->bar = qpci_config_readb(pdev, addr +
                                     offsetof(struct virtio_pci_cap, bar));
        shm->offset = qpci_config_readl(pdev, addr +
                          offsetof(struct virtio_pci_cap, offset)) |
                      (uint64_t)qpci_config_readl(pdev, addr +
                          offsetof(struct virtio_pci_cap64, offset_hi)) << 32;
        shm->length = qpci_config_readl(pdev, addr +
                          offsetof(struct virtio_pci_cap, length)) |
                      (uint64_t)qpci_config_readl(pdev, addr +
                          offsetof(struct virtio_pci_cap64, length_hi)) << 32;
        return true;
    }
    return false;
}

void qvrdma_ring_map_doorbells(QVrdmaRingDev *rd)
{
    QVirtioPCIDevice *vpci = rd->d->vpci;
    QVrdmaShm shm;
    uint64_t size;

    g_assert_true(qvrdma_find_shm(vpci, VIRTIO_RDMA_SHM_DOORBELLS, &shm));
    g_assert_cmpuint(shm.bar, <=, 5);
    g_assert_cmpuint(shm.length, >=,
                     (uint64_t)(1 + rd->max_ctx) * VIRTIO_RDMA_DB_PAGE);
    rd->db_bar_idx = shm.bar;
    rd->db_offset = shm.offset;
    rd->db_length = shm.length;
    if (shm.bar == vpci->bar_idx) {
        /* Mapping it again would move the BAR under virtio-pci's feet. */
        rd->db_bar = vpci->bar;
        return;
    }
    rd->db_bar = qpci_iomap(vpci->pdev, shm.bar, &size);
    g_assert_cmpuint(shm.offset + shm.length, <=, size);
}

bool qvrdma_ring_try_features(QVrdmaDev *d, uint64_t features)
{
    QVirtioDevice *vdev = &d->vpci->vdev;
    uint8_t status;

    qvirtio_start_device(vdev);         /* reset, ACKNOWLEDGE, DRIVER */
    vdev->bus->set_features(vdev, (1ull << VIRTIO_F_VERSION_1) | features);
    status = vdev->bus->get_status(vdev) | VIRTIO_CONFIG_S_FEATURES_OK;
    vdev->bus->set_status(vdev, status);
    return vdev->bus->get_status(vdev) & VIRTIO_CONFIG_S_FEATURES_OK;
}

/* ---- doorbells ---------------------------------------------------------- */

static uint64_t db_page_off(QVrdmaRingDev *rd, uint32_t page, uint32_t off)
{
    uint64_t at = (uint64_t)page * VIRTIO_RDMA_DB_PAGE + off;

    g_assert_cmpuint(at + 8, <=, rd->db_length);
    return rd->db_offset + at;
}

void qvrdma_ring_doorbell_at(QVrdmaRingDev *rd, uint32_t page, uint32_t off,
                             uint64_t value)
{
    qpci_io_writeq(rd->d->vpci->pdev, rd->db_bar, db_page_off(rd, page, off),
                   value);
}

void qvrdma_ring_doorbell(QVrdmaRingDev *rd, uint32_t page, uint64_t value)
{
    qvrdma_ring_doorbell_at(rd, page, 0, value);
}

uint64_t qvrdma_ring_doorbell_read(QVrdmaRingDev *rd, uint32_t page,
                                   uint32_t off)
{
    return qpci_io_readq(rd->d->vpci->pdev, rd->db_bar,
                         db_page_off(rd, page, off));
}

/* ---- commands ----------------------------------------------------------- */

uint8_t qvrdma_alloc_context(QVirtioRdma *r, uint32_t *ctx)
{
    struct virtio_rdma_rsp_alloc_context rsp = { 0 };
    uint8_t st = qvrdma_cmd(r, VIRTIO_RDMA_CMD_ALLOC_CONTEXT, NULL, 0,
                            &rsp, sizeof(rsp));

    if (ctx) {
        *ctx = le32_to_cpu(rsp.ctx);
    }
    return st;
}

uint8_t qvrdma_free_context(QVirtioRdma *r, uint32_t ctx)
{
    struct virtio_rdma_cmd_free_context req = { .ctx = cpu_to_le32(ctx) };

    return qvrdma_cmd(r, VIRTIO_RDMA_CMD_FREE_CONTEXT, &req, sizeof(req),
                      NULL, 0);
}

/* The tests run on little-endian hosts only (x86); structs go as they are. */
uint8_t qvrdma_create_cq_ring(QVirtioRdma *r, uint32_t ctx, uint32_t cqe,
                              const struct virtio_rdma_ring *ring,
                              uint32_t *cqn)
{
    struct virtio_rdma_cmd_create_cq_ring req = {
        .ctx = ctx, .cqe = cqe, .ring = *ring,
    };
    struct virtio_rdma_rsp_create_cq rsp = { 0 };
    uint8_t st = qvrdma_cmd(r, VIRTIO_RDMA_CMD_CREATE_CQ_RING, &req,
                            sizeof(req), &rsp, sizeof(rsp));

    if (cqn) {
        *cqn = rsp.cqn;
    }
    return st;
}

uint8_t qvrdma_create_qp_ring(QVirtioRdma *r,
                              const struct virtio_rdma_cmd_create_qp_ring *req,
                              uint32_t *qpn, uint32_t *wire_qpn)
{
    struct virtio_rdma_rsp_create_qp_wire rsp = { 0 };
    uint8_t st = qvrdma_cmd(r, VIRTIO_RDMA_CMD_CREATE_QP_RING, req,
                            sizeof(*req), &rsp, sizeof(rsp));

    if (st == VIRTIO_RDMA_OK) {
        g_assert_cmpuint(r->last_used_len, ==, 1 + sizeof(rsp));
    }
    if (qpn) {
        *qpn = rsp.qpn;
    }
    if (wire_qpn) {
        *wire_qpn = rsp.wire_qpn;
    }
    return st;
}

/* ---- a ring's memory ---------------------------------------------------- */

uint32_t qvrdma_gring_npages(uint8_t log_entries, uint8_t log_stride)
{
    uint64_t bytes = ((uint64_t)1 << (log_entries + log_stride)) +
                     QVRDMA_RING_TRAILER;

    return DIV_ROUND_UP(bytes, VIRTIO_RDMA_PAGE_SIZE);
}

uint8_t qvrdma_gring_log_stride(uint32_t bytes)
{
    uint8_t log = VIRTIO_RDMA_RING_MIN_LOG_STRIDE;

    while ((1u << log) < bytes) {
        log++;
    }
    g_assert_cmpuint(log, <=, VIRTIO_RDMA_RING_MAX_LOG_STRIDE);
    return log;
}

void qvrdma_gring_alloc(QVirtioRdma *r, QVrdmaGRing *g, uint8_t log_entries,
                        uint8_t log_stride)
{
    uint32_t npages = qvrdma_gring_npages(log_entries, log_stride);

    memset(g, 0, sizeof(*g));
    g->qts = r->qts;
    g->log_entries = log_entries;
    g->log_stride = log_stride;
    qvrdma_pt_build(r, &g->pt, npages, NULL);
    /* Owner bits of 0: no entry of the first pass is valid yet. */
    qtest_memset(r->qts, g->pt.data, 0,
                 (size_t)npages * VIRTIO_RDMA_PAGE_SIZE);
}

void qvrdma_gring_free(QVirtioRdma *r, QVrdmaGRing *g)
{
    if (g->pt.npages) {
        qvrdma_pt_free(r, &g->pt);
    }
    memset(g, 0, sizeof(*g));
}

struct virtio_rdma_ring qvrdma_gring_desc(const QVrdmaGRing *g)
{
    return (struct virtio_rdma_ring) {
        .pages = g->pt.l1,
        .npages = g->pt.npages,
        .log_entries = g->log_entries,
        .log_stride = g->log_stride,
    };
}

uint64_t qvrdma_gring_entry(const QVrdmaGRing *g, uint32_t i)
{
    uint32_t slot = i & (qvrdma_gring_entries(g) - 1);

    return g->pt.data + ((uint64_t)slot << g->log_stride);
}

uint64_t qvrdma_gring_trailer(const QVrdmaGRing *g)
{
    return g->pt.data + ((uint64_t)qvrdma_gring_entries(g) << g->log_stride);
}

uint32_t qvrdma_gring_driver_idx(const QVrdmaGRing *g)
{
    return qtest_readl(g->qts, qvrdma_gring_trailer(g) +
                       offsetof(struct virtio_rdma_ring_trailer, driver_idx));
}

uint32_t qvrdma_gring_device_idx(const QVrdmaGRing *g)
{
    return qtest_readl(g->qts, qvrdma_gring_trailer(g) +
                       offsetof(struct virtio_rdma_ring_trailer, device_idx));
}

void qvrdma_gring_set_driver_idx(const QVrdmaGRing *g, uint32_t v)
{
    qtest_writel(g->qts, qvrdma_gring_trailer(g) +
                 offsetof(struct virtio_rdma_ring_trailer, driver_idx), v);
}

bool qvrdma_gring_wait_device_idx(const QVrdmaGRing *g, uint32_t want,
                                  gint64 timeout_us)
{
    gint64 start = g_get_monotonic_time();

    while (qvrdma_gring_device_idx(g) != want) {
        if (g_get_monotonic_time() - start >= timeout_us) {
            return false;
        }
        g_usleep(QVRDMA_RING_POLL_US);
    }
    return true;
}

void qvrdma_gring_write_entry(const QVrdmaGRing *g, uint32_t i,
                              const void *data, size_t len)
{
    g_assert_cmpuint(len, <=, 1u << g->log_stride);
    qtest_memwrite(g->qts, qvrdma_gring_entry(g, i), data, len);
}

/* ---- CQs ---------------------------------------------------------------- */

QVrdmaRingCq *qvrdma_ring_cq_create(QVrdmaRingDev *rd, uint32_t ctx,
                                    uint32_t cqe, uint8_t log_entries)
{
    QVrdmaRingCq *cq = g_new0(QVrdmaRingCq, 1);
    struct virtio_rdma_ring desc;
    uint8_t st;

    cq->rd = rd;
    cq->ctx = ctx;
    cq->cqe = cqe;
    qvrdma_gring_alloc(&rd->d->r, &cq->ring, log_entries,
                       VIRTIO_RDMA_CQE_LOG_STRIDE);
    desc = qvrdma_gring_desc(&cq->ring);
    st = qvrdma_create_cq_ring(&rd->d->r, ctx, cqe, &desc, &cq->cqn);
    g_assert_cmpstr(qvrdma_status_name(st), ==, "OK");
    return cq;
}

bool qvrdma_ring_cq_peek(QVrdmaRingCq *cq, uint32_t i,
                         struct virtio_rdma_cqe *out)
{
    uint64_t at = qvrdma_gring_entry(&cq->ring, i);
    /* Bit 0 of the owner byte is 1 on even passes. */
    uint8_t want = ((i >> cq->ring.log_entries) + 1) & VIRTIO_RDMA_CQE_OWNER;
    uint8_t owner = qtest_readb(cq->ring.qts,
                                at + offsetof(struct virtio_rdma_cqe, owner));

    if ((owner & VIRTIO_RDMA_CQE_OWNER) != want) {
        return false;
    }
    qtest_memread(cq->ring.qts, at, out, sizeof(*out));
    return true;
}

bool qvrdma_ring_cq_poll(QVrdmaRingCq *cq, struct virtio_rdma_cq_req *cqe,
                         gint64 timeout_us)
{
    static const uint8_t zero[sizeof(((struct virtio_rdma_cqe *)0)->reserved)];
    gint64 start = g_get_monotonic_time();
    struct virtio_rdma_cqe e;

    while (!qvrdma_ring_cq_peek(cq, cq->cons, &e)) {
        if (g_get_monotonic_time() - start >= timeout_us) {
            return false;
        }
        g_usleep(QVRDMA_RING_POLL_US);
    }
    g_assert_cmpmem(e.reserved, sizeof(e.reserved), zero, sizeof(zero));
    *cqe = e.wc;
    cq->cons++;
    qvrdma_gring_set_driver_idx(&cq->ring, cq->cons);
    cq->taken++;
    if (e.wc.status) {
        cq->taken_errors++;
    }
    return true;
}

void qvrdma_ring_cq_wait(QVrdmaRingCq *cq, struct virtio_rdma_cq_req *cqe)
{
    if (!qvrdma_ring_cq_poll(cq, cqe, QVRDMA_DP_TIMEOUT_US)) {
        g_error("virtio-rdma: no completion at counter %u of CQ ring %u "
                "within %d s (device_idx %u, device status 0x%x)", cq->cons,
                cq->cqn, QVRDMA_DP_TIMEOUT_US / 1000000,
                qvrdma_gring_device_idx(&cq->ring),
                qvrdma_status(&cq->rd->d->r));
    }
}

void qvrdma_ring_cq_arm(QVrdmaRingCq *cq, uint32_t flags)
{
    qvrdma_ring_doorbell(cq->rd, cq->ctx,
                         VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_CQ_ARM, cq->cqn,
                                        flags));
}

void qvrdma_ring_cq_destroy(QVrdmaRingCq *cq)
{
    uint8_t st = qvrdma_destroy_cq(&cq->rd->d->r, cq->cqn);

    g_assert_cmpstr(qvrdma_status_name(st), ==, "OK");
}

void qvrdma_ring_cq_free(QVrdmaRingCq *cq)
{
    qvrdma_gring_free(&cq->rd->d->r, &cq->ring);
    g_free(cq);
}

/* ---- QPs ---------------------------------------------------------------- */

struct virtio_rdma_cmd_create_qp_ring
qvrdma_ring_qp_req(uint32_t ctx, uint32_t pdn, uint32_t send_cqn,
                   uint32_t recv_cqn, uint32_t max_wr, uint32_t max_sge,
                   const QVrdmaGRing *sq, const QVrdmaGRing *rq)
{
    struct virtio_rdma_cmd_create_qp_ring req = {
        .qp = qvrdma_qp_req(pdn, VIRTIO_RDMA_QPT_RC, send_cqn),
        .ctx = ctx,
    };

    req.qp.sq_sig_type = VIRTIO_RDMA_SIGNAL_REQ_WR;
    req.qp.recv_cqn = recv_cqn;
    req.qp.max_send_wr = sq ? max_wr : 0;
    req.qp.max_recv_wr = rq ? max_wr : 0;
    req.qp.max_send_sge = max_sge;
    req.qp.max_recv_sge = max_sge;
    if (sq) {
        req.sq = qvrdma_gring_desc(sq);
    }
    if (rq) {
        req.rq = qvrdma_gring_desc(rq);
    }
    return req;
}

static QVrdmaRingQp *ring_qp_create(QVrdmaRingDev *rd, uint32_t ctx,
                                    uint32_t pdn, QVrdmaRingCq *send_cq,
                                    QVrdmaRingCq *recv_cq, uint32_t max_wr,
                                    uint32_t max_sge, uint8_t log_entries,
                                    const QVrdmaRingSrq *srq)
{
    QVrdmaRingQp *qp = g_new0(QVrdmaRingQp, 1);
    QVirtioRdma *r = &rd->d->r;
    struct virtio_rdma_cmd_create_qp_ring req;
    uint8_t st;
    const uint32_t sges = max_sge * sizeof(struct virtio_rdma_sge);

    g_assert_cmpuint(max_wr, <=, 1u << log_entries);
    qp->rd = rd;
    qp->ctx = ctx;
    qvrdma_gring_alloc(r, &qp->sq, log_entries, qvrdma_gring_log_stride(
                           sizeof(struct virtio_rdma_sq_req) + sges));
    if (!srq) {
        qvrdma_gring_alloc(r, &qp->rq, log_entries, qvrdma_gring_log_stride(
                               sizeof(struct virtio_rdma_rq_req) + sges));
    }
    req = qvrdma_ring_qp_req(ctx, pdn, send_cq->cqn, recv_cq->cqn, max_wr,
                             max_sge, &qp->sq, srq ? NULL : &qp->rq);
    if (srq) {
        req.qp.max_recv_sge = 0;
        req.srqn = cpu_to_le32(srq->srqn);
    }
    st = qvrdma_create_qp_ring(r, &req, &qp->vq.qpn, &qp->vq.wire_qpn);
    g_assert_cmpstr(qvrdma_status_name(st), ==, "OK");
    qp->vq.type = VIRTIO_RDMA_QPT_RC;
    qp->vq.max_send_sge = max_sge;
    qp->vq.max_recv_sge = srq ? 0 : max_sge;
    return qp;
}

QVrdmaRingQp *qvrdma_ring_qp_create_req(QVrdmaRingDev *rd, uint32_t ctx,
                                        const struct virtio_rdma_cmd_create_qp *qp_req,
                                        uint8_t log_entries)
{
    QVrdmaRingQp *qp = g_new0(QVrdmaRingQp, 1);
    QVirtioRdma *r = &rd->d->r;
    struct virtio_rdma_cmd_create_qp_ring req = { .qp = *qp_req, .ctx = ctx };
    const uint32_t sqe = sizeof(struct virtio_rdma_sq_req) +
        qp_req->max_send_sge * sizeof(struct virtio_rdma_sge);
    const uint32_t rqe = sizeof(struct virtio_rdma_rq_req) +
        qp_req->max_recv_sge * sizeof(struct virtio_rdma_sge);
    uint8_t st;

    g_assert_cmpuint(qp_req->max_send_wr, <=, 1u << log_entries);
    g_assert_cmpuint(qp_req->max_recv_wr, <=, 1u << log_entries);
    qp->rd = rd;
    qp->ctx = ctx;
    if (qp_req->max_send_wr) {
        qvrdma_gring_alloc(r, &qp->sq, log_entries,
                           qvrdma_gring_log_stride(sqe));
        req.sq = qvrdma_gring_desc(&qp->sq);
    }
    if (qp_req->max_recv_wr) {
        qvrdma_gring_alloc(r, &qp->rq, log_entries,
                           qvrdma_gring_log_stride(rqe));
        req.rq = qvrdma_gring_desc(&qp->rq);
    }
    st = qvrdma_create_qp_ring(r, &req, &qp->vq.qpn, &qp->vq.wire_qpn);
    g_assert_cmpstr(qvrdma_status_name(st), ==, "OK");
    qp->vq.type = qp_req->qp_type;
    qp->vq.max_send_sge = qp_req->max_send_sge;
    qp->vq.max_recv_sge = qp_req->max_recv_sge;
    return qp;
}

QVrdmaRingQp *qvrdma_ring_qp_create(QVrdmaRingDev *rd, uint32_t ctx,
                                    uint32_t pdn, QVrdmaRingCq *send_cq,
                                    QVrdmaRingCq *recv_cq, uint32_t max_wr,
                                    uint32_t max_sge, uint8_t log_entries)
{
    return ring_qp_create(rd, ctx, pdn, send_cq, recv_cq, max_wr, max_sge,
                          log_entries, NULL);
}

QVrdmaRingQp *qvrdma_ring_qp_create_on_srq(QVrdmaRingDev *rd, uint32_t ctx,
                                           uint32_t pdn,
                                           QVrdmaRingCq *send_cq,
                                           QVrdmaRingCq *recv_cq,
                                           uint32_t max_wr, uint32_t max_sge,
                                           uint8_t log_entries,
                                           const QVrdmaRingSrq *srq)
{
    return ring_qp_create(rd, ctx, pdn, send_cq, recv_cq, max_wr, max_sge,
                          log_entries, srq);
}

uint8_t qvrdma_create_srq_ring(QVirtioRdma *r,
                               const struct virtio_rdma_cmd_create_srq_ring *req,
                               uint32_t *srqn)
{
    struct virtio_rdma_rsp_create_srq rsp = { 0 };
    uint8_t st = qvrdma_cmd(r, VIRTIO_RDMA_CMD_CREATE_SRQ_RING, req,
                            sizeof(*req), &rsp, sizeof(rsp));

    *srqn = le32_to_cpu(rsp.srqn);
    return st;
}

QVrdmaRingSrq *qvrdma_ring_srq_create(QVrdmaRingDev *rd, uint32_t ctx,
                                      uint32_t pdn, uint32_t max_wr,
                                      uint32_t max_sge, uint8_t log_entries)
{
    QVrdmaRingSrq *srq = g_new0(QVrdmaRingSrq, 1);
    struct virtio_rdma_cmd_create_srq_ring req = {
        .ctx = cpu_to_le32(ctx),
        .pdn = cpu_to_le32(pdn),
        .max_wr = cpu_to_le32(max_wr),
        .max_sge = cpu_to_le32(max_sge),
    };
    uint8_t st;

    srq->rd = rd;
    srq->ctx = ctx;
    qvrdma_gring_alloc(&rd->d->r, &srq->ring, log_entries,
                       qvrdma_gring_log_stride(
                           sizeof(struct virtio_rdma_rq_req) +
                           max_sge * sizeof(struct virtio_rdma_sge)));
    req.ring = qvrdma_gring_desc(&srq->ring);
    st = qvrdma_create_srq_ring(&rd->d->r, &req, &srq->srqn);
    g_assert_cmpstr(qvrdma_status_name(st), ==, "OK");
    return srq;
}

void qvrdma_ring_srq_destroy(QVrdmaRingSrq *srq)
{
    struct virtio_rdma_cmd_destroy_srq req = {
        .srqn = cpu_to_le32(srq->srqn),
    };
    uint8_t st = qvrdma_cmd(&srq->rd->d->r, VIRTIO_RDMA_CMD_DESTROY_SRQ,
                            &req, sizeof(req), NULL, 0);

    g_assert_cmpstr(qvrdma_status_name(st), ==, "OK");
}

void qvrdma_ring_srq_free(QVrdmaRingSrq *srq)
{
    qvrdma_gring_free(&srq->rd->d->r, &srq->ring);
    g_free(srq);
}

void qvrdma_ring_qp_destroy(QVrdmaRingQp *qp)
{
    uint8_t st = qvrdma_destroy_qp(&qp->rd->d->r, qp->vq.qpn);

    g_assert_cmpstr(qvrdma_status_name(st), ==, "OK");
}

void qvrdma_ring_qp_free(QVrdmaRingQp *qp)
{
    qvrdma_gring_free(&qp->rd->d->r, &qp->sq);
    qvrdma_gring_free(&qp->rd->d->r, &qp->rq);
    g_free(qp);
}

void qvrdma_ring_qp_counters_reset(QVrdmaRingQp *qp)
{
    qp->sq_prod = 0;
    qp->rq_prod = 0;
}

/* Waits until the slot of producer counter @prod is the driver's again. */
static void wait_slot_free(const QVrdmaGRing *g, uint32_t prod)
{
    gint64 start = g_get_monotonic_time();

    while (prod - qvrdma_gring_device_idx(g) >= qvrdma_gring_entries(g)) {
        if (g_get_monotonic_time() - start >= QVRDMA_DP_TIMEOUT_US) {
            g_error("virtio-rdma: ring slot of counter %u still the device's "
                    "after %d s (device_idx %u)", prod,
                    QVRDMA_DP_TIMEOUT_US / 1000000,
                    qvrdma_gring_device_idx(g));
        }
        g_usleep(QVRDMA_RING_POLL_US);
    }
}

/* @hdr (@hdr_len bytes) + @n_sge SGEs into the slot of *@prod, then ++. */
static void write_wqe(const QVrdmaGRing *g, uint32_t *prod, const void *hdr,
                      size_t hdr_len, const struct virtio_rdma_sge *sge,
                      uint32_t n_sge)
{
    size_t len = hdr_len + n_sge * sizeof(*sge);
    g_autofree uint8_t *wqe = g_malloc0(len);

    memcpy(wqe, hdr, hdr_len);
    if (n_sge) {
        memcpy(wqe + hdr_len, sge, n_sge * sizeof(*sge));
    }
    wait_slot_free(g, *prod);
    qvrdma_gring_write_entry(g, *prod, wqe, len);
    (*prod)++;
}

void qvrdma_ring_write_send(QVrdmaRingQp *qp,
                            const struct virtio_rdma_sq_req *req,
                            const struct virtio_rdma_sge *sge, uint32_t n_sge)
{
    struct virtio_rdma_sq_req hdr = *req;

    hdr.num_sge = cpu_to_le32(n_sge);
    write_wqe(&qp->sq, &qp->sq_prod, &hdr, sizeof(hdr), sge, n_sge);
}

void qvrdma_ring_write_recv(QVrdmaRingQp *qp, uint64_t wr_id,
                            const struct virtio_rdma_sge *sge, uint32_t n_sge)
{
    struct virtio_rdma_rq_req hdr = {
        .num_sge = cpu_to_le32(n_sge),
        .wr_id = cpu_to_le64(wr_id),
    };

    write_wqe(&qp->rq, &qp->rq_prod, &hdr, sizeof(hdr), sge, n_sge);
}

void qvrdma_ring_srq_write(QVrdmaRingSrq *srq, uint64_t wr_id,
                           const struct virtio_rdma_sge *sge, uint32_t n_sge)
{
    struct virtio_rdma_rq_req hdr = {
        .num_sge = cpu_to_le32(n_sge),
        .wr_id = cpu_to_le64(wr_id),
    };

    write_wqe(&srq->ring, &srq->prod, &hdr, sizeof(hdr), sge, n_sge);
}

void qvrdma_ring_srq_doorbell(QVrdmaRingSrq *srq)
{
    qvrdma_ring_doorbell(srq->rd, srq->ctx,
                         VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_SRQ, srq->srqn,
                                        srq->prod));
}

void qvrdma_ring_sq_doorbell(QVrdmaRingQp *qp)
{
    qvrdma_ring_doorbell(qp->rd, qp->ctx,
                         VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_SQ, qp->vq.qpn,
                                        qp->sq_prod));
}

void qvrdma_ring_rq_doorbell(QVrdmaRingQp *qp)
{
    qvrdma_ring_doorbell(qp->rd, qp->ctx,
                         VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_RQ, qp->vq.qpn,
                                        qp->rq_prod));
}

void qvrdma_ring_post_send(QVrdmaRingQp *qp,
                           const struct virtio_rdma_sq_req *req,
                           const struct virtio_rdma_sge *sge, uint32_t n_sge)
{
    qvrdma_ring_write_send(qp, req, sge, n_sge);
    qvrdma_ring_sq_doorbell(qp);
}

void qvrdma_ring_post_recv(QVrdmaRingQp *qp, uint64_t wr_id,
                           const struct virtio_rdma_sge *sge, uint32_t n_sge)
{
    qvrdma_ring_write_recv(qp, wr_id, sge, n_sge);
    qvrdma_ring_rq_doorbell(qp);
}
