/*
 * The unit tests' rings driver (ring_driver.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "ring_driver.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace vrdma_test {

namespace {

/* The log2 of the smallest stride (at least 64 bytes) holding @bytes. */
uint8_t log_stride_for(uint64_t bytes)
{
    const uint64_t s = std::bit_ceil(std::max<uint64_t>(
        bytes, uint64_t{1} << VIRTIO_RDMA_RING_MIN_LOG_STRIDE));
    return static_cast<uint8_t>(std::countr_zero(s));
}

} // namespace

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

void RingMem::put(Node &n, uint32_t i, const Bytes &b) const
{
    uint8_t *s = slot(n, i);
    const size_t len = std::min<size_t>(b.size(), stride());
    if (len) {
        std::memcpy(s, b.data(), len);
    }
    std::memset(s + len, 0, stride() - len);
}

RingCq::RingCq(Node &n_, uint32_t ctx_, uint32_t cqe, uint8_t log_entries)
    : n(n_), ctx(ctx_),
      mem(RingMem::make(n_, log_entries, VIRTIO_RDMA_CQE_LOG_STRIDE))
{
    virtio_rdma_cmd_create_cq_ring r{.ctx = ctx, .cqe = cqe, .ring = mem.desc};
    virtio_rdma_rsp_create_cq rsp{};
    const uint8_t st = n.ctrl(VIRTIO_RDMA_CMD_CREATE_CQ_RING, r, &rsp);
    EXPECT_EQ(st, VIRTIO_RDMA_OK);
    if (st == VIRTIO_RDMA_OK) {
        cqn = rsp.cqn;
    }
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
    mem.put(n, pi, recv_bytes(wr_id, sges));
    pi++;
}

bool RingSrq::ring(uint32_t p)
{
    return vrdma_core_doorbell(n.core, ctx,
                               VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_SRQ, srqn, p));
}

virtio_rdma_cmd_create_qp qp_request(uint32_t pdn, uint8_t type,
                                     uint32_t scqn, uint32_t rcqn,
                                     uint8_t log_wr, uint32_t max_sge,
                                     uint8_t sig_type)
{
    virtio_rdma_cmd_create_qp q{};
    q.pdn = pdn;
    q.qp_type = type;
    q.sq_sig_type = sig_type;
    q.max_send_wr = 1u << log_wr;
    q.max_send_sge = max_sge;
    q.send_cqn = scqn;
    q.max_recv_wr = 1u << log_wr;
    q.max_recv_sge = max_sge;
    q.recv_cqn = rcqn;
    return q;
}

namespace {

/* A queue's ring: none without requests, else @wr deep (a power of two). */
RingMem wq_mem(Node &n, uint32_t wr, uint64_t entry_bytes)
{
    if (!wr) {
        return RingMem{};
    }
    return RingMem::make(
        n, static_cast<uint8_t>(std::countr_zero(std::bit_ceil(wr))),
        log_stride_for(entry_bytes));
}

virtio_rdma_cmd_create_qp without_rq(virtio_rdma_cmd_create_qp q,
                                     const RingSrq *srq)
{
    if (srq) {
        q.max_recv_wr = q.max_recv_sge = 0;
    }
    return q;
}

} // namespace

RingQp::RingQp(Node &n_, uint32_t ctx_, const virtio_rdma_cmd_create_qp &req,
               const RingSrq *srq)
    : n(n_), ctx(ctx_)
{
    virtio_rdma_cmd_create_qp_ring r{};
    r.qp = without_rq(req, srq);
    sq = wq_mem(n, r.qp.max_send_wr,
                sizeof(virtio_rdma_sq_req) +
                    uint64_t{r.qp.max_send_sge} * sizeof(virtio_rdma_sge));
    rq = wq_mem(n, r.qp.max_recv_wr,
                sizeof(virtio_rdma_rq_req) +
                    uint64_t{r.qp.max_recv_sge} * sizeof(virtio_rdma_sge));
    r.ctx = ctx;
    r.sq = sq.desc;
    r.rq = rq.desc;
    r.srqn = srq ? srq->srqn : 0;
    virtio_rdma_rsp_create_qp_wire rsp{};
    const uint8_t st = n.ctrl(VIRTIO_RDMA_CMD_CREATE_QP_RING, r, &rsp);
    EXPECT_EQ(st, VIRTIO_RDMA_OK);
    if (st == VIRTIO_RDMA_OK) {
        qpn = rsp.qpn;
        n.wires[rsp.qpn] = rsp.wire_qpn;
    }
}

void RingQp::put_send_raw(const Bytes &b)
{
    sq.put(n, sq_pi, b);
    sq_pi++;
}

void RingQp::put_recv_raw(const Bytes &b)
{
    rq.put(n, rq_pi, b);
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
