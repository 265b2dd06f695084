/*
 * virtio-rdma core: the queues in guest memory of QPs and CQs
 * (VIRTIO_RDMA_F_RINGS) -- their state in the device, the doorbells that
 * announce work, and the turn that copies it out (rings.cc).
 *
 * A work queue's counters: pi is the producer counter the last accepted
 * doorbell gave, ci the next entry the device copies.  Between doorbell
 * and turn, the QP waits in the core's RingSched: a list over QP slots,
 * each at most once, so the list is bounded by max_qp whatever the guest
 * rings.  Entries beyond the backend's window wait in the ring until the
 * backend pulls them (qp_rings_pull).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_RINGS_H
#define HW_RDMA_VIRTIO_CORE_RINGS_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ring.h"
#include "wqe.h"

struct VrdmaCore;

namespace vrdma {

struct Qp;

struct WqRing {
    GuestRing ring;   /* not mapped: the queue has no work requests */
    uint32_t pi = 0;
    uint32_t ci = 0;

    bool has_work() const { return ring.mapped() && pi != ci; }
};

struct QpRings {
    WqRing sq, rq;
    /* A ring broke (index beyond it, memory gone): nothing more is read. */
    bool broken = false;
};

struct CqRing {
    GuestRing ring;
    uint32_t pi = 0;
    /* driver_idx out of range or memory gone: takes no completion again. */
    bool broken = false;
};

/* The longest work request: a send header and every SGE. */
inline constexpr size_t kWqeMax =
    sizeof(virtio_rdma_sq_req) + VRDMA_MAX_SGE * sizeof(virtio_rdma_sge);

/*
 * Copies the entry at @w's consumer counter into @buf, once: the header,
 * then as many SGEs as the copied header names if they fit in the entry.
 * @returns the bytes to post; a request whose SGEs do not fit is posted as
 * its header alone, which the checks refuse (LOC_QP_OP_ERR).
 */
template <typename Header>
size_t copy_entry(const WqRing &w, uint8_t (&buf)[kWqeMax])
{
    static_assert(sizeof(Header) <= kWqeMax);
    const uint8_t *slot = w.ring.entry(w.ci);
    std::memcpy(buf, slot, sizeof(Header));
    uint32_t num_sge;
    std::memcpy(&num_sge, buf + offsetof(Header, num_sge), sizeof(num_sge));
    num_sge = le(num_sge);
    const uint64_t len =
        sizeof(Header) + uint64_t{num_sge} * sizeof(virtio_rdma_sge);
    if (len > w.ring.stride() || len > kWqeMax) {
        return sizeof(Header);
    }
    std::memcpy(buf + sizeof(Header), slot + sizeof(Header),
                len - sizeof(Header));
    return len;
}

/*
 * A work queue's ring from a CREATE_*_RING request: none for a queue
 * without work requests (@wr 0: every field 0), else at least @wr entries
 * of at least @entry_bytes each, then the ring checks.
 */
Status map_wq_ring(VrdmaCore &c, const virtio_rdma_ring &d, uint32_t wr,
                   uint64_t entry_bytes, const RingNames &names, WqRing &out);

/* Slots (QPs, SRQs) with work waiting in their rings, in the order they rang. */
class RingSched {
public:
    explicit RingSched(uint32_t slots)
        : next_(slots, kNone), prev_(slots, kNone), in_(slots)
    {
    }
    bool empty() const { return head_ == kNone; }
    uint32_t front() const { return head_; }
    void push_back(uint32_t qpn);
    void remove(uint32_t qpn);
    void clear();

private:
    static constexpr uint32_t kNone = UINT32_MAX;
    std::vector<uint32_t> next_, prev_;
    std::vector<bool> in_;
    uint32_t head_ = kNone, tail_ = kNone;
};

/*
 * A ring of @qp broke: ERR (its work flushed) and one QP_FATAL event;
 * @why and @a for the trace (guest_error, cmd 0).
 */
void qp_ring_break(VrdmaCore &c, Qp &qp, const char *why, uint64_t a);
/* MODIFY_QP to RESET: the ring counters start again from 0. */
void qp_rings_reset(VrdmaCore &c, Qp &qp);
/* DESTROY_QP: nothing of the QP stays scheduled. */
void qp_rings_destroyed(VrdmaCore &c, Qp &qp);
/*
 * The backend has room in @qp's window again (requests completed or were
 * flushed): takes what the rings hold now, up to the room and kQuantum
 * entries a queue.  Nothing for a QP without rings or with a broken one.
 */
struct RingPull {
    uint32_t taken = 0; /* entries taken, for the caller's budget */
    bool more = false;  /* entries left that the backend has room for */
};
RingPull qp_rings_pull(VrdmaCore &c, Qp &qp);
/* Does an unbroken ring of @qp hold entries the device has not taken? */
bool qp_rings_waiting(const Qp &qp);
/* A message found no receive taken: takes @qp's RQ entries now. */
void qp_rings_pull_recv(VrdmaCore &c, Qp &qp);
/*
 * Guest memory [host, host + len) went away: every ring on it is unmapped,
 * its QP or CQ broken with its event.
 */
void rings_revoke_host_range(VrdmaCore &c, uintptr_t host, uint64_t len);

} // namespace vrdma

#endif
