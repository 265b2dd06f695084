/*
 * virtio-rdma core: completion queues.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "cq.h"

#include <memory>

#include "core.h"

namespace vrdma {

namespace {

constexpr uint32_t kNotifyFlags =
    VIRTIO_RDMA_NOTIFY_SOLICITED | VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION;

} // namespace

Status cmd_create_cq(VrdmaCore &c, const virtio_rdma_cmd_create_cq &req,
                     virtio_rdma_rsp_create_cq &rsp)
{
    /* Completions are buffers of the CQ's vring: its size bounds the depth. */
    if (req.cqe < 1 || req.cqe > c.lim.queue_size) {
        return fail(VRDMA_ERR_LIMIT, "cqe", req.cqe, c.lim.queue_size);
    }
    const auto cqn = c.cqs.lowest_free();
    if (!cqn) {
        return fail(VRDMA_ERR_TABLE_FULL, "cqn", c.cqs.capacity());
    }
    auto cq = std::make_unique<Cq>();
    cq->cqe = req.cqe;
    c.cqs.insert(*cqn, std::move(cq));
    rsp.cqn = *cqn;
    return kOk;
}

Status cmd_destroy_cq(VrdmaCore &c, const virtio_rdma_cmd_destroy_cq &req,
                      NoPayload &)
{
    const Cq *cq = c.cqs.at(req.cqn);
    if (!cq) {
        return fail(VRDMA_ERR_BAD_HANDLE, "cqn", req.cqn);
    }
    if (cq->refs) {
        return fail(VRDMA_ERR_IN_USE, "cqn", req.cqn, cq->refs);
    }
    c.cqs.erase(req.cqn);
    return kOk;
}

Status cmd_req_notify_cq(VrdmaCore &c, const virtio_rdma_cmd_req_notify &req,
                         NoPayload &)
{
    Cq *cq = c.cqs.at(req.cqn);
    if (!cq) {
        return fail(VRDMA_ERR_BAD_HANDLE, "cqn", req.cqn);
    }
    if (!req.flags || (req.flags & ~kNotifyFlags)) {
        return fail(VRDMA_ERR_BAD_ARG, "flags", req.flags, kNotifyFlags);
    }
    /* Arming twice before an event keeps the wider request (IBA 11.4.2.2). */
    cq->armed |= req.flags;
    return kOk;
}

} // namespace vrdma
