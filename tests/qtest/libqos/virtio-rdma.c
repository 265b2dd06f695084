/*
 * libqos driver for virtio-rdma-pci (see virtio-rdma.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "../libqtest.h"
#include "qemu/module.h"
#include "qemu/bswap.h"
#include "standard-headers/linux/virtio_config.h"
#include "standard-headers/linux/virtio_ring.h"
#include "qgraph.h"
#include "hw/rdma/virtio-rdma-names.h"
#include "virtio-rdma.h"

/* ---- bring-up ------------------------------------------------------------ */

static void qvrdma_setup(QVirtioRdma *r)
{
    uint64_t features = qvirtio_get_features(r->vdev);

    features &= (1ull << VIRTIO_F_VERSION_1) |
                (1ull << VIRTIO_RING_F_INDIRECT_DESC) | r->want_features;
    qvirtio_set_features(r->vdev, features);
    r->features = features & ((1ull << VIRTIO_TRANSPORT_F_START) - 1);
    r->ctrl = qvirtqueue_setup(r->vdev, r->alloc, 0);
    qvirtio_set_driver_ok(r->vdev);
}

void qvrdma_init(QVirtioRdma *r, QVirtioDevice *vdev, QTestState *qts,
                 QGuestAllocator *alloc)
{
    g_assert_cmpint(vdev->device_type, ==, VIRTIO_ID_RDMA_DEVICE);
    r->vdev = vdev;
    r->qts = qts;
    r->alloc = alloc;
    r->buf = guest_alloc(alloc, 2 * QVRDMA_BUF_SIZE);
    qvrdma_setup(r);
}

static void qvrdma_free_ctrl(QVirtioRdma *r)
{
    if (r->ctrl) {
        qvirtqueue_cleanup(r->vdev->bus, r->ctrl, r->alloc);
        r->ctrl = NULL;
    }
}

void qvrdma_cleanup(QVirtioRdma *r)
{
    qvrdma_free_ctrl(r);
    if (r->buf) {
        guest_free(r->alloc, r->buf);
        r->buf = 0;
    }
}

void qvrdma_reset(QVirtioRdma *r)
{
    qvirtio_reset(r->vdev);
}

void qvrdma_reinit(QVirtioRdma *r)
{
    qvrdma_free_ctrl(r);
    qvirtio_start_device(r->vdev);      /* reset, ACKNOWLEDGE, DRIVER */
    qvrdma_setup(r);
}

void qvrdma_renegotiate(QVirtioRdma *r, uint64_t want)
{
    r->want_features = want;
    qvrdma_reinit(r);
}

uint8_t qvrdma_status(QVirtioRdma *r)
{
    return r->vdev->bus->get_status(r->vdev);
}

void qvrdma_read_config(QVirtioRdma *r, struct virtio_rdma_config *cfg)
{
    uint8_t *p = (uint8_t *)cfg;
    size_t i;

    for (i = 0; i < sizeof(*cfg); i++) {
        p[i] = qvirtio_config_readb(r->vdev, i);
    }
}

/* ---- raw framing ------------------------------------------------------------ */

typedef struct QVrdmaSeg {
    uint64_t addr;
    uint32_t len;
    bool write;
} QVrdmaSeg;

/* Cuts [addr, addr + len) into segments as @split says; @returns the count. */
static unsigned qvrdma_cut(QVrdmaSeg *segs, uint64_t addr, size_t len,
                           const size_t *split, unsigned n_split, bool write)
{
    unsigned i, n = 0;
    size_t sum = 0;

    if (!split) {
        if (len) {
            segs[n++] = (QVrdmaSeg) { addr, len, write };
        }
        return n;
    }
    for (i = 0; i < n_split; i++) {
        segs[n++] = (QVrdmaSeg) { addr + sum, split[i], write };
        sum += split[i];
    }
    g_assert_cmpuint(sum, ==, len);
    return n;
}

bool qvrdma_submit(QVirtioRdma *r, const QVrdmaFrame *f, void *in,
                   uint32_t *used_len)
{
    QTestState *qts = r->qts;
    QVirtQueue *vq = r->ctrl;
    uint64_t out_addr = r->buf, in_addr = r->buf + QVRDMA_BUF_SIZE;
    gint64 timeout = f->timeout_us ? f->timeout_us : QVRDMA_TIMEOUT_US;
    unsigned max_segs = (f->out_split ? f->n_out_split : 1) +
                        (f->in_split ? f->n_in_split : 1);
    g_autofree QVrdmaSeg *segs = g_new0(QVrdmaSeg, max_segs);
    QVRingIndirectDesc *ind = NULL;
    uint32_t head = 0, desc_idx, len = 0;
    unsigned n, i;
    gint64 start;
    bool done;

    g_assert_nonnull(vq);
    g_assert_cmpuint(f->out_len, <=, QVRDMA_BUF_SIZE);
    g_assert_cmpuint(f->in_len, <=, QVRDMA_BUF_SIZE);

    if (f->out_len) {
        qtest_memwrite(qts, out_addr, f->out, f->out_len);
    }
    if (f->in_len) {
        qtest_memset(qts, in_addr, 0xff, f->in_len);
    }
    n = qvrdma_cut(segs, out_addr, f->out_len, f->out_split, f->n_out_split,
                   false);
    n += qvrdma_cut(segs + n, in_addr, f->in_len, f->in_split, f->n_in_split,
                    true);
    g_assert_cmpuint(n, >, 0);
    g_assert_cmpuint(n, <=, vq->size);

    /* Control requests are synchronous: one chain in flight at a time. */
    qvirtqueue_reset_pool(vq);
    if (f->indirect) {
        ind = qvring_indirect_desc_setup(qts, r->vdev, r->alloc, n);
        for (i = 0; i < n; i++) {
            qvring_indirect_desc_add(r->vdev, qts, ind, segs[i].addr,
                                     segs[i].len, segs[i].write);
        }
        head = qvirtqueue_add_indirect(qts, vq, ind);
    } else {
        for (i = 0; i < n; i++) {
            uint32_t idx = qvirtqueue_add(qts, vq, segs[i].addr, segs[i].len,
                                          segs[i].write, i + 1 < n);
            if (i == 0) {
                head = idx;
            }
        }
    }
    qvirtqueue_kick(qts, r->vdev, vq, head);
    if (f->after_kick) {
        f->after_kick(f->after_kick_opaque);
    }

    start = g_get_monotonic_time();
    while (!(done = qvirtqueue_get_buf(qts, vq, &desc_idx, &len)) &&
           g_get_monotonic_time() - start <= timeout) {
        g_usleep(1000);
    }
    if (ind) {
        guest_free(r->alloc, ind->desc);
        g_free(ind);
    }
    if (!done) {
        return false;
    }
    g_assert_cmpuint(desc_idx, ==, head);
    r->last_used_len = len;
    if (used_len) {
        *used_len = len;
    }
    if (in && f->in_len) {
        qtest_memread(qts, in_addr, in, f->in_len);
    }
    return true;
}

uint8_t qvrdma_cmd(QVirtioRdma *r, uint8_t cmd, const void *req,
                   size_t req_len, void *rsp, size_t rsp_len)
{
    g_autofree uint8_t *out = g_malloc(1 + req_len);
    g_autofree uint8_t *in = g_malloc(1 + rsp_len);
    size_t out_split[2] = { 1, req_len };
    size_t in_split[2] = { 1, rsp_len };
    QVrdmaFrame f = {
        .out = out,
        .out_len = 1 + req_len,
        .out_split = out_split,
        .n_out_split = req_len ? 2 : 1,
        .in_len = 1 + rsp_len,
        .in_split = in_split,
        .n_in_split = rsp_len ? 2 : 1,
    };

    out[0] = cmd;
    if (req_len) {
        memcpy(out + 1, req, req_len);
    }
    if (!qvrdma_submit(r, &f, in, NULL)) {
        g_error("virtio-rdma: %s got no answer (device status 0x%x)",
                qvrdma_cmd_name(cmd), qvrdma_status(r));
    }
    g_assert_cmpuint(r->last_used_len, >=, 1);
    if (in[0] == VIRTIO_RDMA_OK && rsp_len) {
        memcpy(rsp, in + 1, rsp_len);
    }
    return in[0];
}

QVrdmaBatch qvrdma_cmd_batch(QVirtioRdma *r, uint8_t cmd, const void *req,
                             size_t req_len, size_t rsp_len, unsigned n,
                             int timeout_s)
{
    QVirtQueue *vq = r->ctrl;
    QTestState *qts = r->qts;
    const size_t slot = QEMU_ALIGN_UP(1 + req_len, 64) +
                        QEMU_ALIGN_UP(1 + rsp_len, 64);
    const size_t in_off = QEMU_ALIGN_UP(1 + req_len, 64);
    uint64_t bufs = guest_alloc(r->alloc, n * slot);
    uint16_t avail_idx, used0;
    QVrdmaBatch b = { 0 };
    gint64 t0, t;
    unsigned i;

    g_assert_nonnull(vq);
    g_assert_cmpuint(2 * n, <=, vq->size);
    avail_idx = qtest_readw(qts, vq->avail + 2);
    used0 = qtest_readw(qts, vq->used + 2);
    g_assert_cmpuint(used0, ==, vq->last_used_idx);
    for (i = 0; i < n; i++) {
        uint64_t out = bufs + i * slot, in = out + in_off;
        uint64_t desc = vq->desc + 16ull * 2 * i;

        qtest_writeb(qts, out, cmd);
        if (req_len) {
            qtest_memwrite(qts, out + 1, req, req_len);
        }
        qtest_memset(qts, in, 0xff, 1 + rsp_len);
        qtest_writeq(qts, desc, out);
        qtest_writel(qts, desc + 8, 1 + req_len);
        qtest_writew(qts, desc + 12, VRING_DESC_F_NEXT);
        qtest_writew(qts, desc + 14, 2 * i + 1);
        qtest_writeq(qts, desc + 16, in);
        qtest_writel(qts, desc + 24, 1 + rsp_len);
        qtest_writew(qts, desc + 28, VRING_DESC_F_WRITE);
        /* Unused (no NEXT), but libqos chains by it later: i -> i + 1. */
        qtest_writew(qts, desc + 30, 2 * i + 2);
        qtest_writew(qts, vq->avail + 4 + 2 * ((avail_idx + i) % vq->size),
                     2 * i);
    }
    qtest_writew(qts, vq->avail + 2, avail_idx + n);

    t0 = g_get_monotonic_time();
    r->vdev->bus->virtqueue_kick(r->vdev, vq);
    b.kick_us = b.max_stall_us = g_get_monotonic_time() - t0;
    for (;;) {
        uint16_t used;
        gint64 dt;

        t = g_get_monotonic_time();
        used = qtest_readw(qts, vq->used + 2);
        dt = g_get_monotonic_time() - t;
        b.max_stall_us = MAX(b.max_stall_us, dt);
        b.reads++;
        if ((uint16_t)(used - used0) >= n) {
            break;
        }
        if (g_get_monotonic_time() - t0 > timeout_s * G_USEC_PER_SEC) {
            g_error("virtio-rdma: %u %s in one kick: %u used after %d s",
                    n, qvrdma_cmd_name(cmd), (uint16_t)(used - used0),
                    timeout_s);
        }
    }
    b.total_us = g_get_monotonic_time() - t0;
    vq->last_used_idx = used0 + n;
    b.status = g_malloc(n);
    b.rsp = g_malloc0(n * rsp_len + 1);
    for (i = 0; i < n; i++) {
        uint64_t in = bufs + i * slot + in_off;

        b.status[i] = qtest_readb(qts, in);
        if (rsp_len) {
            qtest_memread(qts, in + 1, b.rsp + i * rsp_len, rsp_len);
        }
    }
    guest_free(r->alloc, bufs);
    return b;
}

void qvrdma_batch_free(QVrdmaBatch *b)
{
    g_clear_pointer(&b->status, g_free);
    g_clear_pointer(&b->rsp, g_free);
}

/* ---- typed commands ------------------------------------------------------ */

uint8_t qvrdma_query_port(QVirtioRdma *r, uint32_t port,
                          struct virtio_rdma_port_attr *attr)
{
    struct virtio_rdma_cmd_query_port req = { .port = cpu_to_le32(port) };

    return qvrdma_cmd(r, VIRTIO_RDMA_CMD_QUERY_PORT, &req, sizeof(req),
                      attr, sizeof(*attr));
}

uint8_t qvrdma_destroy_cq(QVirtioRdma *r, uint32_t cqn)
{
    struct virtio_rdma_cmd_destroy_cq req = { .cqn = cpu_to_le32(cqn) };

    return qvrdma_cmd(r, VIRTIO_RDMA_CMD_DESTROY_CQ, &req, sizeof(req),
                      NULL, 0);
}

uint8_t qvrdma_create_pd(QVirtioRdma *r, uint32_t *pdn)
{
    struct virtio_rdma_rsp_create_pd rsp = { 0 };
    uint8_t st = qvrdma_cmd(r, VIRTIO_RDMA_CMD_CREATE_PD, NULL, 0,
                            &rsp, sizeof(rsp));

    if (pdn) {
        *pdn = le32_to_cpu(rsp.pdn);
    }
    return st;
}

uint8_t qvrdma_destroy_pd(QVirtioRdma *r, uint32_t pdn)
{
    struct virtio_rdma_cmd_destroy_pd req = { .pdn = cpu_to_le32(pdn) };

    return qvrdma_cmd(r, VIRTIO_RDMA_CMD_DESTROY_PD, &req, sizeof(req),
                      NULL, 0);
}

static void qvrdma_mr_from_le(struct virtio_rdma_rsp_mr *mr,
                              const struct virtio_rdma_rsp_mr *rsp)
{
    if (mr) {
        mr->mrn = le32_to_cpu(rsp->mrn);
        mr->lkey = le32_to_cpu(rsp->lkey);
        mr->rkey = le32_to_cpu(rsp->rkey);
    }
}

uint8_t qvrdma_get_dma_mr(QVirtioRdma *r, uint32_t pdn, uint32_t access,
                          struct virtio_rdma_rsp_mr *mr)
{
    struct virtio_rdma_cmd_get_dma_mr req = {
        .pdn = cpu_to_le32(pdn),
        .access_flags = cpu_to_le32(access),
    };
    struct virtio_rdma_rsp_mr rsp = { 0 };
    uint8_t st = qvrdma_cmd(r, VIRTIO_RDMA_CMD_GET_DMA_MR, &req, sizeof(req),
                            &rsp, sizeof(rsp));

    qvrdma_mr_from_le(mr, &rsp);
    return st;
}

uint8_t qvrdma_create_mr(QVirtioRdma *r, uint32_t pdn, uint32_t access,
                         uint32_t max_num_sg, struct virtio_rdma_rsp_mr *mr)
{
    struct virtio_rdma_cmd_create_mr req = {
        .pdn = cpu_to_le32(pdn),
        .access_flags = cpu_to_le32(access),
        .max_num_sg = cpu_to_le32(max_num_sg),
    };
    struct virtio_rdma_rsp_mr rsp = { 0 };
    uint8_t st = qvrdma_cmd(r, VIRTIO_RDMA_CMD_CREATE_MR, &req, sizeof(req),
                            &rsp, sizeof(rsp));

    qvrdma_mr_from_le(mr, &rsp);
    return st;
}

uint8_t qvrdma_map_mr_sg(QVirtioRdma *r, uint32_t mrn, uint32_t npages,
                         uint64_t start, uint64_t length, uint64_t pages,
                         uint32_t *mapped)
{
    struct virtio_rdma_cmd_map_mr_sg req = {
        .mrn = cpu_to_le32(mrn),
        .npages = cpu_to_le32(npages),
        .start = cpu_to_le64(start),
        .length = cpu_to_le64(length),
        .pages = cpu_to_le64(pages),
    };
    struct virtio_rdma_rsp_map_mr_sg rsp = { 0 };
    uint8_t st = qvrdma_cmd(r, VIRTIO_RDMA_CMD_MAP_MR_SG, &req, sizeof(req),
                            &rsp, sizeof(rsp));

    if (mapped) {
        *mapped = le32_to_cpu(rsp.npages);
    }
    return st;
}

uint8_t qvrdma_reg_user_mr(QVirtioRdma *r, uint32_t pdn, uint32_t access,
                           uint64_t start, uint64_t length, uint64_t virt_addr,
                           uint64_t pages, uint32_t npages,
                           struct virtio_rdma_rsp_mr *mr)
{
    struct virtio_rdma_cmd_reg_user_mr req = {
        .pdn = cpu_to_le32(pdn),
        .access_flags = cpu_to_le32(access),
        .start = cpu_to_le64(start),
        .length = cpu_to_le64(length),
        .virt_addr = cpu_to_le64(virt_addr),
        .pages = cpu_to_le64(pages),
        .npages = cpu_to_le32(npages),
    };
    struct virtio_rdma_rsp_mr rsp = { 0 };
    uint8_t st = qvrdma_cmd(r, VIRTIO_RDMA_CMD_REG_USER_MR, &req, sizeof(req),
                            &rsp, sizeof(rsp));

    qvrdma_mr_from_le(mr, &rsp);
    return st;
}

uint8_t qvrdma_dereg_mr(QVirtioRdma *r, uint32_t mrn)
{
    struct virtio_rdma_cmd_dereg_mr req = { .mrn = cpu_to_le32(mrn) };

    return qvrdma_cmd(r, VIRTIO_RDMA_CMD_DEREG_MR, &req, sizeof(req),
                      NULL, 0);
}

uint8_t qvrdma_modify_qp(QVirtioRdma *r, uint32_t qpn, uint32_t attr_mask,
                         const struct virtio_rdma_qp_attr *attr)
{
    struct virtio_rdma_cmd_modify_qp req = {
        .qpn = cpu_to_le32(qpn),
        .attr_mask = cpu_to_le32(attr_mask),
        .attrs = *attr,
    };

    return qvrdma_cmd(r, VIRTIO_RDMA_CMD_MODIFY_QP, &req, sizeof(req),
                      NULL, 0);
}

uint8_t qvrdma_query_qp(QVirtioRdma *r, uint32_t qpn, uint32_t attr_mask,
                        struct virtio_rdma_qp_attr *attr)
{
    struct virtio_rdma_cmd_query_qp req = {
        .qpn = cpu_to_le32(qpn),
        .attr_mask = cpu_to_le32(attr_mask),
    };

    return qvrdma_cmd(r, VIRTIO_RDMA_CMD_QUERY_QP, &req, sizeof(req),
                      attr, sizeof(*attr));
}

uint8_t qvrdma_destroy_qp(QVirtioRdma *r, uint32_t qpn)
{
    struct virtio_rdma_cmd_destroy_qp req = { .qpn = cpu_to_le32(qpn) };

    return qvrdma_cmd(r, VIRTIO_RDMA_CMD_DESTROY_QP, &req, sizeof(req),
                      NULL, 0);
}

uint8_t qvrdma_query_pkey(QVirtioRdma *r, uint32_t port, uint16_t index,
                          uint16_t *pkey)
{
    struct virtio_rdma_cmd_query_pkey req = {
        .port = cpu_to_le32(port),
        .index = cpu_to_le16(index),
    };
    struct virtio_rdma_rsp_query_pkey rsp = { 0 };
    uint8_t st = qvrdma_cmd(r, VIRTIO_RDMA_CMD_QUERY_PKEY, &req, sizeof(req),
                            &rsp, sizeof(rsp));

    if (pkey) {
        *pkey = le16_to_cpu(rsp.pkey);
    }
    return st;
}

uint8_t qvrdma_add_gid(QVirtioRdma *r, const uint8_t gid[16],
                       uint32_t gid_type, uint16_t index, uint32_t port)
{
    struct virtio_rdma_cmd_add_gid req = {
        .gid_type = cpu_to_le32(gid_type),
        .index = cpu_to_le16(index),
        .port_num = cpu_to_le32(port),
    };

    memcpy(req.gid, gid, sizeof(req.gid));
    return qvrdma_cmd(r, VIRTIO_RDMA_CMD_ADD_GID, &req, sizeof(req), NULL, 0);
}

uint8_t qvrdma_del_gid(QVirtioRdma *r, uint16_t index, uint32_t port)
{
    struct virtio_rdma_cmd_del_gid req = {
        .index = cpu_to_le16(index),
        .port = cpu_to_le32(port),
    };

    return qvrdma_cmd(r, VIRTIO_RDMA_CMD_DEL_GID, &req, sizeof(req), NULL, 0);
}

QDict *qvrdma_next_gid_event(QTestState *qts)
{
    int i;

    for (i = 0; i < 2; i++) {
        qobject_unref(qtest_qmp(qts, "{'execute': 'query-version'}"));
    }
    return qtest_qmp_event_ref(qts, "RDMA_GID_STATUS_CHANGED");
}

struct virtio_rdma_cmd_create_qp qvrdma_qp_req(uint32_t pdn, uint8_t type,
                                               uint32_t cqn)
{
    return (struct virtio_rdma_cmd_create_qp) {
        .pdn = pdn,
        .qp_type = type,
        .sq_sig_type = VIRTIO_RDMA_SIGNAL_ALL_WR,
        .max_send_wr = 16,
        .max_send_sge = 1,
        .send_cqn = cqn,
        .max_recv_wr = 16,
        .max_recv_sge = 1,
        .recv_cqn = cqn,
        .max_inline_data = 0,
    };
}

/* ---- QP state transitions ------------------------------------------------ */

void qvrdma_rc_attr(uint32_t to_state, uint32_t dest_qpn, uint8_t sgid_index,
                    const uint8_t dgid[16], struct virtio_rdma_qp_attr *attr,
                    uint32_t *mask)
{
    memset(attr, 0, sizeof(*attr));
    attr->qp_state = to_state;
    switch (to_state) {
    case VIRTIO_RDMA_QPS_INIT:
        attr->pkey_index = 0;
        attr->port_num = 1;
        attr->qp_access_flags = VIRTIO_RDMA_ACCESS_LOCAL_WRITE |
                                VIRTIO_RDMA_ACCESS_REMOTE_WRITE |
                                VIRTIO_RDMA_ACCESS_REMOTE_READ;
        *mask = VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_PKEY_INDEX |
                VIRTIO_RDMA_QP_PORT | VIRTIO_RDMA_QP_ACCESS_FLAGS;
        break;
    case VIRTIO_RDMA_QPS_RTR:
        attr->path_mtu = VIRTIO_RDMA_MTU_1024;
        attr->dest_qp_num = dest_qpn;
        attr->rq_psn = 0x1234;
        attr->max_dest_rd_atomic = 1;
        attr->min_rnr_timer = 12;
        attr->ah_attr.ah_flags = VIRTIO_RDMA_AH_GRH;
        attr->ah_attr.port_num = 1;
        attr->ah_attr.sl = 0;
        attr->ah_attr.grh.sgid_index = sgid_index;
        attr->ah_attr.grh.hop_limit = 64;
        attr->ah_attr.grh.flow_label = 0;
        attr->ah_attr.grh.traffic_class = 0;
        memcpy(attr->ah_attr.grh.dgid, dgid, 16);
        memcpy(attr->ah_attr.dmac, "\x52\x54\x00\x12\x34\x57", 6);
        *mask = VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_AV |
                VIRTIO_RDMA_QP_PATH_MTU | VIRTIO_RDMA_QP_DEST_QPN |
                VIRTIO_RDMA_QP_RQ_PSN | VIRTIO_RDMA_QP_MAX_DEST_RD_ATOMIC |
                VIRTIO_RDMA_QP_MIN_RNR_TIMER;
        break;
    case VIRTIO_RDMA_QPS_RTS:
        attr->timeout = 14;
        attr->retry_cnt = 7;
        attr->rnr_retry = 7;
        attr->sq_psn = 0x4321;
        attr->max_rd_atomic = 1;
        *mask = VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_TIMEOUT |
                VIRTIO_RDMA_QP_RETRY_CNT | VIRTIO_RDMA_QP_RNR_RETRY |
                VIRTIO_RDMA_QP_SQ_PSN | VIRTIO_RDMA_QP_MAX_QP_RD_ATOMIC;
        break;
    default:
        *mask = VIRTIO_RDMA_QP_STATE;
        break;
    }
}

void qvrdma_ud_attr(uint32_t to_state, struct virtio_rdma_qp_attr *attr,
                    uint32_t *mask)
{
    memset(attr, 0, sizeof(*attr));
    attr->qp_state = to_state;
    switch (to_state) {
    case VIRTIO_RDMA_QPS_INIT:
        attr->pkey_index = 0;
        attr->port_num = 1;
        attr->qkey = 0x11111111;
        *mask = VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_PKEY_INDEX |
                VIRTIO_RDMA_QP_PORT | VIRTIO_RDMA_QP_QKEY;
        break;
    case VIRTIO_RDMA_QPS_RTS:
        attr->sq_psn = 0x777;
        *mask = VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_SQ_PSN;
        break;
    default:
        *mask = VIRTIO_RDMA_QP_STATE;
        break;
    }
}

uint8_t qvrdma_rc_to_rts(QVirtioRdma *r, uint32_t qpn, uint32_t dest_qpn,
                         uint8_t sgid_index, const uint8_t dgid[16])
{
    static const uint32_t steps[] = {
        VIRTIO_RDMA_QPS_INIT, VIRTIO_RDMA_QPS_RTR, VIRTIO_RDMA_QPS_RTS,
    };
    struct virtio_rdma_qp_attr attr;
    uint32_t mask;
    unsigned i;

    for (i = 0; i < ARRAY_SIZE(steps); i++) {
        uint8_t st;

        qvrdma_rc_attr(steps[i], dest_qpn, sgid_index, dgid, &attr, &mask);
        st = qvrdma_modify_qp(r, qpn, mask, &attr);
        if (st) {
            return st;
        }
    }
    return 0;
}

/* ---- MR page tables ------------------------------------------------------ */

static void qvrdma_pt_write_u64s(QVirtioRdma *r, uint64_t addr,
                                 const uint64_t *vals, size_t n)
{
    g_autofree uint64_t *le = g_new(uint64_t, n);
    size_t i;

    for (i = 0; i < n; i++) {
        le[i] = cpu_to_le64(vals[i]);
    }
    qtest_memwrite(r->qts, addr, le, n * sizeof(uint64_t));
}

void qvrdma_pt_build(QVirtioRdma *r, QVrdmaPageTable *pt, uint32_t npages,
                     const uint64_t *page_addrs)
{
    g_autofree uint64_t *l1 = NULL;
    g_autofree uint64_t *entries = g_new(uint64_t, MAX(npages, 1));
    uint32_t i;

    g_assert_cmpuint(npages, >=, 1);
    g_assert_cmpuint(npages, <=, VIRTIO_RDMA_PT2_PAGES); /* two levels */

    memset(pt, 0, sizeof(*pt));
    pt->npages = npages;
    pt->n_l2 = DIV_ROUND_UP(npages, VIRTIO_RDMA_PT_ENTRIES);
    pt->l1 = guest_alloc(r->alloc, VIRTIO_RDMA_PAGE_SIZE);
    pt->l2 = guest_alloc(r->alloc, (size_t)pt->n_l2 * VIRTIO_RDMA_PAGE_SIZE);
    if (!page_addrs) {
        pt->data = guest_alloc(r->alloc,
                               (size_t)npages * VIRTIO_RDMA_PAGE_SIZE);
    }
    g_assert_cmphex(pt->l1 & (VIRTIO_RDMA_PAGE_SIZE - 1), ==, 0);
    g_assert_cmphex(pt->l2 & (VIRTIO_RDMA_PAGE_SIZE - 1), ==, 0);
    g_assert_cmphex(pt->data & (VIRTIO_RDMA_PAGE_SIZE - 1), ==, 0);

    l1 = g_new0(uint64_t, VIRTIO_RDMA_PT_ENTRIES);
    for (i = 0; i < pt->n_l2; i++) {
        l1[i] = pt->l2 + (uint64_t)i * VIRTIO_RDMA_PAGE_SIZE;
    }
    qvrdma_pt_write_u64s(r, pt->l1, l1, VIRTIO_RDMA_PT_ENTRIES);

    for (i = 0; i < npages; i++) {
        entries[i] = page_addrs ? page_addrs[i] :
                     pt->data + (uint64_t)i * VIRTIO_RDMA_PAGE_SIZE;
    }
    /* The level-2 pages are contiguous: one write fills them in order. */
    qvrdma_pt_write_u64s(r, pt->l2, entries, npages);
}

void qvrdma_pt_set_l1(QVirtioRdma *r, QVrdmaPageTable *pt, uint32_t i,
                      uint64_t addr)
{
    qvrdma_pt_write_u64s(r, pt->l1 + 8ull * i, &addr, 1);
}

void qvrdma_pt_set_page(QVirtioRdma *r, QVrdmaPageTable *pt, uint32_t i,
                        uint64_t addr)
{
    g_assert_cmpuint(i, <, pt->npages);
    qvrdma_pt_write_u64s(r, pt->l2 + 8ull * i, &addr, 1);
}

void qvrdma_pt_free(QVirtioRdma *r, QVrdmaPageTable *pt)
{
    if (pt->data) {
        guest_free(r->alloc, pt->data);
    }
    guest_free(r->alloc, pt->l2);
    guest_free(r->alloc, pt->l1);
    memset(pt, 0, sizeof(*pt));
}

/* ---- names ---------------------------------------------------------------- */

const char *qvrdma_cmd_name(uint8_t cmd)
{
    switch (cmd) {
#define QVRDMA_CMD_NAME_(up) case VIRTIO_RDMA_CMD_##up: return #up;
    VRDMA_CMDS(QVRDMA_CMD_NAME_)
#undef QVRDMA_CMD_NAME_
    }
    return "UNKNOWN";
}

const char *qvrdma_status_name(uint8_t status)
{
    /* Over the enum, so that a status missing from the list warns. */
    switch ((enum virtio_rdma_status)status) {
#define QVRDMA_STATUS_NAME_(up) case VIRTIO_RDMA_##up: return #up;
    VRDMA_STATUSES(QVRDMA_STATUS_NAME_)
#undef QVRDMA_STATUS_NAME_
    }
    return "?";
}

/* ---- qos graph node -------------------------------------------------------- */

static void *qvirtio_rdma_get_driver(QVirtioRdma *r, const char *interface)
{
    if (!g_strcmp0(interface, "virtio-rdma")) {
        return r;
    }
    if (!g_strcmp0(interface, "virtio")) {
        return r->vdev;
    }
    fprintf(stderr, "%s not present in virtio-rdma-pci\n", interface);
    g_assert_not_reached();
}

static void *qvirtio_rdma_pci_get_driver(void *object, const char *interface)
{
    QVirtioRdmaPCI *v = object;

    if (!g_strcmp0(interface, "pci-device")) {
        return v->pci_vdev.pdev;
    }
    return qvirtio_rdma_get_driver(&v->rdma, interface);
}

static void qvirtio_rdma_pci_destructor(QOSGraphObject *obj)
{
    QVirtioRdmaPCI *v = (QVirtioRdmaPCI *)obj;

    qvrdma_cleanup(&v->rdma);
    qvirtio_pci_destructor(&v->pci_vdev.obj);
}

static void qvirtio_rdma_pci_start_hw(QOSGraphObject *obj)
{
    QVirtioRdmaPCI *v = (QVirtioRdmaPCI *)obj;

    qvirtio_pci_start_hw(&v->pci_vdev.obj);
    qvrdma_init(&v->rdma, &v->pci_vdev.vdev, v->pci_vdev.pdev->bus->qts,
                v->rdma.alloc);
}

static void *virtio_rdma_pci_create(void *pci_bus, QGuestAllocator *t_alloc,
                                    void *addr)
{
    QVirtioRdmaPCI *v = g_new0(QVirtioRdmaPCI, 1);
    QOSGraphObject *obj = &v->pci_vdev.obj;

    virtio_pci_init(&v->pci_vdev, pci_bus, addr);
    g_assert_cmphex(v->pci_vdev.vdev.device_type, ==, VIRTIO_ID_RDMA_DEVICE);
    v->rdma.vdev = &v->pci_vdev.vdev;
    v->rdma.alloc = t_alloc;
    v->rdma.want_features = QVRDMA_RING_FEATURES;

    obj->get_driver = qvirtio_rdma_pci_get_driver;
    obj->start_hw = qvirtio_rdma_pci_start_hw;
    obj->destructor = qvirtio_rdma_pci_destructor;
    return obj;
}

static void virtio_rdma_register_nodes(void)
{
    QPCIAddress addr = {
        .devfn = QPCI_DEVFN(QVRDMA_SLOT, 1),
    };
    /* Function 0 of the slot must be virtio-net-pci, created first. */
    QOSGraphEdgeOptions opts = {
        .before_cmd_line = "-netdev user,id=" QVRDMA_NETDEV_ID
                           " -device virtio-net-pci,id=" QVRDMA_NIC_ID
                           ",netdev=" QVRDMA_NETDEV_ID
                           ",addr=04.0,multifunction=on,mac=" QVRDMA_MAC,
        .extra_device_opts = "addr=04.1,id=" QVRDMA_DEV_ID,
    };

    add_qpci_address(&opts, &addr);
    qos_node_create_driver("virtio-rdma-pci", virtio_rdma_pci_create);
    qos_node_consumes("virtio-rdma-pci", "pci-bus", &opts);
    qos_node_produces("virtio-rdma-pci", "pci-device");
    qos_node_produces("virtio-rdma-pci", "virtio");
    qos_node_produces("virtio-rdma-pci", "virtio-rdma");
}

libqos_init(virtio_rdma_register_nodes);
