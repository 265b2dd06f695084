/*
 * virtio-rdma ibverbs backend: the GSI QP (QP1), whose MADs go through the
 * host's MAD link (mad-chardev= to contrib/rdmacm-mux) instead of a host QP.
 * The host port's QP1 belongs to the host kernel; the mux owns its CM agent
 * and routes CM MADs by the GID they arrive on, so guests on one host port
 * share it.
 *
 * Sends: admitted by the core (../admit.h), then one SEND of at most one MAD
 * (256 bytes) to QP1 of the destination, copied out of the guest's buffers
 * and handed to the link; it completes at once (a datagram: a MAD the link
 * cannot take is lost, as on a wire, and the CM retransmits).
 * Receives: kept here, at most max_recv_wr, until a MAD arrives; then the
 * 40-byte GRH area (the IP header RoCEv2 would have carried) and the MAD
 * go into the first one, src_qp 1.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <algorithm>
#include <array>
#include <cstring>

#include "../admit.h"
#include "../core.h"
#include "../mr_access.h"
#include "../roce/frame.h"
#include "../roce/opcode.h"
#include "state.h"

namespace vrdma::ib {

namespace {

/* What follows the UDP header of a MAD's RoCEv2 packet: BTH, DETH, MAD, ICRC. */
constexpr size_t kMadUdpPayload =
    roce::kBthBytes + roce::kDethBytes + VRDMA_MAD_LEN + roce::kIcrcBytes;
constexpr uint32_t kMadRecvBytes = roce::kGrhBytes + VRDMA_MAD_LEN;

/* The guest's GID table holds @gid (any index): the MAD is the port's. */
bool port_has_gid(const VrdmaCore &c, const uint8_t *gid)
{
    for (uint32_t i = 0; i < VRDMA_GID_TABLE_LEN; i++) {
        const GidEntry *e = c.port.gid(i);
        if (e && std::memcmp(e->gid.data(), gid, 16) == 0) {
            return true;
        }
    }
    return false;
}

} // namespace

void Backend::gsi_send(VrdmaCore &c, Qp &qp, const SendReq &r)
{
    VrdmaMad m{};

    /*
     * One MAD, to a peer's QP1: the mux sends nothing else.  This status
     * wins over the core's SGE and address checks (it did before the core
     * made them).
     */
    uint8_t status = r.status;
    if (r.opcode != VIRTIO_RDMA_WR_SEND || r.remote_qpn != kGsiQpn) {
        status = VIRTIO_RDMA_WC_LOC_QP_OP_ERR;
    }
    if (status == VIRTIO_RDMA_WC_SUCCESS && r.length > VRDMA_MAD_LEN) {
        status = VIRTIO_RDMA_WC_LOC_LEN_ERR;
    }
    /* The mux sends from it: a source like any other (port.h). */
    const GidEntry *src = source_gid(c, r.av.gid_index);
    if (status == VIRTIO_RDMA_WC_SUCCESS && !src) {
        status = VIRTIO_RDMA_WC_LOC_QP_OP_ERR;
    }
    if (status == VIRTIO_RDMA_WC_SUCCESS) {
        status = sgl_copy(c, qp.pd_index, r.sge.s, r.num_sge, 0, m.mad,
                          r.length, false);
    }
    if (status != VIRTIO_RDMA_WC_SUCCESS) {
        /* Taken by the QP but not executable: an error of the QP's. */
        qp_enter_error(c, qp);
        complete_now(c, qp, qp.send_cqn, r.wr_id, VIRTIO_RDMA_WC_SEND, status);
        return;
    }
    std::memcpy(m.local_gid, src->gid.data(), 16);
    std::memcpy(m.remote_gid, r.av.dgid, 16);
    m.flow_label = r.av.flow_label;
    m.tclass = r.av.tclass;
    m.hop_limit = r.av.hop_limit;
    if (c.host.mad_send(m)) {
        mads_sent++;
    } else {
        mads_dropped++;
    }
    if (qp.sq_sig_type == VIRTIO_RDMA_SIGNAL_ALL_WR ||
        (r.flags & VIRTIO_RDMA_SEND_SIGNALED)) {
        virtio_rdma_cq_req cqe{};
        cqe.wr_id = r.wr_id;
        cqe.status = VIRTIO_RDMA_WC_SUCCESS;
        cqe.opcode = VIRTIO_RDMA_WC_SEND;
        cqe.byte_len = r.length;
        cqe.qp_num = qp.wire_qpn;
        cq_deliver(c, qp.send_cqn, cqe, false, stats);
    }
}

void Backend::gsi_recv(VrdmaCore &c, Qp &qp, const RecvReq &r)
{
    QpState &st = std::get<QpState>(qp.backend);
    GsiRecv g;
    g.wr_id = r.wr_id;
    g.num_sge = r.num_sge;
    std::copy_n(r.sge.s, r.num_sge, g.sge.begin());
    uint8_t status = sgl_check(c, qp.pd_index, g.sge.data(), g.num_sge, true);
    if (status == VIRTIO_RDMA_WC_SUCCESS &&
        st.gsi_rq.size() >= qp.cap.max_recv_wr) {
        status = VIRTIO_RDMA_WC_LOC_QP_OP_ERR; /* as a full host queue */
    }
    if (status != VIRTIO_RDMA_WC_SUCCESS) {
        complete_now(c, qp, qp.recv_cqn, r.wr_id, VIRTIO_RDMA_WC_RECV, status);
        return;
    }
    st.gsi_rq.push_back(g);
}

void Backend::gsi_flush(VrdmaCore &c, Qp &qp, QpState &s, bool complete)
{
    while (!s.gsi_rq.empty()) {
        const uint64_t wr_id = s.gsi_rq.front().wr_id;
        s.gsi_rq.pop_front();
        if (complete) {
            complete_now(c, qp, qp.recv_cqn, wr_id, VIRTIO_RDMA_WC_RECV,
                         VIRTIO_RDMA_WC_WR_FLUSH_ERR);
        }
    }
}

bool Backend::mad_receive(VrdmaCore &c, const VrdmaMad &m)
{
    Qp *qp = c.qps.at(kGsiQpn);
    QpState *s = qp ? std::get_if<QpState>(&qp->backend) : nullptr;
    const uint32_t state =
        qp ? qp->state() : uint32_t{VIRTIO_RDMA_QPS_RESET};
    roce::FrameAddr a;
    std::memcpy(a.sgid.data(), m.remote_gid, 16);
    std::memcpy(a.dgid.data(), m.local_gid, 16);
    /*
     * Receives are kept from INIT on, MADs taken from RTR on (IBA 10.3.1);
     * to one of the port's GIDs, from a GID of the same family.
     */
    if (!s || !s->gsi || s->gsi_rq.empty() ||
        (state != VIRTIO_RDMA_QPS_RTR && state != VIRTIO_RDMA_QPS_RTS &&
         state != VIRTIO_RDMA_QPS_SQD) ||
        !port_has_gid(c, m.local_gid) ||
        roce::gid_is_v4mapped(a.sgid) != roce::gid_is_v4mapped(a.dgid)) {
        mads_dropped++;
        return false;
    }
    a.tclass = m.tclass;
    a.hop_limit = m.hop_limit;
    a.flow_label = m.flow_label & 0xFFFFF;
    std::array<uint8_t, kMadRecvBytes> buf;
    roce::grh_area(a, kMadUdpPayload,
                   std::span<uint8_t, roce::kGrhBytes>(buf.data(),
                                                       roce::kGrhBytes));
    std::memcpy(buf.data() + roce::kGrhBytes, m.mad, VRDMA_MAD_LEN);

    const GsiRecv r = s->gsi_rq.front();
    s->gsi_rq.pop_front();
    virtio_rdma_cq_req cqe{};
    cqe.wr_id = r.wr_id;
    cqe.opcode = VIRTIO_RDMA_WC_RECV;
    cqe.qp_num = qp->wire_qpn;
    cqe.port_num = kPortNum;
    cqe.status = sgl_copy(c, qp->pd_index, r.sge.data(), r.num_sge, 0,
                          buf.data(), kMadRecvBytes, true);
    if (cqe.status != VIRTIO_RDMA_WC_SUCCESS) {
        /* The buffer was checked when posted; too short is the guest's. */
        cq_deliver(c, qp->recv_cqn, cqe, true, stats);
        qp_enter_error(c, *qp);
        return true;
    }
    cqe.byte_len = kMadRecvBytes;
    cqe.src_qp = kGsiQpn;
    cqe.wc_flags = VIRTIO_RDMA_WC_GRH;
    cqe.pkey_index = 0; /* the one P_Key */
    mads_received++;
    /* Every receive may wake an armed CQ (as the host's: completions.cc). */
    cq_deliver(c, qp->recv_cqn, cqe, true, stats);
    return true;
}

} // namespace vrdma::ib
