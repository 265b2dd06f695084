/*
 * virtio-rdma core: the port (see port.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "port.h"

#include <algorithm>
#include <cstring>

#include "core.h"
#include "gid_allow.h"
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

uint64_t gid_half(const std::array<uint8_t, 16> &gid, unsigned half)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < 8; i++) {
        v = v << 8 | gid[half * 8 + i];
    }
    return v;
}

const GidEntry *source_gid(const VrdmaCore &c, uint32_t index)
{
    const GidEntry *e = c.port.gid(index);
    if (!e || e->foreign ||
        (c.lim.allow.n && !gid_allowed(c.lim.allow, e->gid.data()))) {
        return nullptr;
    }
    return e;
}

Status source_gid_refused(const VrdmaCore &c, uint32_t index)
{
    const GidEntry *e = c.port.gid(index);
    if (!e) {
        return fail(VRDMA_ERR_BAD_INDEX, "attrs.ah_attr.grh.sgid_index",
                    index);
    }
    if (e->foreign) {
        return fail(VRDMA_ERR_NOT_ALLOWED,
                    "attrs.ah_attr.grh.sgid_index: GID held by another "
                    "device (rdmacm-mux)", gid_half(e->gid, 0),
                    gid_half(e->gid, 1));
    }
    return fail(VRDMA_ERR_NOT_ALLOWED,
                "attrs.ah_attr.grh.sgid_index: GID not in allowed-gids",
                gid_half(e->gid, 0), gid_half(e->gid, 1));
}

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
    /* Management's list first, whatever the backend: the guest may not have it. */
    if (c.lim.allow.n && !gid_allowed(c.lim.allow, next.gid.data())) {
        return fail(VRDMA_ERR_NOT_ALLOWED, "gid: not in allowed-gids",
                    gid_half(next.gid, 0), gid_half(next.gid, 1));
    }
    if (Status s = backend::gid_adding(c, req.index, next); !s.ok()) {
        return s;
    }
    /* The mux's answer is about the value: a second entry shares it. */
    for (const GidEntry &o : c.port.gids) {
        next.foreign |= o.valid && o.gid == next.gid && o.foreign;
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

extern "C" void vrdma_core_gid_claim(VrdmaCore *core, const uint8_t gid[16],
                                     bool ours)
{
    for (vrdma::GidEntry &e : core->port.gids) {
        if (e.valid && std::memcmp(e.gid.data(), gid, 16) == 0) {
            e.foreign = !ours;
        }
    }
}
