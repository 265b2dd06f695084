/*
 * virtio-rdma soft-RoCE engine: frames out.
 *
 * Addresses as rxe puts them on the wire: source MAC the paired NIC's
 * (limits.mac), source IP from the GID at the AV's index, destination MAC
 * and IP from the AV (the QP's for RC/UC, the WQE's for UD); IPv4 with DF
 * and TOS = traffic class, TTL = hop limit; IPv6 with flow label 0; UDP
 * source port rxe's (rdma_get_udp_sport() for an RC/UC QP's GRH AV, the
 * hash of the QP number for UD).
 *
 * A frame whose destination MAC is our own goes to the bounded loopback
 * queue instead of the wire; vrdma_core_run() delivers it (two QPs of this
 * device talking: no recursion into the receive path, nothing on the wire).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <cstring>

#include "../core.h"
#include "engine.h"
#include "../roce/udp_sport.h"

namespace vrdma::soft_roce {

namespace {

bool sgid_of(VrdmaCore &c, uint32_t index, roce::FrameAddr *a)
{
    const GidEntry *g = c.port.gid(index);
    if (!g) {
        return false;
    }
    a->sgid = g->gid;
    return true;
}

} // namespace

bool addr_for_qp(VrdmaCore &c, const Qp &qp, roce::FrameAddr *a)
{
    const virtio_rdma_ah_attr &ah = qp.attr.ah_attr;
    *a = roce::FrameAddr{};
    std::memcpy(a->dmac.data(), ah.dmac, 6);
    std::memcpy(a->smac.data(), c.lim.mac, 6);
    std::memcpy(a->dgid.data(), ah.grh.dgid, 16);
    a->tclass = ah.grh.traffic_class;
    a->hop_limit = ah.grh.hop_limit;
    a->flow_label = 0; /* rxe sends 0; the label only picks the port */
    a->ip_id = eng(c).ip_id++;
    a->sport = roce::udp_sport_for_av(ah.grh.flow_label, qp.wire_qpn,
                                      qp.attr.dest_qp_num);
    return sgid_of(c, ah.grh.sgid_index, a);
}

bool addr_for_ud(VrdmaCore &c, const Qp &qp, const Av &av, roce::FrameAddr *a)
{
    *a = roce::FrameAddr{};
    a->dmac = av.dmac;
    std::memcpy(a->smac.data(), c.lim.mac, 6);
    a->dgid = av.dgid;
    a->tclass = av.tclass;
    a->hop_limit = av.hop_limit;
    a->ip_id = eng(c).ip_id++;
    a->sport = roce::udp_sport_for_qpn(qp.wire_qpn);
    return sgid_of(c, av.gid_index, a);
}

bool tx_begin(VrdmaCore &c, const roce::FrameAddr &a, uint8_t opcode,
              uint32_t payload, roce::TxFrame *f)
{
    return roce::frame_begin(std::span<uint8_t>(eng(c).tx), a, opcode, payload,
                             f) == roce::BuildError::kNone;
}

void tx_finish(VrdmaCore &c, const roce::TxFrame &f, const roce::FrameAddr &a)
{
    Engine &g = eng(c);
    roce::frame_finish(f);
    const size_t len = f.frame.size();
    g.stats.tx_packets++;
    g.stats.tx_bytes += len;
    if (std::memcmp(a.dmac.data(), c.lim.mac, 6) != 0) {
        c.host.net_send(f.frame.data(), len);
        return;
    }
    if (g.loop_count == kLoopSlots) {
        drop(c, VRDMA_DROP_LOOPBACK_FULL, 0);
        return;
    }
    const uint32_t slot = (g.loop_head + g.loop_count) % kLoopSlots;
    std::memcpy(&g.loop_buf[size_t{slot} * kMaxFrame], f.frame.data(), len);
    g.loop_len[slot] = static_cast<uint16_t>(len);
    g.loop_count++;
    g.stats.loopback_packets++;
    kick(c);
}

} // namespace vrdma::soft_roce
