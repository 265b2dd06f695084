/*
 * virtio-rdma core: the port (see port.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "port.h"

#include <algorithm>
#include <cstring>

#include "core.h"
#include "roce/iba.h"

namespace vrdma {

namespace {

constexpr uint32_t kPortCapCmSup = 1u << 16;   /* IB_PORT_CM_SUP */
constexpr uint8_t kWidth4x = 2;                /* IB_WIDTH_4X */
constexpr uint16_t kSpeedEdr = 32;             /* IB_SPEED_EDR */
constexpr uint8_t kPhysStateLinkUp = 5;        /* IB_PORT_PHYS_STATE_LINK_UP */
constexpr uint8_t kPhysStateDisabled = 3;      /* IB_PORT_PHYS_STATE_DISABLED */

/* @field: the request's name for its port number. */
Status check_port(uint32_t port, const char *field)
{
    if (port != kPortNum) {
        return fail(VRDMA_ERR_BAD_PORT, field, port, kPortNum);
    }
    return kOk;
}

Status check_gid_index(uint32_t index)
{
    if (index >= VRDMA_GID_TABLE_LEN) {
        return fail(VRDMA_ERR_BAD_INDEX, "index", index, VRDMA_GID_TABLE_LEN);
    }
    return kOk;
}

} // namespace

uint32_t active_mtu_for(uint32_t phys_mtu)
{
    /* enum ib_mtu n is 128 << n bytes. */
    for (uint32_t mtu = VIRTIO_RDMA_MTU_4096; mtu > VIRTIO_RDMA_MTU_256;
         mtu--) {
        if (uint64_t{128u << mtu} + kRoceOverhead <= phys_mtu) {
            return mtu;
        }
    }
    return VIRTIO_RDMA_MTU_256;
}

uint32_t Port::gid_count() const
{
    return static_cast<uint32_t>(std::count_if(
        gids.begin(), gids.end(), [](const GidEntry &e) { return e.valid; }));
}

Status cmd_query_port(VrdmaCore &c, const virtio_rdma_cmd_query_port &req,
                      virtio_rdma_port_attr &rsp)
{
    if (Status s = check_port(req.port, "port"); !s.ok()) {
        return s;
    }
    rsp.state = c.port.link_up ? VIRTIO_RDMA_PORT_ACTIVE : VIRTIO_RDMA_PORT_DOWN;
    rsp.max_mtu = VIRTIO_RDMA_MTU_4096;
    rsp.active_mtu = c.port.active_mtu;
    rsp.phys_mtu = c.port.phys_mtu;
    rsp.gid_tbl_len = VRDMA_GID_TABLE_LEN;
    rsp.port_cap_flags = kPortCapCmSup;
    rsp.max_msg_sz = c.port.max_msg_sz;
    rsp.pkey_tbl_len = VRDMA_PKEY_TABLE_LEN;
    rsp.active_width = kWidth4x;
    rsp.active_speed = kSpeedEdr;
    rsp.phys_state = c.port.link_up ? kPhysStateLinkUp : kPhysStateDisabled;
    return kOk;
}

Status cmd_query_pkey(VrdmaCore &, const virtio_rdma_cmd_query_pkey &req,
                      virtio_rdma_rsp_query_pkey &rsp)
{
    if (Status s = check_port(req.port, "port"); !s.ok()) {
        return s;
    }
    if (req.index >= VRDMA_PKEY_TABLE_LEN) {
        return fail(VRDMA_ERR_BAD_INDEX, "index", req.index,
                    VRDMA_PKEY_TABLE_LEN);
    }
    rsp.pkey = VRDMA_DEFAULT_PKEY;
    return kOk;
}

Status cmd_add_gid(VrdmaCore &c, const virtio_rdma_cmd_add_gid &req,
                   NoPayload &)
{
    if (Status s = check_port(req.port_num, "port_num"); !s.ok()) {
        return s;
    }
    if (Status s = check_gid_index(req.index); !s.ok()) {
        return s;
    }
    if (req.gid_type > VIRTIO_RDMA_GID_TYPE_ROCE_UDP_ENCAP) {
        return fail(VRDMA_ERR_BAD_ARG, "gid_type", req.gid_type,
                    VIRTIO_RDMA_GID_TYPE_ROCE_UDP_ENCAP);
    }
    GidEntry next;
    next.valid = true;
    std::memcpy(next.gid.data(), req.gid, sizeof(req.gid));
    next.type = req.gid_type;

    GidEntry &e = c.port.gids[req.index];
    if (e.valid && e.gid == next.gid && e.type == next.type) {
        return kOk; /* already there: nothing changes, no event */
    }
    if (e.valid) {
        c.gid_changed(req.index, e, false);
    }
    e = next;
    c.gid_changed(req.index, e, true);
    return kOk;
}

Status cmd_del_gid(VrdmaCore &c, const virtio_rdma_cmd_del_gid &req,
                   NoPayload &)
{
    if (Status s = check_port(req.port, "port"); !s.ok()) {
        return s;
    }
    if (Status s = check_gid_index(req.index); !s.ok()) {
        return s;
    }
    GidEntry &e = c.port.gids[req.index];
    if (!e.valid) {
        return fail(VRDMA_ERR_BAD_INDEX, "index", req.index);
    }
    const GidEntry old = e;
    e = GidEntry{};
    c.gid_changed(req.index, old, false);
    return kOk;
}

} // namespace vrdma
