/*
 * A driver of the rings data path (VIRTIO_RDMA_F_RINGS) for unit tests:
 * CQ and QP rings in a Node's guest memory, posting into them, doorbells,
 * polling by the owner bit.  It writes what a guest driver writes and reads
 * what it reads; tests reach under it (the ring's bytes) to break rules.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef TESTS_UNIT_RING_DRIVER_H
#define TESTS_UNIT_RING_DRIVER_H

#include <optional>

#include "dp_harness.h"

namespace vrdma_test {

/* A ring's memory: zeroed pages and their page table (gpa 0: no ring). */
struct RingMem {
    uint64_t gpa = 0;
    virtio_rdma_ring desc{};

    static RingMem make(Node &n, uint8_t log_entries, uint8_t log_stride);
    uint32_t entries() const { return 1u << desc.log_entries; }
    uint32_t stride() const { return 1u << desc.log_stride; }
    uint8_t *slot(Node &n, uint32_t i) const;
    virtio_rdma_ring_trailer *trailer(Node &n) const;
    /*
     * @b at the start of counter @i's entry, the rest of it zeroed: bytes
     * past the stride are cut (an entry holds no more).
     */
    void put(Node &n, uint32_t i, const Bytes &b) const;
    /* Is counter @i's slot free, as a driver sees it (device_idx)? */
    bool has_room(Node &n, uint32_t i) const
    {
        return i - trailer(n)->device_idx < entries();
    }
};

class RingCq {
public:
    /* CREATE_CQ_RING of @cqe in context @ctx, 2^log_entries entries. */
    RingCq(Node &n, uint32_t ctx, uint32_t cqe, uint8_t log_entries);
    /* The next completion by the owner bit; its consumption is published. */
    std::optional<virtio_rdma_cq_req> poll();
    void arm(uint32_t flags);

    Node &n;
    uint32_t ctx;
    RingMem mem;
    uint32_t cqn = UINT32_MAX;
    uint32_t ci = 0;
};

/* A shared receive queue: CREATE_SRQ_RING of 2^log_wr entries. */
class RingSrq {
public:
    RingSrq(Node &n, uint32_t ctx, uint32_t pdn, uint8_t log_wr = 3,
            uint32_t max_sge = 4, uint32_t limit = 0);
    void put(uint64_t wr_id, const std::vector<virtio_rdma_sge> &sges);
    bool ring(uint32_t pi);
    bool post(uint64_t wr_id, const std::vector<virtio_rdma_sge> &sges)
    {
        put(wr_id, sges);
        return ring(pi);
    }
    uint32_t device_idx() { return mem.trailer(n)->device_idx; }

    Node &n;
    uint32_t ctx;
    RingMem mem;
    uint32_t srqn = 0;
    uint32_t pi = 0;
};

/* CREATE_QP's fields of a QP with 2^@log_wr-deep queues of @max_sge SGEs. */
virtio_rdma_cmd_create_qp qp_request(uint32_t pdn, uint8_t type,
                                     uint32_t scqn, uint32_t rcqn,
                                     uint8_t log_wr = 3, uint32_t max_sge = 4,
                                     uint8_t sig_type = VIRTIO_RDMA_SIGNAL_REQ_WR);

class RingQp {
public:
    /*
     * CREATE_QP_RING of @q: each queue with requests gets a ring of
     * max_*_wr entries (rounded up to a power of two), each entry the
     * smallest that holds a request of max_*_sge SGEs.  @srq: the QP
     * receives from it and has no RQ (@q's receive fields are ignored).
     */
    RingQp(Node &n, uint32_t ctx, const virtio_rdma_cmd_create_qp &q,
           const RingSrq *srq = nullptr);
    RingQp(Node &n, uint32_t ctx, uint32_t pdn, uint8_t type, const RingCq &scq,
           const RingCq &rcq, uint8_t log_wr = 3, uint32_t max_sge = 4,
           const RingSrq *srq = nullptr)
        : RingQp(n, ctx, qp_request(pdn, type, scq.cqn, rcq.cqn, log_wr, max_sge),
                 srq)
    {
    }
    /* Into the next slot; rung separately (a batch, one doorbell). */
    void put_send(const SendWr &wr) { put_send_raw(wr.bytes()); }
    void put_recv(uint64_t wr_id, const std::vector<virtio_rdma_sge> &sges)
    {
        put_recv_raw(recv_bytes(wr_id, sges));
    }
    /* Any bytes as the next entry (RingMem::put). */
    void put_send_raw(const Bytes &b);
    void put_recv_raw(const Bytes &b);
    bool ring_sq(uint32_t pi);
    bool ring_rq(uint32_t pi);
    bool post_send(const SendWr &wr)
    {
        put_send(wr);
        return ring_sq(sq_pi);
    }
    bool post_recv(uint64_t wr_id, const std::vector<virtio_rdma_sge> &sges)
    {
        put_recv(wr_id, sges);
        return ring_rq(rq_pi);
    }

    Node &n;
    uint32_t ctx;
    RingMem sq, rq;
    uint32_t qpn = UINT32_MAX;
    uint32_t sq_pi = 0, rq_pi = 0;
};

uint32_t alloc_context(Node &n);
/* Runs ring turns until none is left; @returns how many it took. */
unsigned rings_drain(Node &n);

} // namespace vrdma_test

#endif
