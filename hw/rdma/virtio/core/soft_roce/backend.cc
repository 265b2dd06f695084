/*
 * virtio-rdma soft-RoCE engine: its side of the backend seam
 * (../backend.h).  The per-packet hooks are defined where their work is,
 * so that nothing stands between the seam's visit and the work:
 * Engine::post_send/post_recv in wqe.cc, frame_receive in recv.cc, run,
 * timer and reset in run.cc.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "engine.h"

namespace vrdma::soft_roce {

Status Engine::qp_created(VrdmaCore &c, Qp &qp)
{
    qp_create(c, qp);
    /* A random wire QPN; the GSI QP's is 1 (IBA). */
    qp.wire_qpn = qp.index == kGsiQpn ? kGsiQpn : c.wires.pick(c.rng);
    return kOk;
}

void Engine::qp_modified(VrdmaCore &c, Qp &qp, uint32_t old_state,
                         uint32_t mask)
{
    soft_roce::qp_modified(c, qp, old_state, mask);
}

void Engine::qp_destroyed(VrdmaCore &c, Qp &qp)
{
    qp_destroy(c, qp);
}

void Engine::qp_error_flush(VrdmaCore &c, Qp &qp)
{
    soft_roce::qp_error_flush(c, qp);
}

/* The engine reads MRs straight from the core's table (mem.cc). */
Status Engine::mr_registered(VrdmaCore &c, uint32_t index, Mr &mr)
{
    mr.lkey = c.mrs.next_key(index);
    /*
     * A fast-registration MR always gets an rkey, as rxe_mr_init_fast() does:
     * ib_alloc_mr() asks for no rights, yet kernel ULPs build the REG_MR key
     * from ib_mr.rkey (nvme-rdma: ib_inc_rkey(mr->rkey)).  It opens nothing
     * before a REG_MR validates the MR with the rights that WQE grants.
     */
    mr.rkey = (mr.access & VIRTIO_RDMA_ACCESS_REMOTE) ||
                      mr.kind == MrKind::kFastReg
                  ? mr.lkey
                  : 0;
    return kOk;
}

void Engine::mr_mapped(VrdmaCore &, Mr &)
{
}

void Engine::mr_revoked(VrdmaCore &, Mr &)
{
}

Status Engine::mr_deregistered(VrdmaCore &, Mr &)
{
    return kOk;
}

} // namespace vrdma::soft_roce
