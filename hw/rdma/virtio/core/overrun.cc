/*
 * virtio-rdma core: a CQ overrun the host found late.
 *
 * A host that runs the engine off its big lock cannot touch a CQ's ring
 * from the engine's thread: it queues each completion (cq_push succeeds)
 * and writes it into the ring later.  When it then finds no buffer, it
 * reports it here, with the consequence an overrun seen at once has
 * (soft_roce/cqe.cc): the completion is lost and counted, and the QP that completed
 * goes to ERR, flushing what it still holds.
 *
 * By the time the host writes, that QP may be gone and its number taken
 * by a new one, which did nothing wrong.  So the host names the QP by the
 * token of the instance that completed (vrdma_core_qp_token(), read in
 * cq_push): a token whose instance has ended is counted as stale and
 * changes no QP.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "backend.h"
#include "core.h"

using namespace vrdma;

extern "C" void vrdma_core_cq_overrun(VrdmaCore *core, uint32_t cqn,
                                      uint32_t qp_token, uint32_t status)
{
    VrdmaCore &c = *core;
    VrdmaDpStats &s = backend::stats(c);
    s.cq_overruns++;
    /* cq_push counted it as written; it was not. */
    s.completions -= s.completions > 0;
    if (status != VIRTIO_RDMA_WC_SUCCESS) {
        s.error_completions -= s.error_completions > 0;
    }
    const uint32_t qpn = qp_token & kHandleIndexMask;
    Qp *qp = c.qps.at(qpn);
    if (!qp_token || vrdma_core_qp_token(core, qpn) != qp_token) {
        s.stale_overruns++;
        return;
    }
    if (qp->send_cqn == cqn || qp->recv_cqn == cqn) {
        backend::qp_to_error(c, *qp);
    }
}
