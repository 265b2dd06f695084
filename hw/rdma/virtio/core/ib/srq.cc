/*
 * virtio-rdma ibverbs backend: shared receive queues (../srq.h) as host
 * SRQs.
 *
 * Each guest SRQ is one host SRQ on the host PD of its PD, of its depth
 * and SGEs; its QPs' host QPs receive from it (objects.cc), so the host
 * device decides which QP takes which entry.  The ring turn hands every
 * announced entry here, header-checked (srqs_turn): its SGEs become the
 * host's with the MRs of the SRQ's PD, as an RQ entry's do with the QP's,
 * and it is posted with the guest's wr_id, which the host's CQE carries
 * back.  An entry that cannot be posted breaks the SRQ, since no QP owns
 * it yet to complete it with an error: an lkey of no MR of the PD, SGEs
 * longer than a message, a host SRQ that is full (more than max_wr
 * outstanding) or failed.
 *
 * The host SRQ counts its entries, so its limit is the guest's: armed at
 * creation and by MODIFY_SRQ, its event is the guest's SRQ_LIMIT.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <array>
#include <cerrno>

#include "../core.h"
#include "../wqe.h"
#include "state.h"

namespace vrdma::ib {

Status Backend::srq_created(VrdmaCore &, Srq &srq)
{
    ibv_srq_init_attr ia{};
    /* The SRQN rides in srq_context: host_srq_event finds the guest's SRQ. */
    ia.srq_context = reinterpret_cast<void *>(uintptr_t{srq.index});
    ia.attr.max_wr = srq.max_wr;
    ia.attr.max_sge = srq.max_sge;
    ia.attr.srq_limit = srq.limit;
    ibv_srq *h = verbs().create_srq(pds_[srq.pd_index], &ia);
    if (!h) {
        return host_refused(errno, "max_wr", srq.max_wr);
    }
    /* Verbs leave the limit at creation to the device: armed here. */
    if (srq.limit) {
        ibv_srq_attr a{};
        a.srq_limit = srq.limit;
        if (const int e = verbs().modify_srq(h, &a, IBV_SRQ_LIMIT)) {
            verbs().destroy_srq(h);
            return host_refused(e, "srq_limit", srq.limit);
        }
    }
    srqs_[srq.index] = h;
    return kOk;
}

/* An SRQ a QP still holds (a modify job's, after a reset): after the job. */
void Backend::entomb(ibv_srq *srq)
{
    if (verbs().destroy_srq(srq)) {
        tomb_srqs_.push_back(srq);
    }
}

void Backend::srq_destroyed(VrdmaCore &, Srq &srq)
{
    /* No QP receives from it (the core checked): its entries go too. */
    if (ibv_srq *h = host_srq(srq.index)) {
        entomb(h);
        srqs_[srq.index] = nullptr;
    }
}

void Backend::release_srqs()
{
    for (ibv_srq *&h : srqs_) {
        if (h) {
            entomb(h); /* every event was acked when it came */
            h = nullptr;
        }
    }
}

Status Backend::srq_limit_set(VrdmaCore &, Srq &srq, uint32_t limit)
{
    ibv_srq *h = host_srq(srq.index);
    if (!h) {
        return fail(VRDMA_ERR_BAD_HANDLE, "srqn", srq.index);
    }
    ibv_srq_attr a{};
    a.srq_limit = limit; /* 0 disarms the host's too */
    if (const int e = verbs().modify_srq(h, &a, IBV_SRQ_LIMIT)) {
        return host_refused(e, "srq_limit", limit);
    }
    return kOk;
}

uint32_t Backend::srq_room(const Srq &srq) const
{
    /* Everything rung goes to the host SRQ, of the guest's depth. */
    return host_srq(srq.index) ? UINT32_MAX : 0;
}

void Backend::post_srq_recv(VrdmaCore &c, Srq &srq, const RecvReq &r)
{
    ibv_srq *host = host_srq(srq.index);
    if (!host) {
        return; /* cannot happen: no room without one */
    }
    std::array<ibv_sge, VRDMA_MAX_SGE> sg;
    uint32_t bad_lkey = 0;
    if (host_sges(c, srq.pd_index, r.sge.s, r.num_sge, sg.data(),
                  &bad_lkey) != VIRTIO_RDMA_WC_SUCCESS) {
        srq_break(c, srq, "srq.entry.lkey", bad_lkey);
        return;
    }
    ibv_recv_wr wr{};
    wr.wr_id = r.wr_id;
    wr.sg_list = sg.data();
    wr.num_sge = static_cast<int>(r.num_sge);
    ibv_recv_wr *bad = nullptr;
    if (const int e = verbs().post_srq_recv(host, &wr, &bad)) {
        srq_break(c, srq, "host.post_srq_recv", static_cast<uint64_t>(e));
    }
}

/*
 * The host's event for one of our host SRQs (srq_context: the SRQN).  A
 * limit event the guest disarmed meanwhile (MODIFY_SRQ to 0) is dropped.
 */
void Backend::host_srq_event(VrdmaCore &c, ibv_srq *h, ibv_event_type type)
{
    const auto srqn =
        static_cast<uint32_t>(reinterpret_cast<uintptr_t>(h->srq_context));
    Srq *srq = host_srq(srqn) == h ? c.srqs.at(srqn) : nullptr;
    if (!srq || srq->broken) {
        return; /* a destroyed guest SRQ's (the graveyard's), or broken */
    }
    if (type == IBV_EVENT_SRQ_ERR) {
        srq_break(c, *srq, "host.srq_err", srqn);
    } else if (srq->limit) {
        srq->limit = 0; /* the host disarmed its own (IBA 10.2.9.3) */
        c.host.async_event(VIRTIO_RDMA_EVENT_SRQ_LIMIT, srqn);
    }
}

} // namespace vrdma::ib
