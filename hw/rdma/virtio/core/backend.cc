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

uint32_t qp_created(VrdmaCore &c, Qp &qp)
{
    return with(c, [&](auto &b) { return b.qp_created(c, qp); });
}

void qp_modified(VrdmaCore &c, Qp &qp, uint32_t old_state, uint32_t mask)
{
    with(c, [&](auto &b) { b.qp_modified(c, qp, old_state, mask); });
}

void qp_destroyed(VrdmaCore &c, Qp &qp)
{
    with(c, [&](auto &b) { b.qp_destroyed(c, qp); });
}

void qp_to_error(VrdmaCore &c, Qp &qp)
{
    with(c, [&](auto &b) { b.qp_to_error(c, qp); });
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

void mr_deregistered(VrdmaCore &c, Mr &mr)
{
    with(c, [&](auto &b) { b.mr_deregistered(c, mr); });
}

void reset(VrdmaCore &c)
{
    with(c, [&](auto &b) { b.reset(c); });
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
