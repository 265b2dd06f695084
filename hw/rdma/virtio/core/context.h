/*
 * virtio-rdma core: contexts (VIRTIO_RDMA_F_RINGS).  A context owns ring
 * queues and one doorbell page; a doorbell rings only its own context's
 * queues.  Context 0 is the kernel's and always exists; 1..max_ctx are
 * handed out by ALLOC_CONTEXT, one per guest process that opens the device.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_CONTEXT_H
#define HW_RDMA_VIRTIO_CORE_CONTEXT_H

#include <cstdint>
#include <optional>
#include <vector>

#include "errors.h"
#include "guest_abi.h"

struct VrdmaCore;

namespace vrdma {

class ContextTable {
public:
    explicit ContextTable(uint32_t max_ctx)
        : live_(size_t{max_ctx} + 1), objects_(size_t{max_ctx} + 1)
    {
        live_[VIRTIO_RDMA_KERNEL_CTX] = true;
    }

    bool live(uint32_t ctx) const { return ctx < live_.size() && live_[ctx]; }
    /* The lowest free user context, now live; none: nullopt. */
    std::optional<uint32_t> alloc();
    void free(uint32_t ctx) { live_[ctx] = false; }
    /* Queues a live context owns (it cannot be freed while they exist). */
    uint32_t objects(uint32_t ctx) const { return objects_[ctx]; }
    void ref(uint32_t ctx) { objects_[ctx]++; }
    void unref(uint32_t ctx) { objects_[ctx]--; }
    uint32_t max_ctx() const { return static_cast<uint32_t>(live_.size() - 1); }
    /* Device reset: only the kernel's context is left, owning nothing. */
    void clear();

private:
    std::vector<bool> live_;
    std::vector<uint32_t> objects_;
};

Status cmd_alloc_context(VrdmaCore &c, const NoPayload &req,
                         virtio_rdma_rsp_alloc_context &rsp);
Status cmd_free_context(VrdmaCore &c, const virtio_rdma_cmd_free_context &req,
                        NoPayload &rsp);

} // namespace vrdma

#endif
