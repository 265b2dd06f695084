/*
 * virtio-rdma core: the backend seam (backend.h) -- each hook visits the
 * core's backend once and calls the member of the same name.  The
 * per-packet hooks are visited in data_path.cc.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "backend.h"


#include "core.h"

namespace vrdma::backend {

Status pd_created(VrdmaCore &c, uint32_t index)
{
    return with(c, [&](auto &b) { return b.pd_created(c, index); });
}

void pd_destroyed(VrdmaCore &c, uint32_t index)
{
    with(c, [&](auto &b) { b.pd_destroyed(c, index); });
}

Status cq_created(VrdmaCore &c, uint32_t index, Cq &cq)
{
    return with(c, [&](auto &b) { return b.cq_created(c, index, cq); });
}

void cq_destroyed(VrdmaCore &c, uint32_t index)
{
    with(c, [&](auto &b) { b.cq_destroyed(c, index); });
}

Status qp_created(VrdmaCore &c, Qp &qp)
{
    return with(c, [&](auto &b) { return b.qp_created(c, qp); });
}

Status qp_modifying(VrdmaCore &c, Qp &qp, uint32_t mask,
                    const virtio_rdma_qp_attr &attrs)
{
    return with(c, [&](auto &b) { return b.qp_modifying(c, qp, mask, attrs); });
}

void qp_modified(VrdmaCore &c, Qp &qp, uint32_t old_state, uint32_t mask)
{
    with(c, [&](auto &b) { b.qp_modified(c, qp, old_state, mask); });
}

void qp_destroyed(VrdmaCore &c, Qp &qp)
{
    with(c, [&](auto &b) { b.qp_destroyed(c, qp); });
}

Status gid_adding(VrdmaCore &c, uint32_t index, const GidEntry &gid)
{
    return with(c, [&](auto &b) { return b.gid_adding(c, index, gid); });
}

void qp_error_flush(VrdmaCore &c, Qp &qp)
{
    with(c, [&](auto &b) { b.qp_error_flush(c, qp); });
}

Status mr_registered(VrdmaCore &c, uint32_t index, Mr &mr)
{
    return with(c, [&](auto &b) { return b.mr_registered(c, index, mr); });
}

void mr_mapped(VrdmaCore &c, Mr &mr)
{
    with(c, [&](auto &b) { b.mr_mapped(c, mr); });
}

void mr_revoked(VrdmaCore &c, Mr &mr)
{
    with(c, [&](auto &b) { b.mr_revoked(c, mr); });
}

Status mr_deregistered(VrdmaCore &c, Mr &mr)
{
    return with(c, [&](auto &b) { return b.mr_deregistered(c, mr); });
}

void reset(VrdmaCore &c)
{
    with(c, [&](auto &b) { b.reset(c); });
}

void detach(VrdmaCore &c)
{
    with(c, [&](auto &b) { b.detach(c); });
}

const VrdmaDpStats &stats(const VrdmaCore &c)
{
    return with(c, [](const auto &b) -> const VrdmaDpStats & {
        return b.stats;
    });
}

VrdmaDpStats &stats(VrdmaCore &c)
{
    return with(c, [](auto &b) -> VrdmaDpStats & { return b.stats; });
}

} // namespace vrdma::backend
