/*
 * virtio-rdma core: the backend seam -- what the control path and the C
 * entry points ask of the engine that moves the data.
 *
 * The core keeps the guest-visible objects (PDs, CQs, MRs, QPs, GIDs) and
 * checks every command; a backend executes what the objects stand for.
 * There are two: the soft-RoCE engine (soft_roce/), which builds and
 * parses RoCEv2 frames itself on the paired NIC's wire, and the ibverbs
 * backend (ib/), a proxy to a host RDMA device.
 *
 * A core has one backend for its life.  Its device-wide state is a
 * Backend, each QP's a BackendQp; both are std::variant, visited once per
 * call below (no virtual call on the data path).  A backend's state type
 * provides every hook as a member function of the same signature (see
 * soft_roce/backend.cc): a missing one does not compile.
 *
 * The hooks, and who calls them:
 *   pd_created      CREATE_PD, CREATE_CQ: after the checks, before the
 *   cq_created      guest sees the object; a backend on a host device
 *                   makes the host's and may refuse.
 *   pd_destroyed    DESTROY_PD, DESTROY_CQ: the object is unreferenced.
 *   cq_destroyed
 *   qp_created      CREATE_QP, after the checks; allocates the QP's
 *                   storage and sets its wire QPN (what peers address,
 *                   distinct from its queue index), or refuses.
 *   qp_modifying    MODIFY_QP, after the core's checks, before anything is
 *                   applied: a host device is asked here and may refuse.
 *   qp_modified     MODIFY_QP, after the attributes were stored.
 *   qp_destroyed    DESTROY_QP; outstanding work goes without completions.
 *   gid_adding      ADD_GID of a GID the allow-list (if any) lets
 *                   through, before the table changes: a backend on a
 *                   shared host device may refuse it.
 *   mr_registered   GET_DMA_MR, CREATE_MR, REG_USER_MR, after the checks:
 *                   the backend gives the MR its keys (lkey, rkey) -- a
 *                   host device owns them -- or refuses.
 *   mr_mapped       MAP_MR_SG gave a fast-registration MR new pages.
 *   mr_revoked      guest memory under the MR went away (its pages are
 *                   unmapped already).
 *   mr_deregistered DEREG_MR, before the MR is freed: a host device may
 *                   refuse (the MR then stays, and so does DEREG_MR's
 *                   answer: the error).
 *   post_send/recv  one work request from a QP's send / receive queue,
 *                   admitted and parsed by the core (admit.h: the ring
 *                   turn reads and checks it, and completes a flush or
 *                   an immediate error itself); a send that failed a
 *                   check comes with its status, to complete in order.
 *   wq_room         how many more a ring QP's queue takes now (rings.cc
 *                   takes no more from the guest's ring).
 *   srq_created     CREATE_SRQ_RING after the checks (a host SRQ), may
 *   srq_destroyed   refuse; DESTROY_SRQ, no QP receives from it.
 *   srq_limit_set   MODIFY_SRQ's limit, before the core stores it.
 *   srq_room        how many SRQ entries the backend takes now from the
 *   post_srq_recv   ring turn (srq.cc), each one checked and parsed
 *                   (read_recv); 0: it takes them by need instead
 *                   (srq_take -> admit_recv -> post_recv).
 *   frame_receive   a frame from the paired NIC (soft-RoCE only: another
 *                   backend takes none and @returns false).
 *   mad_receive     a MAD from the host's MAD link for the GSI QP
 *                   (ibverbs only: the soft engine's come as frames).
 *   run, timer      the host's run() call and timer expiry.
 *   qp_error_flush  the QP is now in ERR for an error of its own (the
 *                   core's qp_enter_error, qp.h, the one writer of that
 *                   state outside MODIFY_QP, called from the core and
 *                   from either backend): flush what the backend holds
 *                   of it (IBA 10.3.1), its host QP's too.  Never for
 *                   MODIFY_QP to ERR, which is qp_modified.
 *   reset           device reset, after the QPs were freed.
 *   attach, detach  after the core is made, before it is freed: a backend
 *                   that needs the host's event loop starts / stops using
 *                   it (the core's constructor cannot reach the host yet).
 *   stats           the data-path counters.
 * post_send/recv, wq_room, frame_receive, run and timer are per packet:
 * the C entry points (data_path.cc) and the ring turn (rings.cc) visit
 * them there, with no call in between.
 * Fast registration (REG_MR), LOCAL_INV and remote invalidation are work
 * requests and packets, not commands: a backend executes them and changes
 * the MR's state through MrTable's operations (mr.h), the one place that
 * says what each may do.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_BACKEND_H
#define HW_RDMA_VIRTIO_CORE_BACKEND_H

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <variant>

#include "errors.h"
#include "hw/rdma/virtio-rdma-core.h"
#include "soft_roce/state.h"
#ifndef VRDMA_IBVERBS
#error "VRDMA_IBVERBS comes with the core's meson dependency"
#endif
#if VRDMA_IBVERBS
#include "ib/state.h"
#endif

struct VrdmaCore;

namespace vrdma {

struct Qp;
struct Mr;
struct Cq;
struct GidEntry;

#if VRDMA_IBVERBS
using Backend = std::variant<soft_roce::Engine, ib::Backend>;
using BackendQp = std::variant<soft_roce::QpEngine, ib::QpState>;
#else
using Backend = std::variant<soft_roce::Engine>;
using BackendQp = std::variant<soft_roce::QpEngine>;
#endif

namespace backend {

/* Calls @f with the core's backend state (where VrdmaCore is complete). */
template <typename Core, typename F>
decltype(auto) with(Core &c, F &&f)
{
    return std::visit(std::forward<F>(f), c.backend);
}

Status pd_created(VrdmaCore &c, uint32_t index);
void pd_destroyed(VrdmaCore &c, uint32_t index);
Status cq_created(VrdmaCore &c, uint32_t index, Cq &cq);
void cq_destroyed(VrdmaCore &c, uint32_t index);
Status qp_created(VrdmaCore &c, Qp &qp);
Status qp_modifying(VrdmaCore &c, Qp &qp, uint32_t mask,
                    const virtio_rdma_qp_attr &attrs);
void qp_modified(VrdmaCore &c, Qp &qp, uint32_t old_state, uint32_t mask);
void qp_destroyed(VrdmaCore &c, Qp &qp);
Status gid_adding(VrdmaCore &c, uint32_t index, const GidEntry &gid);
Status mr_registered(VrdmaCore &c, uint32_t index, Mr &mr);
void mr_mapped(VrdmaCore &c, Mr &mr);
void mr_revoked(VrdmaCore &c, Mr &mr);
Status mr_deregistered(VrdmaCore &c, Mr &mr);
void qp_error_flush(VrdmaCore &c, Qp &qp);
void reset(VrdmaCore &c);
void detach(VrdmaCore &c);
const VrdmaDpStats &stats(const VrdmaCore &c);
VrdmaDpStats &stats(VrdmaCore &c);

} // namespace backend
} // namespace vrdma

#endif
