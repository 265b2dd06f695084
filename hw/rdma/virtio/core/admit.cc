/*
 * virtio-rdma core: admission of work requests (admit.h).
 *
 * The order of the checks is the order their statuses win in: the header
 * (check_send / check_recv), the queue by the QP's state and the
 * backend's room, then the SGEs' sum, an atomic's length and a UD
 * request's source GID index (wqe.h lists them).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "admit.h"

#include <cstring>

#include "backend.h"
#include "core.h"

namespace vrdma {

using backend::with;

void complete_now(VrdmaCore &c, const Qp &qp, uint32_t cqn, uint64_t wr_id,
                  uint32_t wc_opcode, uint8_t status)
{
    virtio_rdma_cq_req cqe{};
    cqe.wr_id = wr_id;
    cqe.status = status;
    cqe.opcode = wc_opcode;
    cqe.qp_num = qp.wire_qpn;
    cq_deliver(c, cqn, cqe, false, backend::stats(c));
}

namespace {

uint32_t room(VrdmaCore &c, const Qp &qp, bool is_rq)
{
    return with(c, [&](const auto &b) { return b.wq_room(qp, is_rq); });
}

void read_av(const virtio_rdma_av &av, WrAv &out)
{
    const uint32_t stf = le(av.sl_tclass_flowlabel);
    std::memcpy(out.dgid, av.dgid, 16);
    std::memcpy(out.dmac, av.dmac, 6);
    out.gid_index = av.gid_index;
    out.hop_limit = av.hop_limit;
    /* sl(31:28) | traffic class(27:20) | flow label(19:0) */
    out.sl = static_cast<uint8_t>(stf >> 28);
    out.tclass = static_cast<uint8_t>(stf >> 20);
    out.flow_label = stf & 0xFFFFF;
}

} // namespace

bool admit_send(VrdmaCore &c, Qp &qp, const uint8_t *p, size_t len,
                SendReq &r)
{
    const auto h = read_header<virtio_rdma_sq_req>(p, len);
    /* Valid on which QP types, completes as what: wr_opcode.cc. */
    const WrOpcodeInfo &op = wr_opcode_info(h.opcode);
    uint8_t status = check_send(c.host, qp.index, qp.cap, qp.type, h, len, op);

    const Admit admit = send_queue_admits(qp.state());
    if (admit == Admit::kFlush) {
        complete_now(c, qp, qp.send_cqn, h.wr_id, op.wc_opcode,
                     VIRTIO_RDMA_WC_WR_FLUSH_ERR);
        return false;
    }
    if (admit == Admit::kError || !room(c, qp, false)) {
        complete_now(c, qp, qp.send_cqn, h.wr_id, op.wc_opcode,
                     VIRTIO_RDMA_WC_LOC_QP_OP_ERR);
        return false;
    }

    r.wr_id = h.wr_id;
    r.op = &op;
    r.opcode = h.opcode;
    r.flags = h.send_flags;
    r.ex = h.ex;
    r.num_sge = 0;
    r.length = 0;
    r.remote_addr = r.compare_add = r.swap = 0;
    r.rkey = r.reg_mrn = r.reg_key = r.reg_access = 0;
    r.remote_qpn = r.remote_qkey = 0;
    /* UD or GSI (the GSI QP's requests are UD sends to QP1s). */
    const bool ud = qp.type == VIRTIO_RDMA_QPT_UD ||
                    qp.type == VIRTIO_RDMA_QPT_GSI;
    if (ud) { /* the guest's, whatever the status: checked below */
        read_av(h.wr.ud.av, r.av);
        r.remote_qpn = le(h.wr.ud.remote_qpn) & roce::kQpnMask;
        r.remote_qkey = le(h.wr.ud.remote_qkey);
    }
    if (status == VIRTIO_RDMA_WC_SUCCESS &&
        !read_sges(p + sizeof(h), h.num_sge, r.sge.s, &r.length)) {
        status = VIRTIO_RDMA_WC_LOC_LEN_ERR;
    }
    if (status == VIRTIO_RDMA_WC_SUCCESS) {
        /* One case per member of the request's union, not per opcode. */
        switch (op.args) {
        case WrArgs::kRdma:
            r.remote_addr = le(h.wr.rdma.remote_addr);
            r.rkey = le(h.wr.rdma.rkey);
            break;
        case WrArgs::kAtomic:
            r.remote_addr = le(h.wr.atomic.remote_addr);
            r.compare_add = le(h.wr.atomic.compare_add);
            r.swap = le(h.wr.atomic.swap);
            r.rkey = le(h.wr.atomic.rkey);
            break;
        case WrArgs::kReg:
            r.reg_mrn = le(h.wr.reg.mrn);
            r.reg_key = le(h.wr.reg.key);
            r.reg_access = le(h.wr.reg.access);
            break;
        case WrArgs::kNone:
            break;
        }
        /* An atomic's local buffer is one 64-bit word. */
        if (op.has(kWrLen8) && r.length != sizeof(uint64_t)) {
            status = VIRTIO_RDMA_WC_LOC_LEN_ERR;
        } else if (ud && r.av.gid_index >= VRDMA_GID_TABLE_LEN) {
            status = VIRTIO_RDMA_WC_LOC_QP_OP_ERR;
        }
    }
    if (status == VIRTIO_RDMA_WC_SUCCESS) {
        r.num_sge = h.num_sge;
    }
    r.status = status;
    return true;
}

uint8_t read_recv(const uint8_t *p, size_t len, uint32_t max_sge,
                  RecvReq &r)
{
    const auto h = read_header<virtio_rdma_rq_req>(p, len);
    r.wr_id = h.wr_id;
    r.num_sge = h.num_sge;
    r.length = 0;
    if (check_recv(max_sge, h, len) != VIRTIO_RDMA_WC_SUCCESS) {
        return VIRTIO_RDMA_WC_LOC_QP_OP_ERR;
    }
    if (!read_sges(p + sizeof(h), h.num_sge, r.sge.s, &r.length)) {
        return VIRTIO_RDMA_WC_LOC_LEN_ERR;
    }
    return VIRTIO_RDMA_WC_SUCCESS;
}

bool admit_recv(VrdmaCore &c, Qp &qp, const uint8_t *p, size_t len,
                RecvReq &r)
{
    const Admit admit = recv_queue_admits(qp.state());
    uint8_t status;
    if (admit == Admit::kFlush) {
        status = VIRTIO_RDMA_WC_WR_FLUSH_ERR;
    } else if (admit == Admit::kError || !room(c, qp, true)) {
        status = VIRTIO_RDMA_WC_LOC_QP_OP_ERR;
    } else {
        status = read_recv(p, len, qp.recv_max_sge(), r);
        if (status == VIRTIO_RDMA_WC_SUCCESS) {
            return true;
        }
    }
    /* wr_id 0 if the header is cut short before it (read_header). */
    const auto h = read_header<virtio_rdma_rq_req>(p, len);
    complete_now(c, qp, qp.recv_cqn, h.wr_id, VIRTIO_RDMA_WC_RECV, status);
    return false;
}

} // namespace vrdma
