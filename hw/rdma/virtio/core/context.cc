/*
 * virtio-rdma core: contexts (context.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "context.h"

#include <algorithm>

#include "core.h"

namespace vrdma {

std::optional<uint32_t> ContextTable::alloc()
{
    for (uint32_t i = 1; i < live_.size(); i++) {
        if (!live_[i]) {
            live_[i] = true;
            objects_[i] = 0;
            return i;
        }
    }
    return std::nullopt;
}

void ContextTable::clear()
{
    std::fill(live_.begin(), live_.end(), false);
    std::fill(objects_.begin(), objects_.end(), 0);
    live_[VIRTIO_RDMA_KERNEL_CTX] = true;
}

Status cmd_alloc_context(VrdmaCore &c, const NoPayload &,
                         virtio_rdma_rsp_alloc_context &rsp)
{
    const auto ctx = c.contexts.alloc();
    if (!ctx) {
        return fail(VRDMA_ERR_TABLE_FULL, "ctx", c.contexts.max_ctx());
    }
    rsp.ctx = *ctx;
    return kOk;
}

Status cmd_free_context(VrdmaCore &c, const virtio_rdma_cmd_free_context &req,
                        NoPayload &)
{
    if (req.ctx == VIRTIO_RDMA_KERNEL_CTX || !c.contexts.live(req.ctx)) {
        return fail(VRDMA_ERR_BAD_HANDLE, "ctx", req.ctx);
    }
    if (c.contexts.objects(req.ctx)) {
        return fail(VRDMA_ERR_IN_USE, "ctx", req.ctx,
                    c.contexts.objects(req.ctx));
    }
    c.contexts.free(req.ctx);
    return kOk;
}

} // namespace vrdma
