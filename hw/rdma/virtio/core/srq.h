/*
 * virtio-rdma core: shared receive queues (VIRTIO_RDMA_F_RINGS).  An SRQ
 * is a ring of receive requests in guest memory that the QPs created with
 * its number receive from (spec: "Shared receive queues").  SRQ numbers
 * are 1..max_srq, the slot index; 0 names none.
 *
 * Who takes the entries is the backend's (srq_room): the soft-RoCE engine
 * takes one when a message needs it (srq_take, from the responder), the
 * ibverbs backend as the doorbells announce them (the ring turn), for a
 * host SRQ.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_SRQ_H
#define HW_RDMA_VIRTIO_CORE_SRQ_H

#include <cstdint>

#include "errors.h"
#include "guest_abi.h"
#include "rings.h"

struct VrdmaCore;

namespace vrdma {

struct Qp;

struct Srq {
    uint32_t index = 0;    /* srqn */
    uint32_t ctx = 0;      /* the owner's context */
    uint32_t pd_index = 0;
    uint32_t max_wr = 0;
    uint32_t max_sge = 0;
    uint32_t limit = 0;    /* armed while > 0 (IBA 10.2.9.3) */
    uint32_t refs = 0;     /* QPs receiving from it */
    WqRing ring;           /* pi: the last doorbell's counter; ci: taken */
    /* An index beyond the ring, a malformed entry, memory gone. */
    bool broken = false;

    /* Announced entries not taken yet. */
    uint32_t waiting() const { return broken ? 0 : ring.pi - ring.ci; }
};

/* The SRQ table's size: numbers 1..max_srq, slot 0 unused. */
inline uint32_t srq_slots(const VrdmaLimits &lim) { return lim.max_srq + 1; }

Status cmd_create_srq_ring(VrdmaCore &c,
                           const virtio_rdma_cmd_create_srq_ring &req,
                           virtio_rdma_rsp_create_srq &rsp);
Status cmd_modify_srq(VrdmaCore &c, const virtio_rdma_cmd_modify_srq &req,
                      NoPayload &rsp);
Status cmd_query_srq(VrdmaCore &c, const virtio_rdma_cmd_query_srq &req,
                     virtio_rdma_rsp_query_srq &rsp);
Status cmd_destroy_srq(VrdmaCore &c, const virtio_rdma_cmd_destroy_srq &req,
                       NoPayload &rsp);

/* An SRQ doorbell (rings.cc's dispatch): @returns whether a turn is due. */
bool srq_doorbell(VrdmaCore &c, uint32_t ctx, uint64_t value);
/*
 * The SRQ broke: it takes nothing more; one SRQ_ERR event.  @why and @a
 * for the trace.
 */
void srq_break(VrdmaCore &c, Srq &srq, const char *why, uint64_t a);
/*
 * @qp (on an SRQ) needs a receive: the SRQ's next entry, checked, is
 * admitted as @qp's receive (admit_recv, then the backend's post_recv).  Nothing if the SRQ is empty or
 * broken.  Fires the limit event when it is due.
 */
void srq_take(VrdmaCore &c, Qp &qp);
/*
 * The ring turn's share of the SRQs whose backend takes entries as they
 * are announced: at most @budget entries; @returns how many.
 */
uint32_t srqs_turn(VrdmaCore &c, uint32_t budget);
/* Does an SRQ still wait for the turn? */
bool srqs_scheduled(const VrdmaCore &c);
/* Guest memory [host, host + len) went away: SRQs on it break. */
void srqs_revoke_host_range(VrdmaCore &c, uintptr_t host, uint64_t len);

} // namespace vrdma

#endif
