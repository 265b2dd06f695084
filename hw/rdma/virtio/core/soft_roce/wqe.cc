/*
 * virtio-rdma soft-RoCE engine: work requests posted by the driver, into
 * the engine's own WQE rings.  Reading and checking a request, and where
 * it goes by the QP's state, are the core's (../wqe.h); here a request is
 * built in its ring slot, or completed at once with the status the checks
 * gave.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <algorithm>
#include <cstring>

#include "../core.h"
#include "engine.h"
#include "../guest_abi.h"
#include "../wqe.h"
#include "../wr_opcode.h"

namespace vrdma::soft_roce {

namespace {

/* A completion outside the queues' order (immediate error or flush). */
void complete_now(VrdmaCore &c, Qp &qp, uint32_t cqn, uint64_t wr_id,
                  uint32_t wc_opcode, uint8_t status)
{
    virtio_rdma_cq_req cqe{};
    cqe.wr_id = wr_id;
    cqe.status = status;
    cqe.opcode = wc_opcode;
    cqe.qp_num = qp.wire_qpn;
    cq_post(c, cqn, cqe, false);
}

} // namespace

void Engine::post_send(VrdmaCore &c, Qp &qp, const void *bytes, size_t len)
{
    QpEngine &e = eng(qp);
    const auto *p = static_cast<const uint8_t *>(bytes);

    const auto h = read_header<virtio_rdma_sq_req>(p, len);
    /* Valid on which QP types, completes as what: wr_opcode.cc. */
    const WrOpcodeInfo &op = wr_opcode_info(h.opcode);
    uint8_t status = check_send(c.host, qp.index, qp.cap, qp.type, h, len, op);

    const uint32_t state = qp.state();
    const Admit admit = send_queue_admits(state);
    if (admit == Admit::kFlush) {
        complete_now(c, qp, qp.send_cqn, h.wr_id, op.wc_opcode,
                     VIRTIO_RDMA_WC_WR_FLUSH_ERR);
        return;
    }
    if (admit == Admit::kError || !e.sq_room()) {
        complete_now(c, qp, qp.send_cqn, h.wr_id, op.wc_opcode,
                     VIRTIO_RDMA_WC_LOC_QP_OP_ERR);
        return;
    }

    /*
     * Built in its slot (past sq_tail: nobody reads it until sq_tail moves),
     * field by field: GCC turns a whole-struct copy or clear into a slow
     * rep movs / rep stos.
     */
    SendWqe &w = e.swqe(e.sq_tail);
    w.wr_id = h.wr_id;
    w.opcode = h.opcode;
    w.flags = h.send_flags;
    w.ex = h.ex;
    w.rkey = 0;
    w.remote_addr = w.compare_add = w.swap = 0;
    w.remote_qpn = w.remote_qkey = 0;
    const bool ud = qp_is_ud(qp);
    if (ud) { /* the guest's, whatever the status: checked below */
        const virtio_rdma_av &av = h.wr.ud.av;
        const uint32_t stf = le(av.sl_tclass_flowlabel);
        std::memcpy(w.av.dgid.data(), av.dgid, 16);
        std::memcpy(w.av.dmac.data(), av.dmac, 6);
        w.av.gid_index = av.gid_index;
        w.av.hop_limit = av.hop_limit;
        /* sl(31:28) | traffic class(27:20) | flow label(19:0) */
        w.av.tclass = static_cast<uint8_t>(stf >> 20);
        w.av.flow_label = stf & 0xFFFFF;
    } else {
        /* Two 8-byte stores, not a memset call per request. */
        std::memset(w.av.dgid.data(), 0, 16);
        std::memset(w.av.dmac.data(), 0, 6);
        w.av.gid_index = w.av.hop_limit = w.av.tclass = 0;
        w.av.flow_label = 0;
    }
    w.reg_mrn = w.reg_key = w.reg_access = 0;
    w.num_sge = status == VIRTIO_RDMA_WC_SUCCESS ? h.num_sge : 0;
    w.length = 0;
    w.state = WqeState::kPosted;
    w.status = VIRTIO_RDMA_WC_SUCCESS;
    w.rd_atomic = w.started = false;
    w.first_psn = w.last_psn = w.offset = 0;
    static_assert(sizeof(SendWqe) == 128, "a new SendWqe field: set it here");

    Sge *sge = e.ssge(e.sq_tail);
    if (status == VIRTIO_RDMA_WC_SUCCESS &&
        !read_sges(p + sizeof(h), w.num_sge, sge, &w.length)) {
        status = VIRTIO_RDMA_WC_LOC_LEN_ERR;
    }
    if (status == VIRTIO_RDMA_WC_SUCCESS) {
        /* One case per member of the request's union, not per opcode. */
        switch (op.args) {
        case WrArgs::kRdma:
            w.remote_addr = le(h.wr.rdma.remote_addr);
            w.rkey = le(h.wr.rdma.rkey);
            break;
        case WrArgs::kAtomic:
            w.remote_addr = le(h.wr.atomic.remote_addr);
            w.compare_add = le(h.wr.atomic.compare_add);
            w.swap = le(h.wr.atomic.swap);
            w.rkey = le(h.wr.atomic.rkey);
            break;
        case WrArgs::kReg:
            w.reg_mrn = le(h.wr.reg.mrn);
            w.reg_key = le(h.wr.reg.key);
            w.reg_access = le(h.wr.reg.access);
            break;
        case WrArgs::kNone:
            break;
        }
        /* An atomic's local buffer is one 64-bit word. */
        if (op.has(kWrLen8) && w.length != sizeof(uint64_t)) {
            status = VIRTIO_RDMA_WC_LOC_LEN_ERR;
        }
        if (ud) {
            w.remote_qpn = le(h.wr.ud.remote_qpn) & roce::kQpnMask;
            w.remote_qkey = le(h.wr.ud.remote_qkey);
            if (w.av.gid_index >= VRDMA_GID_TABLE_LEN) {
                status = VIRTIO_RDMA_WC_LOC_QP_OP_ERR;
            }
        }
    }
    if (status != VIRTIO_RDMA_WC_SUCCESS) {
        w.status = status;
        w.num_sge = 0;
    }
    e.sq_tail++;
    if (state == VIRTIO_RDMA_QPS_RTS) {
        schedule(c, qp);
    }
}

void Engine::post_recv(VrdmaCore &c, Qp &qp, const void *bytes, size_t len)
{
    QpEngine &e = eng(qp);
    const auto *p = static_cast<const uint8_t *>(bytes);

    const auto h = read_header<virtio_rdma_rq_req>(p, len);

    const Admit admit = recv_queue_admits(qp.state());
    if (admit == Admit::kFlush) {
        complete_now(c, qp, qp.recv_cqn, h.wr_id, VIRTIO_RDMA_WC_RECV,
                     VIRTIO_RDMA_WC_WR_FLUSH_ERR);
        return;
    }
    if (admit == Admit::kError || !e.rq_room() ||
        check_recv(qp.recv_max_sge(), h, len) != VIRTIO_RDMA_WC_SUCCESS) {
        complete_now(c, qp, qp.recv_cqn, h.wr_id, VIRTIO_RDMA_WC_RECV,
                     VIRTIO_RDMA_WC_LOC_QP_OP_ERR);
        return;
    }
    RecvWqe &w = e.rwqe(e.rq_tail);
    if (!read_sges(p + sizeof(h), h.num_sge, e.rsge(e.rq_tail), &w.length)) {
        complete_now(c, qp, qp.recv_cqn, h.wr_id, VIRTIO_RDMA_WC_RECV,
                     VIRTIO_RDMA_WC_LOC_LEN_ERR);
        return;
    }
    w.wr_id = h.wr_id;
    w.num_sge = h.num_sge;
    e.rq_tail++;
}

uint32_t Engine::wq_room(const Qp &qp, bool is_rq) const
{
    const QpEngine &e = eng(qp);
    return is_rq ? e.rq_room() : e.sq_room();
}

} // namespace vrdma::soft_roce
