/*
 * virtio-rdma core: the device's one port: attributes, GID table, P_Key
 * table (one entry, the default full-membership key).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_PORT_H
#define HW_RDMA_VIRTIO_CORE_PORT_H

#include <array>
#include <cstdint>

#include "errors.h"
#include "guest_abi.h"
#include "roce/iba.h"

namespace vrdma {

inline constexpr uint32_t kPortNum = 1;

/*
 * What the netdev MTU must leave for headers, as Linux rxe reserves it
 * (RXE_MAX_HDR_LENGTH: IPv6 40 + UDP 8 + BTH 12 + the largest extension
 * headers + ICRC), so both ends of a link agree on the active MTU.
 */
inline constexpr uint32_t kRoceOverhead = 80;

/* enum ib_mtu of the largest IB MTU that fits @phys_mtu; at least 256. */
uint32_t active_mtu_for(uint32_t phys_mtu);

struct GidEntry {
    bool valid = false;
    std::array<uint8_t, 16> gid{};
    uint32_t type = 0; /* enum virtio_rdma_gid_type */
};

struct Port {
    explicit Port(uint32_t phys_mtu_)
        : phys_mtu(phys_mtu_), active_mtu(active_mtu_for(phys_mtu_))
    {
    }

    /* The valid entry at @index, or nullptr. */
    const GidEntry *gid(uint32_t index) const
    {
        return index < gids.size() && gids[index].valid ? &gids[index]
                                                        : nullptr;
    }
    uint32_t gid_count() const;

    const uint32_t phys_mtu;
    const uint32_t active_mtu;
    std::array<GidEntry, VRDMA_GID_TABLE_LEN> gids;
    /*
     * What the backend says of the link (a host device's port events) and
     * of the largest message (a host device's may be smaller than IBA's).
     */
    bool link_up = true;
    uint32_t max_msg_sz = roce::kMaxMsgSize;
};

Status cmd_query_port(VrdmaCore &c, const virtio_rdma_cmd_query_port &req,
                      virtio_rdma_port_attr &rsp);
Status cmd_query_pkey(VrdmaCore &c, const virtio_rdma_cmd_query_pkey &req,
                      virtio_rdma_rsp_query_pkey &rsp);
Status cmd_add_gid(VrdmaCore &c, const virtio_rdma_cmd_add_gid &req,
                   NoPayload &rsp);
Status cmd_del_gid(VrdmaCore &c, const virtio_rdma_cmd_del_gid &req,
                   NoPayload &rsp);

} // namespace vrdma

#endif
