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
    /*
     * The MAD link says another device holds this GID in the mux
     * (vrdma_core_gid_claim): not a source while set.
     */
    bool foreign = false;
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

/*
 * The entry at @index if the guest may send from it: valid, inside the
 * allow-list (when there is one), not held by another device of the mux.
 * nullptr otherwise.  Every use of a source GID by a backend on a shared
 * host device goes through it (the check at ADD_GID is the first line;
 * this one keeps a table entry from outliving what made it acceptable).
 */
const GidEntry *source_gid(const VrdmaCore &c, uint32_t index);
/*
 * MODIFY_QP's refusal of source GID attrs.ah_attr.grh.sgid_index = @index
 * (source_gid() gave nullptr), naming the GID in the trace (its two
 * halves) and why.
 */
Status source_gid_refused(const VrdmaCore &c, uint32_t index);
/* The first (@half 0) or last 8 bytes of @gid as a number: a trace's a, b. */
uint64_t gid_half(const std::array<uint8_t, 16> &gid, unsigned half);

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
