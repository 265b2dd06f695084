/*
 * virtio-rdma core: queue pairs.  QP number (queue index) n (0 unused,
 * 1 = the GSI QP) names it in commands and doorbells; its queues are rings
 * in guest memory.  Peers address it by its wire QPN (wire_qpn.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_QP_H
#define HW_RDMA_VIRTIO_CORE_QP_H

#include <cstdint>
#include <memory>

#include "backend.h"
#include "errors.h"
#include "guest_abi.h"
#include "rings.h"
#include "roce/iba.h"

namespace vrdma {

using roce::kGsiQpn; /* the GSI QP: its queue index and its wire QPN */
inline constexpr uint32_t kFirstQpn = 2; /* of the other QPs */

struct Qp {
    uint32_t index = 0;      /* queue index: commands, doorbells */
    uint32_t wire_qpn = 0;   /* what peers address; CQE qp_num */
    uint8_t type = 0;        /* enum virtio_rdma_qp_type */
    uint8_t sq_sig_type = 0; /* enum virtio_rdma_sig_type */
    uint32_t pd_index = 0;
    uint32_t send_cqn = 0;
    uint32_t recv_cqn = 0;
    virtio_rdma_qp_cap cap{}; /* as created */
    /* As last set by MODIFY_QP, host byte order; qp_state is the state. */
    virtio_rdma_qp_attr attr{};
    /* The backend's state of this QP (backend.h). */
    BackendQp backend;
    uint32_t ctx = 0; /* the owner's context (VIRTIO_RDMA_F_RINGS) */
    std::unique_ptr<QpRings> rings; /* in guest memory; never null */
    /*
     * Its receives come from this SRQ (srq.h), with its max_sge and lkeys
     * of its PD (IBA: the SRQ's PD, not the QP's); 0: its RQ.
     */
    uint32_t srqn = 0;
    uint32_t srq_max_sge = 0;
    uint32_t srq_pd_index = 0;

    uint32_t state() const { return attr.qp_state; }
    /* The PD of the MRs a receive request of this QP names. */
    uint32_t recv_pd() const { return srqn ? srq_pd_index : pd_index; }
    /* The most SGEs a receive request of this QP may have. */
    uint32_t recv_max_sge() const
    {
        return srqn ? srq_max_sge : cap.max_recv_sge;
    }
    /* Back to the attributes of a new QP (state RESET). */
    void reset_attrs();
};

/*
 * MODIFY_QP's second half, once every check passed and the backend agreed
 * (at once, or when its deferred host work is done: VrdmaCore::pending).
 */
void modify_apply(VrdmaCore &c, uint32_t qpn, uint32_t mask,
                  const virtio_rdma_qp_attr &a);
/*
 * The QP to ERR for an error of its own, as IBA 10.3.1 has an error take
 * it there (a request it took failed, a completion of it was lost, its
 * ring broke, the host device reported it): the one writer of its state
 * outside MODIFY_QP.  Nothing if it is in ERR already; else the state
 * changes, then the backend flushes what it holds (backend.h:
 * qp_error_flush).
 */
void qp_enter_error(VrdmaCore &c, Qp &qp);
Status cmd_create_qp_ring(VrdmaCore &c,
                          const virtio_rdma_cmd_create_qp_ring &req,
                          virtio_rdma_rsp_create_qp_wire &rsp);
Status cmd_modify_qp(VrdmaCore &c, const virtio_rdma_cmd_modify_qp &req,
                     NoPayload &rsp);
Status cmd_query_qp(VrdmaCore &c, const virtio_rdma_cmd_query_qp &req,
                    virtio_rdma_qp_attr &rsp);
Status cmd_destroy_qp(VrdmaCore &c, const virtio_rdma_cmd_destroy_qp &req,
                      NoPayload &rsp);

} // namespace vrdma

#endif
