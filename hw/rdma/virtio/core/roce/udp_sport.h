/*
 * virtio-rdma soft-RoCE: the UDP source port of a QP's packets, chosen as
 * Linux rxe chooses it, so that flows hash the same way on the wire.  The
 * receiver never checks it (any source port is accepted).
 *
 *  - At QP create: 0xC000 + (hash_32(qpn, 14) & 0x3fff), hash_32 being the
 *    kernel's multiplicative hash by GOLDEN_RATIO_32 (rxe_qp.c).
 *  - When modify-QP sets an address vector with a GRH: the port derived
 *    from the flow label, or if that is 0 from the two QP numbers
 *    (rdma_get_udp_sport() of include/rdma/ib_verbs.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_ROCE_UDP_SPORT_H
#define HW_RDMA_VIRTIO_CORE_ROCE_UDP_SPORT_H

#include <cstdint>

namespace vrdma::roce {

/* IB_ROCE_UDP_ENCAP_VALID_PORT_MIN; rxe's RXE_ROCE_V2_SPORT. */
inline constexpr uint16_t kRoceSportMin = 0xC000;
inline constexpr uint32_t kFlowLabelMask = 0xFFFFF;

/* The kernel's hash_32(): the top @bits bits of val * GOLDEN_RATIO_32. */
constexpr uint32_t kernel_hash_32(uint32_t val, unsigned bits)
{
    return static_cast<uint32_t>(val * 0x61C88647u) >> (32 - bits);
}

/* rxe's source port of a new QP. */
constexpr uint16_t udp_sport_for_qpn(uint32_t qpn)
{
    return static_cast<uint16_t>(kRoceSportMin +
                                 (kernel_hash_32(qpn, 14) & 0x3FFF));
}

/* rdma_calc_flow_label(): a 20-bit flow label from the two QP numbers. */
constexpr uint32_t flow_label_from_qpns(uint32_t lqpn, uint32_t rqpn)
{
    uint64_t v = uint64_t{lqpn} * rqpn;
    v ^= v >> 20;
    v ^= v >> 40;
    return static_cast<uint32_t>(v & kFlowLabelMask);
}

/* rdma_flow_label_to_udp_sport(): fold 20 bits into 14, set 0xC000. */
constexpr uint16_t udp_sport_from_flow_label(uint32_t fl)
{
    uint32_t low = fl & 0x3FFF;
    const uint32_t high = fl & 0xFC000;
    low ^= high >> 14;
    return static_cast<uint16_t>(low | kRoceSportMin);
}

/*
 * rdma_get_udp_sport(): the source port for a GRH address vector with flow
 * label @fl, local QP @lqpn and remote QP @rqpn.
 */
constexpr uint16_t udp_sport_for_av(uint32_t fl, uint32_t lqpn,
                                    uint32_t rqpn)
{
    if (fl == 0) {
        fl = flow_label_from_qpns(lqpn, rqpn);
    }
    return udp_sport_from_flow_label(fl);
}

} // namespace vrdma::roce

#endif
