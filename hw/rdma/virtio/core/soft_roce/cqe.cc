/*
 * virtio-rdma soft-RoCE engine: completions.
 *
 * A CQE goes into the CQ's ring (cq_deliver, cq.cc).  Then the CQ's arming
 * rules (Cq::take_event, cq.h) say whether it interrupts the driver.
 *
 * A full ring is a CQ overrun: the CQE is lost, counted, and
 * the QP that completed goes to ERR (IBA 11.4.2.1 makes it a CQ error; the
 * QP is where the damage is visible to the driver).
 *
 * Send completions are in send-queue order: comp_drain() reports the WQEs
 * at the head that are done, signaled ones (or all with SIGNAL_ALL_WR) and
 * every error (IBA 10.7.3.1).  An error puts the QP in ERR, which flushes
 * every WQE still outstanding on both queues with WR_FLUSH_ERR, signaled or
 * not.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "../core.h"
#include "engine.h"
#include "../guest_abi.h"
#include "../wr_opcode.h"

namespace vrdma::soft_roce {

namespace {

/* @returns false on a CQ overrun. */
bool push(VrdmaCore &c, uint32_t cqn, const virtio_rdma_cq_req &host,
          bool solicited)
{
    return cq_deliver(c, cqn, host, solicited, eng(c).stats);
}

} // namespace

bool cq_post(VrdmaCore &c, uint32_t cqn, const virtio_rdma_cq_req &cqe,
             bool solicited)
{
    return push(c, cqn, cqe, solicited);
}

/* @returns false on a CQ overrun. */
static bool send_cqe(VrdmaCore &c, Qp &qp, const SendWqe &w, uint8_t status)
{
    const bool signaled = qp.sq_sig_type == VIRTIO_RDMA_SIGNAL_ALL_WR ||
                          (w.flags & VIRTIO_RDMA_SEND_SIGNALED) ||
                          status != VIRTIO_RDMA_WC_SUCCESS;
    if (!signaled) {
        return true;
    }
    /* Any u32 (a malformed WQE completes too): unknown -> kWcOpcodeNone. */
    const WrOpcodeInfo &op = wr_opcode_info(w.opcode);
    virtio_rdma_cq_req cqe{};
    cqe.wr_id = w.wr_id;
    cqe.status = status;
    cqe.opcode = op.wc_opcode;
    cqe.byte_len = w.length;
    cqe.qp_num = qp.wire_qpn;
    if (op.has(kWrImm)) {
        cqe.wc_flags = VIRTIO_RDMA_WC_WITH_IMM;
    }
    return push(c, qp.send_cqn, cqe, false);
}

void comp_drain(VrdmaCore &c, Qp &qp)
{
    QpEngine &e = eng(qp);
    while (e.sq_head != e.sq_tail) {
        SendWqe &w = e.swqe(e.sq_head);
        if (w.state != WqeState::kDone) {
            break;
        }
        /*
         * A reference, not a copy: the slot is free once sq_head moves, but
         * only post_send() reuses it, and that never runs inside a drain.
         */
        const SendWqe &done = w;
        e.sq_head++;
        if (e.sq_req - e.sq_head > e.sq_tail - e.sq_head) {
            e.sq_req = e.sq_head; /* it was the WQE the requester stopped at */
        }
        if (done.rd_atomic) {
            e.req.rd_atomic--;
        }
        const bool ok = send_cqe(c, qp, done, done.status);
        if (!ok || done.status != VIRTIO_RDMA_WC_SUCCESS) {
            qp_enter_error(c, qp);
            return;
        }
    }
    if (qp_rings_waiting(qp)) {
        schedule(c, qp); /* the window may have room: run() pulls */
    }
}

void flush_queues(VrdmaCore &c, Qp &qp)
{
    QpEngine &e = eng(qp);
    while (e.sq_head != e.sq_tail) {
        const SendWqe w = e.swqe(e.sq_head);
        e.sq_head++;
        send_cqe(c, qp, w, VIRTIO_RDMA_WC_WR_FLUSH_ERR);
    }
    e.sq_req = e.sq_head;
    e.req.rd_atomic = 0;
    while (e.rq_head != e.rq_tail) {
        const RecvWqe &w = e.rwqe(e.rq_head);
        virtio_rdma_cq_req cqe{};
        cqe.wr_id = w.wr_id;
        cqe.status = VIRTIO_RDMA_WC_WR_FLUSH_ERR;
        cqe.opcode = VIRTIO_RDMA_WC_RECV;
        cqe.qp_num = qp.wire_qpn;
        e.rq_head++;
        push(c, qp.recv_cqn, cqe, false);
    }
    e.resp.recv_active = false;
    if (qp_rings_waiting(qp)) {
        schedule(c, qp); /* run() pulls the rest, to flush it too */
    }
}

} // namespace vrdma::soft_roce
