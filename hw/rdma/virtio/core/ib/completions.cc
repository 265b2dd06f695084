/*
 * virtio-rdma ibverbs backend: host completions to the guest's CQs.
 *
 * One completion channel serves every host CQ; the host watches its fd in
 * the context the core runs in (loop.fd_watch).  When it is readable: each
 * event is acked at once (a CQ cannot be destroyed with events unacked),
 * its CQ re-armed before it is polled (a CQE that lands after the poll
 * raises a new event), and marked pending; then the pending CQs are
 * polled, at most kPollBudget CQEs a turn -- more is left to run(), which
 * the host calls again after a kick.
 *
 * A host CQE becomes the guest's with the same status, opcode, length and
 * QP number (the host's QPN is the wire QPN the guest knows); the flags
 * are renumbered.  ibv_wc does not say whether a message was solicited, so
 * every receive completion counts as one for the CQ's arming: an armed
 * SOLICITED CQ may wake early, never late.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <algorithm>

#include "../core.h"
#include "state.h"

namespace vrdma::ib {

static_assert(same_value(VIRTIO_RDMA_WC_SUCCESS, IBV_WC_SUCCESS) &&
              same_value(VIRTIO_RDMA_WC_WR_FLUSH_ERR, IBV_WC_WR_FLUSH_ERR) &&
              same_value(VIRTIO_RDMA_WC_RETRY_EXC_ERR, IBV_WC_RETRY_EXC_ERR) &&
              same_value(VIRTIO_RDMA_WC_GENERAL_ERR, IBV_WC_GENERAL_ERR));
static_assert(same_value(VIRTIO_RDMA_WC_SEND, IBV_WC_SEND) &&
              same_value(VIRTIO_RDMA_WC_RDMA_WRITE, IBV_WC_RDMA_WRITE) &&
              same_value(VIRTIO_RDMA_WC_RDMA_READ, IBV_WC_RDMA_READ) &&
              same_value(VIRTIO_RDMA_WC_COMP_SWAP, IBV_WC_COMP_SWAP) &&
              same_value(VIRTIO_RDMA_WC_FETCH_ADD, IBV_WC_FETCH_ADD) &&
              same_value(VIRTIO_RDMA_WC_LOCAL_INV, IBV_WC_LOCAL_INV) &&
              same_value(VIRTIO_RDMA_WC_RECV, IBV_WC_RECV) &&
              same_value(VIRTIO_RDMA_WC_RECV_RDMA_WITH_IMM, IBV_WC_RECV_RDMA_WITH_IMM));

namespace {

constexpr unsigned kEventBudget = 64; /* channel events per turn */
constexpr unsigned kPollBudget = 256; /* CQEs per turn, all CQs */
constexpr int kPollBatch = 16;

virtio_rdma_cq_req to_guest(const ibv_wc &wc)
{
    virtio_rdma_cq_req cqe{};
    cqe.wr_id = wc.wr_id;
    cqe.status = wc.status;
    cqe.opcode = wc.opcode;
    cqe.vendor_err = wc.vendor_err;
    cqe.byte_len = wc.byte_len;
    cqe.qp_num = wc.qp_num;
    cqe.src_qp = wc.src_qp;
    if (wc.wc_flags & IBV_WC_GRH) {
        cqe.wc_flags |= VIRTIO_RDMA_WC_GRH;
    }
    if (wc.wc_flags & IBV_WC_WITH_IMM) {
        cqe.wc_flags |= VIRTIO_RDMA_WC_WITH_IMM;
        cqe.ex = wc.imm_data; /* big-endian, as the guest reads it */
    } else if (wc.wc_flags & IBV_WC_WITH_INV) {
        cqe.wc_flags |= VIRTIO_RDMA_WC_WITH_INVALIDATE;
        cqe.ex = le(wc.invalidated_rkey);
    }
    cqe.pkey_index = 0;
    cqe.sl = wc.sl;
    cqe.port_num = kPortNum;
    return cqe;
}

} // namespace

/*
 * An error completion or a QP error event: the host QP is in ERR now
 * (rxe's and IBA's rule for a completion error), and QUERY_QP must say so
 * before the guest posts again -- posts then flush, as the host does.
 */
void Backend::qp_failed(VrdmaCore &c, uint32_t wire_qpn)
{
    if (Qp *qp = c.qp_by_wire(wire_qpn)) {
        qp_enter_error(c, *qp);
    }
}

bool Backend::completions(VrdmaCore &c)
{
    for (unsigned n = 0; n < kEventBudget; n++) {
        ibv_cq *cq = nullptr;
        void *ctx = nullptr;
        if (verbs().get_cq_event(channel_, &cq, &ctx)) {
            break; /* EAGAIN: none left */
        }
        verbs().ack_cq_events(cq, 1);
        const auto cqn = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(ctx));
        if (cqn < cqs_.size() && cqs_[cqn] == cq) {
            verbs().req_notify_cq(cq, 0);
            pending_[cqn] = true;
        }
    }
    return poll_pending(c, kPollBudget);
}

bool Backend::run(VrdmaCore &c)
{
    return poll_pending(c, kPollBudget);
}

bool Backend::poll_pending(VrdmaCore &c, unsigned budget)
{
    bool more = false;
    for (uint32_t cqn = 0; cqn < cqs_.size(); cqn++) {
        if (!pending_[cqn]) {
            continue;
        }
        bool drained = false;
        while (budget && !drained) {
            ibv_wc wc[kPollBatch];
            const int want = static_cast<int>(
                std::min<unsigned>(budget, kPollBatch));
            const int got = verbs().poll_cq(cqs_[cqn], want, wc);
            for (int i = 0; i < got; i++) {
                deliver(c, cqn, wc[i]);
            }
            budget -= static_cast<unsigned>(std::max(got, 0));
            drained = got < want; /* < 0: the host failed; nothing to wait for */
        }
        if (drained) {
            pending_[cqn] = false; /* the next CQE raises an event */
        } else {
            more = true;
        }
    }
    return more;
}

/*
 * A CQ overrun (the guest's CQ has no room: no buffer, or a full or broken
 * ring): the CQE is lost and counted (cq_deliver), and the QP that
 * completed goes to ERR, host QP included, as on soft-RoCE (the spec's
 * "Completion queues"; IBA 11.4.2.1).  Its later CQEs are flushes.
 */
void Backend::deliver(VrdmaCore &c, uint32_t cqn, const ibv_wc &wc)
{
    if (wc.status != IBV_WC_SUCCESS) {
        qp_failed(c, wc.qp_num);
    }
    if (!cq_deliver(c, cqn, to_guest(wc), (wc.opcode & IBV_WC_RECV) != 0,
                    stats)) {
        if (Qp *qp = c.qp_by_wire(wc.qp_num)) {
            qp_enter_error(c, *qp);
        }
    }
}

/*
 * At DESTROY_QP, after the host QP is gone (so no CQE of it comes later):
 * the CQ holds at most its depth, so this ends.  The others' CQEs go to
 * the guest in their order, as a later poll would have delivered them.
 */
void Backend::purge_qp_cqes(VrdmaCore &c, uint32_t cqn, uint32_t wire_qpn)
{
    const Cq *gcq = c.cqs.at(cqn);
    ibv_cq *cq = this->cq(cqn);
    if (!gcq || !cq) {
        return;
    }
    uint64_t left = uint64_t{gcq->cqe} + 1;
    while (left) {
        ibv_wc wc[kPollBatch];
        const int want = static_cast<int>(std::min<uint64_t>(left, kPollBatch));
        const int got = verbs().poll_cq(cq, want, wc);
        for (int i = 0; i < got; i++) {
            if (wc[i].qp_num == wire_qpn) {
                purged_cqes++;
            } else {
                deliver(c, cqn, wc[i]);
            }
        }
        if (got < want) {
            break; /* empty (< 0: the host failed; nothing to wait for) */
        }
        left -= static_cast<uint64_t>(got);
    }
}

} // namespace vrdma::ib
