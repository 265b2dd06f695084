/*
 * virtio-rdma core: shared receive queues (srq.h) -- the commands, the
 * SRQ doorbell, and taking an entry for a QP or for the backend.
 *
 * An entry is copied once (copy_entry) and its header checked here, with
 * the SRQ's max_sge, before a backend sees it: a malformed one breaks the
 * SRQ, as an index beyond the ring does, since no QP owns it yet.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "srq.h"

#include <algorithm>

#include "admit.h"
#include "backend.h"
#include "core.h"

using vrdma::backend::with;

namespace vrdma {

namespace {

constexpr RingNames kSrqRingNames{"ring.reserved", "ring.log_entries",
                                  "ring.log_stride", "ring.npages",
                                  "ring.pages"};
/* Entries the turn takes from one SRQ before the next one's. */
constexpr uint32_t kSrqQuantum = 64;

/* The SRQ a command names (0 names none), or nullptr. */
Srq *named_srq(const VrdmaCore &c, uint32_t srqn)
{
    return srqn ? c.srqs.at(srqn) : nullptr;
}

uint32_t srq_room(VrdmaCore &c, const Srq &srq)
{
    return with(c, [&](const auto &b) { return b.srq_room(srq); });
}

/*
 * The SRQ's next entry into @buf, checked: @returns its length, or 0 when
 * there is none (empty, broken) or it broke the SRQ.
 */
size_t next_entry(VrdmaCore &c, Srq &srq, uint8_t (&buf)[kWqeMax])
{
    if (srq.broken || !srq.ring.has_work()) {
        return 0;
    }
    const size_t len = copy_entry<virtio_rdma_rq_req>(srq.ring, buf);
    srq.ring.ci++;
    srq.ring.ring.set_device_idx(srq.ring.ci);
    const auto h = read_header<virtio_rdma_rq_req>(buf, len);
    if (check_recv(srq.max_sge, h, len) != VIRTIO_RDMA_WC_SUCCESS) {
        srq_break(c, srq, "srq.entry.num_sge", h.num_sge);
        return 0;
    }
    return len;
}

} // namespace

void srq_break(VrdmaCore &c, Srq &srq, const char *why, uint64_t a)
{
    c.host.guest_error(0, VRDMA_ERR_BAD_ARG, why, a, srq.index);
    srq.broken = true;
    c.srq_sched.remove(srq.index);
    c.host.async_event(VIRTIO_RDMA_EVENT_SRQ_ERR, srq.index);
}

bool srq_doorbell(VrdmaCore &c, uint32_t ctx, uint64_t value)
{
    Srq *srq = c.srqs.at(value & VIRTIO_RDMA_DB_QN_MASK);
    if (!srq || srq->ctx != ctx || srq->broken) {
        c.host.guest_error(0, VRDMA_ERR_BAD_HANDLE, "doorbell.srqn", value,
                           ctx);
        return false;
    }
    const uint32_t pi = static_cast<uint32_t>(value >> 32);
    if (pi - srq->ring.ci > srq->ring.ring.entries()) {
        srq_break(c, *srq, "doorbell.index", pi);
        return false;
    }
    srq->ring.pi = pi;
    /* A backend that takes entries by need (room 0) is not scheduled. */
    if (srq->ring.has_work() && srq_room(c, *srq)) {
        c.srq_sched.push_back(srq->index);
    }
    return !c.srq_sched.empty();
}

void srq_take(VrdmaCore &c, Qp &qp)
{
    Srq *srq = c.srqs.at(qp.srqn);
    uint8_t buf[kWqeMax];
    if (!srq) {
        return; /* cannot happen: the QP holds a reference */
    }
    const size_t len = next_entry(c, *srq, buf);
    if (!len) {
        return;
    }
    RecvReq r;
    if (admit_recv(c, qp, buf, len, r)) {
        with(c, [&](auto &b) { b.post_recv(c, qp, r); });
    }
    /*
     * IBA 10.2.9.3: below the limit once, then disarmed.  (A backend that
     * takes entries eagerly has its host's SRQ count them: srq_limit_set.)
     */
    if (srq->limit && srq->waiting() < srq->limit) {
        srq->limit = 0;
        c.host.async_event(VIRTIO_RDMA_EVENT_SRQ_LIMIT, srq->index);
    }
}

uint32_t srqs_turn(VrdmaCore &c, uint32_t budget)
{
    uint8_t buf[kWqeMax];
    uint32_t n = 0;

    while (n < budget && !c.srq_sched.empty()) {
        const uint32_t srqn = c.srq_sched.front();
        c.srq_sched.remove(srqn);
        Srq &srq = *c.srqs.at(srqn); /* destroy takes it off the list */
        const uint32_t max =
            std::min({budget - n, kSrqQuantum, srq_room(c, srq)});
        for (uint32_t i = 0; i < max; i++, n++) {
            const size_t len = next_entry(c, srq, buf);
            if (!len) {
                break;
            }
            RecvReq r;
            if (read_recv(buf, len, srq.max_sge, r) !=
                VIRTIO_RDMA_WC_SUCCESS) {
                /* next_entry checked the header: the SGEs' sum is too big. */
                srq_break(c, srq, "srq.entry.length", r.num_sge);
                continue; /* counted; next_entry finds it broken */
            }
            with(c, [&](auto &b) { b.post_srq_recv(c, srq, r); });
        }
        if (!srq.broken && srq.ring.has_work() && srq_room(c, srq)) {
            c.srq_sched.push_back(srqn); /* the others go first */
        }
    }
    return n;
}

bool srqs_scheduled(const VrdmaCore &c)
{
    return !c.srq_sched.empty();
}

void srqs_revoke_host_range(VrdmaCore &c, uintptr_t host, uint64_t len)
{
    c.srqs.for_each([&](uint32_t, Srq &srq) {
        if (srq.ring.ring.overlaps(host, len)) {
            srq.ring.ring.release();
            if (!srq.broken) {
                srq_break(c, srq, "ring.pages", host);
            }
        }
    });
}

Status cmd_create_srq_ring(VrdmaCore &c,
                           const virtio_rdma_cmd_create_srq_ring &req,
                           virtio_rdma_rsp_create_srq &rsp)
{
    if (!c.contexts.live(req.ctx)) {
        return fail(VRDMA_ERR_BAD_HANDLE, "ctx", req.ctx);
    }
    if (!c.pds.find(req.pdn)) {
        return fail(VRDMA_ERR_BAD_HANDLE, "pdn", req.pdn);
    }
    if (req.reserved) {
        return fail(VRDMA_ERR_BAD_ARG, "reserved", req.reserved);
    }
    if (req.max_wr < 1 || req.max_wr > max_srq_wr(c.lim)) {
        return fail(VRDMA_ERR_LIMIT, "max_wr", req.max_wr, max_srq_wr(c.lim));
    }
    if (req.max_sge < 1 || req.max_sge > max_srq_sge(c.lim)) {
        return fail(VRDMA_ERR_LIMIT, "max_sge", req.max_sge,
                    max_srq_sge(c.lim));
    }
    if (req.srq_limit > req.max_wr) {
        return fail(VRDMA_ERR_BAD_ARG, "srq_limit", req.srq_limit, req.max_wr);
    }
    auto srq = std::make_unique<Srq>();
    const uint64_t entry = sizeof(virtio_rdma_rq_req) +
                           uint64_t{req.max_sge} * sizeof(virtio_rdma_sge);
    if (Status s = map_wq_ring(c, req.ring, req.max_wr, entry, kSrqRingNames,
                               srq->ring);
        !s.ok()) {
        return s;
    }
    const auto srqn = c.srqs.lowest_free(1, srq_slots(c.lim));
    if (!srqn) {
        return fail(VRDMA_ERR_TABLE_FULL, "srqn", c.lim.max_srq);
    }
    srq->index = *srqn;
    srq->ctx = req.ctx;
    srq->pd_index = req.pdn & kHandleIndexMask;
    srq->max_wr = req.max_wr;
    srq->max_sge = req.max_sge;
    srq->limit = req.srq_limit;
    Srq *live = c.srqs.insert(*srqn, std::move(srq));
    if (Status s = with(c, [&](auto &b) { return b.srq_created(c, *live); });
        !s.ok()) {
        c.srqs.erase(*srqn);
        return s;
    }
    c.pds.at(live->pd_index)->refs++;
    c.contexts.ref(req.ctx);
    rsp.srqn = *srqn;
    return kOk;
}

Status cmd_modify_srq(VrdmaCore &c, const virtio_rdma_cmd_modify_srq &req,
                      NoPayload &)
{
    Srq *srq = named_srq(c, req.srqn);
    if (!srq) {
        return fail(VRDMA_ERR_BAD_HANDLE, "srqn", req.srqn);
    }
    constexpr uint32_t kKnown = VIRTIO_RDMA_SRQ_MAX_WR | VIRTIO_RDMA_SRQ_LIMIT;
    if (req.attr_mask & ~kKnown) {
        return fail(VRDMA_ERR_BAD_ARG, "attr_mask", req.attr_mask, kKnown);
    }
    if (req.attr_mask & VIRTIO_RDMA_SRQ_MAX_WR) { /* the ring is its size */
        return fail(VRDMA_ERR_UNSUPPORTED, "attr_mask", req.attr_mask,
                    VIRTIO_RDMA_SRQ_MAX_WR);
    }
    if (!(req.attr_mask & VIRTIO_RDMA_SRQ_LIMIT)) {
        return kOk;
    }
    if (req.srq_limit > srq->max_wr) {
        return fail(VRDMA_ERR_BAD_ARG, "srq_limit", req.srq_limit,
                    srq->max_wr);
    }
    if (Status s = with(c, [&](auto &b) {
            return b.srq_limit_set(c, *srq, req.srq_limit);
        });
        !s.ok()) {
        return s;
    }
    srq->limit = req.srq_limit;
    return kOk;
}

Status cmd_query_srq(VrdmaCore &c, const virtio_rdma_cmd_query_srq &req,
                     virtio_rdma_rsp_query_srq &rsp)
{
    const Srq *srq = named_srq(c, req.srqn);
    if (!srq) {
        return fail(VRDMA_ERR_BAD_HANDLE, "srqn", req.srqn);
    }
    rsp.max_wr = srq->max_wr;
    rsp.max_sge = srq->max_sge;
    rsp.srq_limit = srq->limit;
    return kOk;
}

Status cmd_destroy_srq(VrdmaCore &c, const virtio_rdma_cmd_destroy_srq &req,
                       NoPayload &)
{
    Srq *srq = named_srq(c, req.srqn);
    if (!srq) {
        return fail(VRDMA_ERR_BAD_HANDLE, "srqn", req.srqn);
    }
    if (srq->refs) {
        return fail(VRDMA_ERR_IN_USE, "srqn", req.srqn, srq->refs);
    }
    with(c, [&](auto &b) { b.srq_destroyed(c, *srq); });
    c.srq_sched.remove(req.srqn);
    c.pds.at(srq->pd_index)->refs--;
    c.contexts.unref(srq->ctx);
    c.srqs.erase(req.srqn);
    return kOk;
}

} // namespace vrdma
