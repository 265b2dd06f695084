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

bool cq_deliver(VrdmaCore &c, uint32_t cqn, const virtio_rdma_cq_req &cqe,
                bool solicited, VrdmaDpStats &stats)
{
    Cq *cq = c.cqs.at(cqn);
    if (!cq) {
        return true; /* cannot happen: the QP holds a reference */
    }
    virtio_rdma_cq_req w = cqe;
    le_fields(w);
    if (!c.host.cq_push(cqn, w)) {
        stats.cq_overruns++;
        return false;
    }
    stats.completions++;
    const bool error = cqe.status != VIRTIO_RDMA_WC_SUCCESS;
    stats.error_completions += error;
    if (cq->take_event(solicited, error)) {
        c.host.cq_notify(cqn);
    }
    return true;
}

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
    if (Status s = backend::cq_created(c, *cqn, *cq); !s.ok()) {
        return s;
    }
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
    backend::cq_destroyed(c, req.cqn);
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
