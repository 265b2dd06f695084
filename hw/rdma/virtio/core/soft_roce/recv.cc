/*
 * virtio-rdma soft-RoCE engine: frames in (rxe_recv.c's role).
 *
 * First, before any other work, is the frame ours at all: RoCEv2 by its
 * headers (roce/classify.cc, vrdma_frame_roce_dst(): IPv4 that is no
 * fragment or IPv6, after at most one 802.1Q tag, UDP port 4791) and its
 * destination address one of our GIDs'.  Anything else goes back to
 * virtio-net untouched.  Then, each failure counted and reported (wire_drop):
 *   parse_frame() (the 20 ways of not being a well-formed RoCEv2 packet,
 *   ICRC included); BTH P_Key matches ours (IBA 10.9.3: low 15 bits equal,
 *   one of the two a full member); the destination QP exists; the opcode's
 *   transport is the QP's; the QP's state takes the packet (requests:
 *   RTR and later; responses: RTS and later; never ERR); RC/UC: the packet
 *   is between the QP's two addresses (rxe check_addr); UD/GSI: the Q_Key.
 * Requests go to the responder, responses (ACK, read response, atomic ACK)
 * to the completer.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <cstring>

#include "../core.h"
#include "engine.h"
#include "../roce/classify.h"
#include "../roce/headers.h"

namespace vrdma::soft_roce {

namespace {


/*
 * Our frame?  RoCEv2 by its headers (the device's one classifier, which
 * the C device's net filter uses too) and for one of our GIDs.
 */
bool is_ours(const VrdmaCore &c, std::span<const uint8_t> f)
{
    roce::Gid dst;
    if (!roce::roce_dst(f, &dst)) {
        return false;
    }
    for (const GidEntry &g : c.port.gids) {
        if (g.valid && g.gid == dst) {
            return true;
        }
    }
    return false;
}

/* IBA 10.9.3 P_Key matching against our one key, 0xFFFF. */
bool pkey_ok(uint16_t pkey)
{
    return (pkey & 0x7FFF) == (VRDMA_DEFAULT_PKEY & 0x7FFF);
}

bool transport_ok(const Qp &qp, roce::Transport t)
{
    switch (qp.type) {
    case VIRTIO_RDMA_QPT_RC:
        return t == roce::Transport::kRc;
    case VIRTIO_RDMA_QPT_UC:
        return t == roce::Transport::kUc;
    default:
        return t == roce::Transport::kUd;
    }
}

bool state_ok(uint32_t state, bool request)
{
    switch (state) {
    case VIRTIO_RDMA_QPS_RTR:
        return request;
    case VIRTIO_RDMA_QPS_RTS:
    case VIRTIO_RDMA_QPS_SQD:
    case VIRTIO_RDMA_QPS_SQE:
        return true;
    default:
        return false;
    }
}

bool addr_ok(const VrdmaCore &c, const Qp &qp, const roce::Packet &pkt)
{
    const virtio_rdma_ah_attr &ah = qp.attr.ah_attr;
    const GidEntry *ours = c.port.gid(ah.grh.sgid_index);
    return ours && ours->gid == pkt.dgid &&
           std::memcmp(pkt.sgid.data(), ah.grh.dgid, 16) == 0;
}

} // namespace

void drop(VrdmaCore &c, VrdmaDrop why, uint32_t qpn)
{
    eng(c).stats.drop[why]++;
    eng(c).stats.drops++;
    c.host.wire_drop(vrdma_drop_name(why), qpn);
}

static_assert(static_cast<int>(roce::ParseError::kIcrc) == VRDMA_DROP_ICRC,
              "VrdmaDrop 1..20 are the ParseError values");
static_assert(static_cast<int>(roce::ParseError::kTruncatedEth) ==
              VRDMA_DROP_TRUNCATED_ETH);
static_assert(static_cast<int>(roce::ParseError::kCount) ==
              VRDMA_DROP_PKEY);

bool receive(VrdmaCore &c, std::span<const uint8_t> frame, bool loopback)
{
    if (!is_ours(c, frame)) {
        if (loopback) {
            drop(c, VRDMA_DROP_NOT_OURS, 0);
        }
        return false;
    }
    eng(c).stats.rx_packets++;
    eng(c).stats.rx_bytes += frame.size();

    roce::Packet pkt;
    const roce::ParseError pe = roce::parse_frame(frame, &pkt);
    if (pe != roce::ParseError::kNone) {
        drop(c, static_cast<VrdmaDrop>(pe), 0);
        return true;
    }
    const roce::Bth bth = pkt.bth();
    const uint32_t qpn = bth.qpn();
    if (!pkey_ok(bth.pkey())) {
        drop(c, VRDMA_DROP_PKEY, qpn);
        return true;
    }
    Qp *qp = c.qp_by_wire(qpn); /* the wire QPN, not the queue index */
    if (!qp) {
        drop(c, VRDMA_DROP_NO_QP, qpn);
        return true;
    }
    if (!transport_ok(*qp, pkt.info->transport())) {
        drop(c, VRDMA_DROP_QP_TYPE, qpn);
        return true;
    }
    const bool request = pkt.info->has(roce::kMaskReq);
    if (!state_ok(qp->state(), request)) {
        drop(c, VRDMA_DROP_QP_STATE, qpn);
        return true;
    }
    if (qp_is_ud(*qp)) {
        const uint32_t qkey =
            qp->type == VIRTIO_RDMA_QPT_GSI ? kGsiQkey : qp->attr.qkey;
        if (pkt.deth().qkey() != qkey) {
            drop(c, VRDMA_DROP_QKEY, qpn);
            return true;
        }
    } else if (!addr_ok(c, *qp, pkt)) {
        drop(c, VRDMA_DROP_ADDR, qpn);
        return true;
    }
    if (request) {
        resp_receive(c, *qp, pkt);
    } else {
        comp_receive(c, *qp, pkt);
    }
    return true;
}

bool Engine::frame_receive(VrdmaCore &c, std::span<const uint8_t> frame)
{
    return receive(c, frame, false);
}

} // namespace vrdma::soft_roce
