/*
 * virtio-rdma core: completion queues, each a ring in guest memory.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_CQ_H
#define HW_RDMA_VIRTIO_CORE_CQ_H

#include <cstdint>
#include <memory>

#include "errors.h"
#include "guest_abi.h"
#include "hw/rdma/virtio-rdma-core.h"
#include "rings.h"

namespace vrdma {

struct Cq {
    uint32_t cqe = 0;   /* requested depth */
    uint32_t armed = 0; /* VIRTIO_RDMA_NOTIFY_* until the next event */
    uint32_t refs = 0;  /* QP send/receive queues completing here */
    uint32_t ctx = 0;   /* the owner's context */
    std::unique_ptr<CqRing> ring; /* in guest memory; never null */

    /*
     * A completion was written: does it raise the event the CQ is armed
     * for (IBA 11.4.2.2)?  NEXT_COMPLETION fires on any; SOLICITED on a
     * solicited or an error completion.  An event disarms the CQ until the
     * next CQ_ARM doorbell.
     */
    bool take_event(bool solicited, bool error)
    {
        if ((armed & VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION) ||
            ((armed & VIRTIO_RDMA_NOTIFY_SOLICITED) && (solicited || error))) {
            armed = 0;
            return true;
        }
        return false;
    }
};

/*
 * Writes @cqe (host order) into CQ @cqn's ring, counts it in @stats, and
 * interrupts the driver if the CQ's arming says so (@solicited: the
 * completion is of a solicited message).  @returns false on a CQ overrun
 * (the ring full or broken: the CQE is lost and counted).
 */
bool cq_deliver(VrdmaCore &c, uint32_t cqn, const virtio_rdma_cq_req &cqe,
                bool solicited, VrdmaDpStats &stats);

Status cmd_create_cq_ring(VrdmaCore &c,
                          const virtio_rdma_cmd_create_cq_ring &req,
                          virtio_rdma_rsp_create_cq &rsp);
Status cmd_destroy_cq(VrdmaCore &c, const virtio_rdma_cmd_destroy_cq &req,
                      NoPayload &rsp);

} // namespace vrdma

#endif
