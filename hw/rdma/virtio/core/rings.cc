/*
 * virtio-rdma core: doorbells and the ring turn (rings.h).
 *
 * A doorbell only records: the new producer counter after checking it
 * against the ring (more than a ring's worth ahead of what the device took
 * breaks the QP), or a CQ's arming.  The turn, later and outside the
 * vCPU's write, copies each announced entry once -- the header, then the
 * SGEs its copied num_sge names -- and posts the copy, so the guest
 * changing the ring meanwhile changes nothing the device checked.  Work
 * per turn is VRDMA_RING_TURN_BUDGET entries over all QPs, at most
 * kQuantum per queue before the next QP's turn.
 *
 * Each entry is admitted (admit.h) before the backend sees it.  The
 * backend takes at most its window of a queue (wq_room); the rest
 * stays in the guest's ring until the backend pulls it (qp_rings_pull),
 * kQuantum a queue at a time, so the device never holds more of a QP than
 * its window however deep the ring.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "rings.h"

#include <algorithm>
#include <cstring>

#include "admit.h"
#include "backend.h"
#include "core.h"
#include "srq.h"

using namespace vrdma;
using vrdma::backend::with;

namespace vrdma {

void RingSched::push_back(uint32_t qpn)
{
    if (in_[qpn]) {
        return;
    }
    in_[qpn] = true;
    next_[qpn] = kNone;
    prev_[qpn] = tail_;
    if (tail_ == kNone) {
        head_ = qpn;
    } else {
        next_[tail_] = qpn;
    }
    tail_ = qpn;
}

void RingSched::remove(uint32_t qpn)
{
    if (!in_[qpn]) {
        return;
    }
    in_[qpn] = false;
    (prev_[qpn] == kNone ? head_ : next_[prev_[qpn]]) = next_[qpn];
    (next_[qpn] == kNone ? tail_ : prev_[next_[qpn]]) = prev_[qpn];
}

void RingSched::clear()
{
    std::fill(in_.begin(), in_.end(), false);
    head_ = tail_ = kNone;
}

void qp_ring_break(VrdmaCore &c, Qp &qp, const char *why, uint64_t a)
{
    c.host.guest_error(0, VRDMA_ERR_BAD_ARG, why, a, qp.index);
    qp.rings->broken = true;
    c.ring_sched.remove(qp.index);
    qp_enter_error(c, qp);
    c.host.async_event(VIRTIO_RDMA_EVENT_QP_FATAL, qp.index);
}

void qp_rings_reset(VrdmaCore &c, Qp &qp)
{
    QpRings &r = *qp.rings;
    for (WqRing *w : {&r.sq, &r.rq}) {
        w->pi = w->ci = 0;
        if (w->ring.mapped()) {
            w->ring.set_device_idx(0);
        }
    }
    r.broken = false;
    c.ring_sched.remove(qp.index);
}

void qp_rings_destroyed(VrdmaCore &c, Qp &qp)
{
    c.ring_sched.remove(qp.index);
}

Status map_wq_ring(VrdmaCore &c, const virtio_rdma_ring &d, uint32_t wr,
                   uint64_t entry_bytes, const RingNames &names, WqRing &out)
{
    if (!wr) {
        const bool empty = !d.pages && !d.npages && !d.log_entries &&
                           !d.log_stride && !d.reserved;
        return empty ? kOk : fail(VRDMA_ERR_BAD_ARG, names.npages, d.npages, 0);
    }
    if (d.log_entries > VIRTIO_RDMA_RING_MAX_LOG_ENTRIES ||
        (uint64_t{1} << d.log_entries) < wr) {
        return fail(VRDMA_ERR_LIMIT, names.log_entries, d.log_entries, wr);
    }
    if (d.log_stride <= VIRTIO_RDMA_RING_MAX_LOG_STRIDE &&
        (uint64_t{1} << d.log_stride) < entry_bytes) {
        return fail(VRDMA_ERR_LIMIT, names.log_stride, d.log_stride,
                    entry_bytes);
    }
    return GuestRing::map(c, d, names, out.ring);
}

void rings_revoke_host_range(VrdmaCore &c, uintptr_t host, uint64_t len)
{
    c.cqs.for_each([&](uint32_t cqn, Cq &cq) {
        if (cq.ring && cq.ring->ring.overlaps(host, len)) {
            cq.ring->ring.release();
            cq.ring->broken = true;
            c.host.async_event(VIRTIO_RDMA_EVENT_CQ_ERR, cqn);
        }
    });
    c.qps.for_each([&](uint32_t, Qp &qp) {
        if (qp.rings && (qp.rings->sq.ring.overlaps(host, len) ||
                         qp.rings->rq.ring.overlaps(host, len))) {
            qp.rings->sq.ring.release();
            qp.rings->rq.ring.release();
            qp_ring_break(c, qp, "ring.pages", host);
        }
    });
    srqs_revoke_host_range(c, host, len);
}

} // namespace vrdma

namespace {

constexpr uint32_t kQuantum = 64;
constexpr uint32_t kNotifyFlags =
    VIRTIO_RDMA_NOTIFY_SOLICITED | VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION;

/* A doorbell the device ignores: traced, nothing changes. */
bool ignored(VrdmaCore &c, const char *why, uint64_t value, uint32_t ctx)
{
    c.host.guest_error(0, VRDMA_ERR_BAD_HANDLE, why, value, ctx);
    return false;
}

bool wq_doorbell(VrdmaCore &c, uint32_t ctx, uint64_t value, bool is_rq)
{
    Qp *qp = c.qps.at(value & VIRTIO_RDMA_DB_QN_MASK);
    if (!qp || !qp->rings || qp->ctx != ctx) {
        return ignored(c, "doorbell.qpn", value, ctx);
    }
    WqRing &w = is_rq ? qp->rings->rq : qp->rings->sq;
    if (qp->rings->broken || !w.ring.mapped()) {
        return ignored(c, "doorbell.type", value, ctx);
    }
    const uint32_t pi = static_cast<uint32_t>(value >> 32);
    if (pi - w.ci > w.ring.entries()) {
        qp_ring_break(c, *qp, "doorbell.index", pi);
        return false;
    }
    w.pi = pi;
    if (w.has_work()) {
        c.ring_sched.push_back(qp->index);
    }
    return !c.ring_sched.empty();
}

bool cq_arm(VrdmaCore &c, uint32_t ctx, uint64_t value)
{
    const uint32_t cqn = value & VIRTIO_RDMA_DB_QN_MASK;
    Cq *cq = c.cqs.at(cqn);
    if (!cq || !cq->ring || cq->ctx != ctx) {
        return ignored(c, "doorbell.cqn", value, ctx);
    }
    const uint32_t flags = static_cast<uint32_t>(value >> 32);
    if (!flags || (flags & ~kNotifyFlags)) {
        return ignored(c, "doorbell.flags", value, ctx);
    }
    /* Arming twice before an event keeps the wider request (IBA 11.4.2.2). */
    cq->armed |= flags;
    return false;
}

uint32_t room(VrdmaCore &c, const Qp &qp, bool is_rq)
{
    return with(c, [&](const auto &b) { return b.wq_room(qp, is_rq); });
}

/* Can the backend take an entry of the queue now? */
bool takes_more(VrdmaCore &c, const Qp &qp, bool is_rq)
{
    const WqRing &w = is_rq ? qp.rings->rq : qp.rings->sq;
    return !qp.rings->broken && w.has_work() && room(c, qp, is_rq) != 0;
}

/*
 * Up to @max entries of one queue, as many as the backend has room for
 * (its window); @returns how many.
 */
uint32_t drain(VrdmaCore &c, Qp &qp, bool is_rq, uint32_t max)
{
    WqRing &w = is_rq ? qp.rings->rq : qp.rings->sq;
    uint8_t buf[kWqeMax];
    uint32_t n = 0;

    max = std::min(max, room(c, qp, is_rq));

    while (n < max && w.has_work() && !qp.rings->broken) {
        const size_t len = is_rq ? copy_entry<virtio_rdma_rq_req>(w, buf)
                                 : copy_entry<virtio_rdma_sq_req>(w, buf);
        w.ci++;
        n++;
        if (is_rq) {
            RecvReq r;
            if (admit_recv(c, qp, buf, len, r)) {
                with(c, [&](auto &b) { b.post_recv(c, qp, r); });
            }
        } else {
            SendReq r;
            if (admit_send(c, qp, buf, len, r)) {
                with(c, [&](auto &b) { b.post_send(c, qp, r); });
            }
        }
    }
    if (n && w.ring.mapped()) {
        w.ring.set_device_idx(w.ci);
    }
    return n;
}

} // namespace

namespace vrdma {

RingPull qp_rings_pull(VrdmaCore &c, Qp &qp)
{
    if (!qp.rings) {
        return {};
    }
    RingPull p;
    p.taken = drain(c, qp, false, kQuantum);
    p.taken += drain(c, qp, true, kQuantum);
    p.more = takes_more(c, qp, false) || takes_more(c, qp, true);
    return p;
}

bool qp_rings_waiting(const Qp &qp)
{
    return qp.rings && !qp.rings->broken &&
           (qp.rings->sq.has_work() || qp.rings->rq.has_work());
}

void qp_rings_pull_recv(VrdmaCore &c, Qp &qp)
{
    if (qp.srqn) {
        srq_take(c, qp); /* one entry: the SRQ is shared by need */
    } else if (qp.rings) {
        drain(c, qp, true, kQuantum);
    }
}

} // namespace vrdma

extern "C" {

bool vrdma_core_doorbell(VrdmaCore *core, uint32_t ctx, uint64_t value)
{
    VrdmaCore &c = *core;
    if (!c.has_feature(VIRTIO_RDMA_F_RINGS)) {
        return ignored(c, "doorbell", value, ctx);
    }
    switch ((value >> VIRTIO_RDMA_DB_TYPE_SHIFT) & 0xff) {
    case VIRTIO_RDMA_DB_SQ:
        return wq_doorbell(c, ctx, value, false);
    case VIRTIO_RDMA_DB_RQ:
        return wq_doorbell(c, ctx, value, true);
    case VIRTIO_RDMA_DB_SRQ:
        return srq_doorbell(c, ctx, value);
    case VIRTIO_RDMA_DB_CQ_ARM:
        return cq_arm(c, ctx, value);
    default:
        return ignored(c, "doorbell.type", value, ctx);
    }
}

bool vrdma_core_rings_turn(VrdmaCore *core)
{
    VrdmaCore &c = *core;
    uint32_t budget = VRDMA_RING_TURN_BUDGET;

    while (budget && !c.ring_sched.empty()) {
        const uint32_t qpn = c.ring_sched.front();
        c.ring_sched.remove(qpn);
        Qp *qp = c.qps.at(qpn);
        if (!qp || !qp->rings) {
            continue; /* cannot happen: destroy takes it off the list */
        }
        const uint32_t q = std::min(budget, kQuantum);
        budget -= drain(c, *qp, false, q);
        budget -= drain(c, *qp, true, std::min(budget, kQuantum));
        /*
         * A queue whose window is full waits for the backend's pull
         * (qp_rings_pull): the turn does not come back for it.
         */
        if (takes_more(c, *qp, false) || takes_more(c, *qp, true)) {
            c.ring_sched.push_back(qpn); /* the others go first */
        }
    }
    budget -= srqs_turn(c, budget);
    return !c.ring_sched.empty() || srqs_scheduled(c);
}

} // extern "C"
