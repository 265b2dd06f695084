/*
 * virtio-rdma soft-RoCE engine: the data-path side of a QP's life.
 *
 *   CREATE_QP  every ring and resource is allocated: each queue holds
 *              its max_*_wr (a ring QP: at most its kRingWindow) rounded
 *              up to a power of two (at least 1) of WQEs, and their SGE
 *              arrays at the QP's max SGE counts.
 *   MODIFY_QP  ->RESET drops all outstanding work silently (IBA 10.3.1);
 *              ->ERR flushes every outstanding WQE of both queues with
 *              WR_FLUSH_ERR; RQ_PSN / SQ_PSN set the responder's expected
 *              PSN and the requester's next PSN; RETRY_CNT / RNR_RETRY
 *              refill the counters; ->RTS starts the requester.
 *   DESTROY_QP outstanding work is dropped without completions.
 *   engine error: the core's qp_enter_error() puts the QP in ERR, then
 *              qp_error_flush() flushes as for ->ERR (IBA 10.3.1 "Error"
 *              state).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <algorithm>
#include <bit>

#include "../core.h"
#include "engine.h"

namespace vrdma::soft_roce {

namespace {

/* Everything in flight forgotten; the rings keep their storage. */
void clear_transient(Qp &qp)
{
    QpEngine &e = eng(qp);
    e.req = ReqState{};
    e.comp = CompState{};
    e.resp.opcode = -1;
    e.resp.sent_psn_nak = false;
    e.resp.drop_msg = false;
    e.resp.recv_active = false;
    e.resp.recv_off = 0;
    e.resp.resid = 0;
    e.resp.res.fill(Res{});
    e.resp.res_next = 0;
    e.resp.out_head = 0;
    e.resp.out_count = 0;
    /* A QP in the run queue stays there: run() finds nothing to do. */
}

uint32_t ring_slots(uint32_t max_wr)
{
    return std::bit_ceil(std::max<uint32_t>(max_wr, 1));
}

void refill_counters(Qp &qp)
{
    eng(qp).comp.retry_left = qp.attr.retry_cnt;
    eng(qp).comp.rnr_left = qp.attr.rnr_retry;
}

} // namespace

uint32_t qp_mtu(const VrdmaCore &c, const Qp &qp)
{
    uint32_t mtu = c.port.active_mtu;
    if (!qp_is_ud(qp) && qp.attr.path_mtu >= VIRTIO_RDMA_MTU_256) {
        mtu = std::min(mtu, qp.attr.path_mtu);
    }
    return 128u << mtu; /* enum ib_mtu n is 128 << n bytes */
}

/* IBA 9.7.6.1.3: 4.096 us * 2^timeout; 0 means wait forever. */
uint64_t qp_timeout_ns(const Qp &qp)
{
    return qp.attr.timeout ? 4096ull << qp.attr.timeout : 0;
}

size_t QpEngine::ring_bytes() const
{
    return sq.capacity() * sizeof(SendWqe) + sq_sge.capacity() * sizeof(Sge) +
           rq.capacity() * sizeof(RecvWqe) + rq_sge.capacity() * sizeof(Sge);
}

void qp_create(VrdmaCore &, Qp &qp)
{
    QpEngine &e = eng(qp);
    /*
     * admission refuses a WQE beyond sq_cap / rq_cap (wq_room), so a ring
     * of at least that many slots (a power of two, for the mask) never
     * wraps onto a live one.  The queues are the QP's window of the
     * guest's rings (kRingWindow).  CREATE_QP_RING checked max_sge, so the
     * products below stay small.  A queue with no WQEs still gets one
     * slot: no index ever names an empty vector.
     */
    const uint32_t window = kRingWindow;
    e.sq_cap = std::min(qp.cap.max_send_wr, window);
    /* On an SRQ: the one receive it took, while a message fills it. */
    e.rq_cap = qp.srqn ? 1 : std::min(qp.cap.max_recv_wr, window);
    const uint32_t sn = ring_slots(e.sq_cap);
    const uint32_t rn = ring_slots(e.rq_cap);
    e.sq_mask = sn - 1;
    e.rq_mask = rn - 1;
    e.send_sge_cap = std::max<uint32_t>(qp.cap.max_send_sge, 1);
    e.recv_sge_cap = std::max<uint32_t>(qp.recv_max_sge(), 1);
    e.sq.assign(sn, SendWqe{});
    e.sq_sge.assign(size_t{sn} * e.send_sge_cap, Sge{});
    e.rq.assign(rn, RecvWqe{});
    e.rq_sge.assign(size_t{rn} * e.recv_sge_cap, Sge{});
}

void qp_destroy(VrdmaCore &c, Qp &qp)
{
    Engine &g = eng(c);
    /* Out of the run queue, so a new QP with this number starts clean. */
    uint32_t kept = 0;
    for (uint32_t i = 0; i < g.runq_count; i++) {
        const uint32_t q = g.runq[(g.runq_head + i) % g.runq.size()];
        if (q != qp.index) {
            g.runq[(g.runq_head + kept) % g.runq.size()] = q;
            kept++;
        }
    }
    g.runq_count = kept;
    eng(qp).in_runq = false;
}

void qp_modified(VrdmaCore &c, Qp &qp, uint32_t old_state, uint32_t mask)
{
    QpEngine &e = eng(qp);
    const uint32_t state = qp.state();

    if (state == VIRTIO_RDMA_QPS_RESET) {
        if (old_state != VIRTIO_RDMA_QPS_RESET) {
            clear_transient(qp);
            e.sq_head = e.sq_req = e.sq_tail = 0;
            e.rq_head = e.rq_tail = 0;
            e.resp.epsn = 0;
            e.resp.msn = 0;
        }
        return;
    }
    if (state == VIRTIO_RDMA_QPS_ERR) {
        if (old_state != VIRTIO_RDMA_QPS_ERR) {
            clear_transient(qp);
            flush_queues(c, qp);
        }
        return;
    }
    if (mask & VIRTIO_RDMA_QP_RQ_PSN) {
        e.resp.epsn = qp.attr.rq_psn & kPsnMask;
        e.resp.opcode = -1;
        e.resp.sent_psn_nak = false;
    }
    if (mask & VIRTIO_RDMA_QP_SQ_PSN) {
        e.req.psn = qp.attr.sq_psn & kPsnMask;
        e.req.psn_hi = e.req.psn;
        e.comp.psn = e.req.psn;
        e.comp.opcode = -1;
    }
    if (mask & (VIRTIO_RDMA_QP_RETRY_CNT | VIRTIO_RDMA_QP_RNR_RETRY)) {
        refill_counters(qp);
    }
    if (state == VIRTIO_RDMA_QPS_RTS && old_state != VIRTIO_RDMA_QPS_RTS &&
        e.sq_count()) {
        schedule(c, qp); /* from SQD: resume */
    }
}

void qp_error_flush(VrdmaCore &c, Qp &qp)
{
    clear_transient(qp);
    flush_queues(c, qp);
}

} // namespace vrdma::soft_roce
