/*
 * The unit tests' rings driver (ring_driver.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "ring_driver.h"

#include <cstring>

namespace vrdma_test {

RingMem RingMem::make(Node &n, uint8_t log_entries, uint8_t log_stride)
{
    RingMem m;
    const uint64_t bytes = (uint64_t{1} << (log_entries + log_stride)) +
                           sizeof(virtio_rdma_ring_trailer);
    m.gpa = n.alloc(bytes);
    std::memset(n.mem(m.gpa, bytes), 0, bytes);
    m.desc.pages = n.page_table(m.gpa, bytes, &m.desc.npages);
    m.desc.log_entries = log_entries;
    m.desc.log_stride = log_stride;
    return m;
}

uint8_t *RingMem::slot(Node &n, uint32_t i) const
{
    const uint64_t stride = uint64_t{1} << desc.log_stride;
    return n.mem(gpa + (i & (entries() - 1)) * stride, stride);
}

virtio_rdma_ring_trailer *RingMem::trailer(Node &n) const
{
    const uint64_t off = uint64_t{entries()} << desc.log_stride;
    return reinterpret_cast<virtio_rdma_ring_trailer *>(
        n.mem(gpa + off, sizeof(virtio_rdma_ring_trailer)));
}

RingCq::RingCq(Node &n_, uint32_t ctx_, uint32_t cqe, uint8_t log_entries)
    : n(n_), ctx(ctx_),
      mem(RingMem::make(n_, log_entries, VIRTIO_RDMA_CQE_LOG_STRIDE))
{
    virtio_rdma_cmd_create_cq_ring r{.ctx = ctx, .cqe = cqe, .ring = mem.desc};
    virtio_rdma_rsp_create_cq rsp{};
    EXPECT_EQ(n.ctrl(VIRTIO_RDMA_CMD_CREATE_CQ_RING, r, &rsp), VIRTIO_RDMA_OK);
    cqn = rsp.cqn;
}

std::optional<virtio_rdma_cq_req> RingCq::poll()
{
    const auto *e = reinterpret_cast<const virtio_rdma_cqe *>(mem.slot(n, ci));
    const uint8_t want = ((ci >> mem.desc.log_entries) & 1) ? 0 : 1;
    if ((__atomic_load_n(&e->owner, __ATOMIC_ACQUIRE) & 1) != want) {
        return std::nullopt;
    }
    virtio_rdma_cq_req c;
    std::memcpy(&c, &e->wc, sizeof(c));
    ci++;
    mem.trailer(n)->driver_idx = ci;
    return c;
}

void RingCq::arm(uint32_t flags)
{
    vrdma_core_doorbell(n.core, ctx,
                        VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_CQ_ARM, cqn, flags));
}

RingSrq::RingSrq(Node &n_, uint32_t ctx_, uint32_t pdn, uint8_t log_wr,
                 uint32_t max_sge, uint32_t limit)
    : n(n_), ctx(ctx_), mem(RingMem::make(n_, log_wr, 7))
{
    virtio_rdma_cmd_create_srq_ring r{.ctx = ctx,
                                      .pdn = pdn,
                                      .max_wr = 1u << log_wr,
                                      .max_sge = max_sge,
                                      .srq_limit = limit,
                                      .reserved = 0,
                                      .ring = mem.desc};
    virtio_rdma_rsp_create_srq rsp{};
    EXPECT_EQ(n.ctrl(VIRTIO_RDMA_CMD_CREATE_SRQ_RING, r, &rsp),
              VIRTIO_RDMA_OK);
    srqn = rsp.srqn;
}

void RingSrq::put(uint64_t wr_id, const std::vector<virtio_rdma_sge> &sges)
{
    const Bytes b = recv_bytes(wr_id, sges);
    std::memcpy(mem.slot(n, pi), b.data(), b.size());
    pi++;
}

bool RingSrq::ring(uint32_t p)
{
    return vrdma_core_doorbell(n.core, ctx,
                               VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_SRQ, srqn, p));
}

RingQp::RingQp(Node &n_, uint32_t ctx_, uint32_t pdn, uint8_t type,
               const RingCq &scq, const RingCq &rcq, uint8_t log_wr,
               uint32_t max_sge, const RingSrq *srq)
    : n(n_), ctx(ctx_), sq(RingMem::make(n_, log_wr, 8)),
      rq(srq ? RingMem{} : RingMem::make(n_, log_wr, 7))
{
    virtio_rdma_cmd_create_qp_ring r{};
    r.qp.pdn = pdn;
    r.qp.qp_type = type;
    r.qp.sq_sig_type = VIRTIO_RDMA_SIGNAL_REQ_WR;
    r.qp.max_send_wr = 1u << log_wr;
    r.qp.max_send_sge = max_sge;
    r.qp.send_cqn = scq.cqn;
    r.qp.max_recv_wr = 1u << log_wr;
    r.qp.max_recv_sge = max_sge;
    r.qp.recv_cqn = rcq.cqn;
    r.ctx = ctx;
    r.sq = sq.desc;
    r.rq = rq.desc;
    if (srq) {
        r.qp.max_recv_wr = r.qp.max_recv_sge = 0;
        r.srqn = srq->srqn;
    }
    virtio_rdma_rsp_create_qp_wire rsp{};
    EXPECT_EQ(n.ctrl(VIRTIO_RDMA_CMD_CREATE_QP_RING, r, &rsp), VIRTIO_RDMA_OK);
    qpn = rsp.qpn;
    n.wires[rsp.qpn] = rsp.wire_qpn;
}

void RingQp::put_send(const SendWr &wr)
{
    const Bytes b = wr.bytes();
    std::memcpy(sq.slot(n, sq_pi), b.data(), b.size());
    sq_pi++;
}

void RingQp::put_recv(uint64_t wr_id, const std::vector<virtio_rdma_sge> &sges)
{
    const Bytes b = recv_bytes(wr_id, sges);
    std::memcpy(rq.slot(n, rq_pi), b.data(), b.size());
    rq_pi++;
}

bool RingQp::ring_sq(uint32_t pi)
{
    return vrdma_core_doorbell(n.core, ctx,
                               VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_SQ, qpn, pi));
}

bool RingQp::ring_rq(uint32_t pi)
{
    return vrdma_core_doorbell(n.core, ctx,
                               VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_RQ, qpn, pi));
}

uint32_t alloc_context(Node &n)
{
    virtio_rdma_rsp_alloc_context rsp{};
    const uint8_t none[1] = {};
    uint8_t buf[VRDMA_CTRL_RSP_MAX];
    EXPECT_EQ(n.ctrl_raw(VIRTIO_RDMA_CMD_ALLOC_CONTEXT, none, 0, buf,
                         sizeof(buf)),
              VIRTIO_RDMA_OK);
    std::memcpy(&rsp, buf, sizeof(rsp));
    return rsp.ctx;
}

unsigned rings_drain(Node &n)
{
    unsigned turns = 1;
    while (vrdma_core_rings_turn(n.core)) {
        turns++;
    }
    return turns;
}

} // namespace vrdma_test
