/*
 * virtio-rdma soft-RoCE: the "is this frame RoCEv2" classifier (see
 * vrdma_frame_roce_dst() in virtio-rdma-core.h for the rule).
 *
 * It reads only what the rule needs, each field after checking the frame
 * is long enough for it, and keeps no state: the C device calls it from
 * its net filter, on whatever thread that runs, with no lock held.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "classify.h"

#include <cstring>

#include "headers.h"

namespace {

using namespace vrdma::roce;

/* IPv4 flags/fragment offset: MF (0x2000) and the 13-bit offset. */
constexpr uint16_t kIpv4MfOrOffset = 0x3FFF;

} // namespace

extern "C" bool vrdma_frame_roce_dst(const void *frame, size_t len,
                                     uint8_t dst_gid[16])
{
    const auto *p = static_cast<const uint8_t *>(frame);
    if (!p || len < kEthBytes) {
        return false;
    }
    size_t l3 = kEthBytes;
    uint16_t etype = load_be16(p + 12);
    if (etype == kEtherTypeVlan) {
        if (len < kEthBytes + kVlanBytes) {
            return false;
        }
        etype = load_be16(p + 16);
        l3 += kVlanBytes;
    }
    uint8_t dst[16] = {};
    size_t l4;
    if (etype == kEtherTypeIpv4) {
        if (len < l3 + kIpv4Bytes) {
            return false;
        }
        const uint8_t *ip = p + l3;
        const size_t ihl = size_t{ip[0] & 0x0Fu} * 4;
        /*
         * Any fragment -- the first one (MF) too -- is not ours: either all
         * pieces of a datagram go to the NIC's stack or none does.
         */
        if (ip[0] >> 4 != 4 || ihl < kIpv4Bytes || ip[9] != kIpProtoUdp ||
            (load_be16(ip + 6) & kIpv4MfOrOffset)) {
            return false;
        }
        dst[10] = dst[11] = 0xFF;
        std::memcpy(dst + 12, ip + 16, 4);
        l4 = l3 + ihl;
    } else if (etype == kEtherTypeIpv6) {
        if (len < l3 + kIpv6Bytes) {
            return false;
        }
        const uint8_t *ip = p + l3;
        /* An extension header (next header not UDP) is not ours either. */
        if (ip[0] >> 4 != 6 || ip[6] != kIpProtoUdp) {
            return false;
        }
        std::memcpy(dst, ip + 24, 16);
        l4 = l3 + kIpv6Bytes;
    } else {
        return false;
    }
    /* The UDP header up to its destination port. */
    if (len < l4 + 4 || load_be16(p + l4 + 2) != kRoceUdpPort) {
        return false;
    }
    std::memcpy(dst_gid, dst, 16);
    return true;
}
