/*
 * virtio-rdma core: completion queues.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "cq.h"

#include <cstring>
#include <memory>

#include "core.h"

namespace vrdma {

namespace {

/*
 * A completion (guest order) into @cq's ring: the CQE, then its owner byte
 * (release: the guest sees the CQE whole once it sees the owner), then
 * device_idx.  driver_idx is read once, before; @returns false if the CQ is
 * full or broken (one CQ_ERR event each time: the host keeps one pending).
 */
bool ring_push(VrdmaCore &c, uint32_t cqn, CqRing &r,
               const virtio_rdma_cq_req &cqe)
{
    if (r.broken || !r.ring.mapped()) {
        return false;
    }
    const uint32_t used = r.pi - r.ring.driver_idx();
    if (used >= r.ring.entries()) {
        if (used > r.ring.entries()) {
            r.broken = true; /* the driver claims what was never written */
            c.host.guest_error(0, VRDMA_ERR_BAD_ARG, "ring.driver_idx",
                               r.pi - used, cqn);
        }
        c.host.async_event(VIRTIO_RDMA_EVENT_CQ_ERR, cqn);
        return false;
    }
    auto *e = reinterpret_cast<virtio_rdma_cqe *>(r.ring.entry(r.pi));
    std::memcpy(&e->wc, &cqe, sizeof(cqe));
    std::memset(e->reserved, 0, sizeof(e->reserved));
    const bool odd_pass = (r.pi >> r.ring.log_entries()) & 1;
    __atomic_store_n(&e->owner, odd_pass ? 0 : VIRTIO_RDMA_CQE_OWNER,
                     __ATOMIC_RELEASE);
    r.pi++;
    r.ring.set_device_idx(r.pi);
    return true;
}

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
    if (!ring_push(c, cqn, *cq->ring, w)) {
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

Status cmd_create_cq_ring(VrdmaCore &c,
                          const virtio_rdma_cmd_create_cq_ring &req,
                          virtio_rdma_rsp_create_cq &rsp)
{
    if (!c.contexts.live(req.ctx)) {
        return fail(VRDMA_ERR_BAD_HANDLE, "ctx", req.ctx);
    }
    /* The ring is the CQ's storage: only its size bounds the depth. */
    if (req.cqe < 1 || req.cqe > max_ring_cqe(c.lim)) {
        return fail(VRDMA_ERR_LIMIT, "cqe", req.cqe, max_ring_cqe(c.lim));
    }
    if (req.ring.log_stride != VIRTIO_RDMA_CQE_LOG_STRIDE) {
        return fail(VRDMA_ERR_LIMIT, "ring.log_stride", req.ring.log_stride,
                    VIRTIO_RDMA_CQE_LOG_STRIDE);
    }
    if (req.ring.log_entries > VIRTIO_RDMA_RING_MAX_LOG_ENTRIES ||
        (1u << req.ring.log_entries) < req.cqe) {
        return fail(VRDMA_ERR_LIMIT, "ring.log_entries", req.ring.log_entries,
                    req.cqe);
    }
    auto ring = std::make_unique<CqRing>();
    if (Status s = GuestRing::map(c, req.ring, kCqRingNames, ring->ring);
        !s.ok()) {
        return s;
    }
    const auto cqn = c.cqs.lowest_free(0, c.lim.max_cq);
    if (!cqn) {
        return fail(VRDMA_ERR_TABLE_FULL, "cqn", c.lim.max_cq);
    }
    auto cq = std::make_unique<Cq>();
    cq->cqe = req.cqe;
    cq->ctx = req.ctx;
    cq->ring = std::move(ring);
    if (Status s = backend::cq_created(c, *cqn, *cq); !s.ok()) {
        return s;
    }
    c.cqs.insert(*cqn, std::move(cq));
    c.contexts.ref(req.ctx);
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
    c.contexts.unref(cq->ctx);
    c.cqs.erase(req.cqn); /* unmaps its ring */
    return kOk;
}

} // namespace vrdma
