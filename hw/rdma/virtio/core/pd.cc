/*
 * virtio-rdma core: protection domains.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "pd.h"

#include <memory>

#include "core.h"

namespace vrdma {

Status cmd_create_pd(VrdmaCore &c, const NoPayload &,
                     virtio_rdma_rsp_create_pd &rsp)
{
    const auto index = c.pds.lowest_free();
    if (!index) {
        return fail(VRDMA_ERR_TABLE_FULL, "pdn", c.pds.capacity());
    }
    if (Status s = backend::pd_created(c, *index); !s.ok()) {
        return s;
    }
    c.pds.insert(*index, std::make_unique<Pd>());
    rsp.pdn = c.pds.handle_of(*index);
    return kOk;
}

Status cmd_destroy_pd(VrdmaCore &c, const virtio_rdma_cmd_destroy_pd &req,
                      NoPayload &)
{
    const Pd *pd = c.pds.find(req.pdn);
    if (!pd) {
        return fail(VRDMA_ERR_BAD_HANDLE, "pdn", req.pdn);
    }
    if (pd->refs) {
        return fail(VRDMA_ERR_IN_USE, "pdn", req.pdn, pd->refs);
    }
    backend::pd_destroyed(c, req.pdn & kHandleIndexMask);
    c.pds.erase(req.pdn & kHandleIndexMask);
    return kOk;
}

} // namespace vrdma
