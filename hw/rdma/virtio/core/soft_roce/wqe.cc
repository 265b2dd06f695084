/*
 * virtio-rdma soft-RoCE engine: work requests posted by the driver, into
 * the engine's own WQE rings.  Reading and checking a request, and where
 * it goes by the QP's state, are the core's (../admit.h); here a request
 * the queue took is built in its ring slot (one that failed a check, too:
 * it completes in order with its status).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <algorithm>
#include <cstring>

#include "../admit.h"
#include "../core.h"
#include "engine.h"
#include "../guest_abi.h"
#include "../wqe.h"
#include "../wr_opcode.h"

namespace vrdma::soft_roce {

void Engine::post_send(VrdmaCore &c, Qp &qp, const SendReq &r)
{
    QpEngine &e = eng(qp);

    /*
     * Built in its slot (past sq_tail: nobody reads it until sq_tail moves),
     * field by field: GCC turns a whole-struct copy or clear into a slow
     * rep movs / rep stos.
     */
    SendWqe &w = e.swqe(e.sq_tail);
    w.wr_id = r.wr_id;
    w.opcode = r.opcode;
    w.flags = r.flags;
    w.ex = r.ex;
    w.rkey = r.rkey;
    w.remote_addr = r.remote_addr;
    w.compare_add = r.compare_add;
    w.swap = r.swap;
    w.remote_qpn = r.remote_qpn;
    w.remote_qkey = r.remote_qkey;
    if (qp_is_ud(qp)) {
        std::memcpy(w.av.dgid.data(), r.av.dgid, 16);
        std::memcpy(w.av.dmac.data(), r.av.dmac, 6);
        w.av.gid_index = r.av.gid_index;
        w.av.hop_limit = r.av.hop_limit;
        w.av.tclass = r.av.tclass;
        w.av.flow_label = r.av.flow_label;
    } else {
        /* Two 8-byte stores, not a memset call per request. */
        std::memset(w.av.dgid.data(), 0, 16);
        std::memset(w.av.dmac.data(), 0, 6);
        w.av.gid_index = w.av.hop_limit = w.av.tclass = 0;
        w.av.flow_label = 0;
    }
    w.reg_mrn = r.reg_mrn;
    w.reg_key = r.reg_key;
    w.reg_access = r.reg_access;
    w.num_sge = r.num_sge; /* 0 if a check failed */
    w.length = r.length;
    w.state = WqeState::kPosted;
    /* A failed one completes with its status in its place (req.cc). */
    w.status = r.status;
    w.rd_atomic = w.started = false;
    w.first_psn = w.last_psn = w.offset = 0;
    static_assert(sizeof(SendWqe) == 128, "a new SendWqe field: set it here");

    Sge *sge = e.ssge(e.sq_tail);
    for (uint32_t i = 0; i < r.num_sge; i++) {
        sge[i] = r.sge.s[i];
    }
    e.sq_tail++;
    if (qp.state() == VIRTIO_RDMA_QPS_RTS) {
        schedule(c, qp);
    }
}

void Engine::post_recv(VrdmaCore &, Qp &qp, const RecvReq &r)
{
    QpEngine &e = eng(qp);
    RecvWqe &w = e.rwqe(e.rq_tail);
    Sge *sge = e.rsge(e.rq_tail);
    for (uint32_t i = 0; i < r.num_sge; i++) {
        sge[i] = r.sge.s[i];
    }
    w.wr_id = r.wr_id;
    w.num_sge = r.num_sge;
    w.length = r.length;
    e.rq_tail++;
}

uint32_t Engine::wq_room(const Qp &qp, bool is_rq) const
{
    const QpEngine &e = eng(qp);
    return is_rq ? e.rq_room() : e.sq_room();
}

} // namespace vrdma::soft_roce
